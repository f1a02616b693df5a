// `cincinnati brakes list|confirm|clear`: what the automatic brakes hold, and
// a person's say over them, through the graph builder's (or serve's) brakes API.
#include <fmt/format.h>
#include <simdjson.h>

#include <boost/json.hpp>

#include <iostream>
#include <memory>

#include "cli/service_reports.h"
#include "core/json.h"
#include "http/client.h"
#include "kube/api_access.h"

namespace cincinnati::cli {
namespace {

struct BrakeArgs {
  std::string url = "http://127.0.0.1:8081/api/upgrades_info", token_file, from, to, by, note;
  bool json = false;
};

Result<std::string> Call(const BrakeArgs& a, const std::string& method, const std::string& path, const std::string& body) {
  http::RequestOptions options;
  options.method = method;
  options.body = body;
  options.timeout = std::chrono::seconds(10);
  if (method == "POST") options.headers.push_back("Content-Type: application/json");
  if (!a.token_file.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(std::string token, kube::ReadTokenFile(a.token_file, "--token-file"));
    options.headers.push_back("Authorization: Bearer " + token);
  }
  http::Result got = http::Request(a.url + path, options);
  if (!got.error.empty()) return Status::IoError(fmt::format("{}: {}", a.url + path, got.error));
  if (!got.ok()) {
    simdjson::dom::parser parser;
    std::string_view value;
    if (parser.parse(got.body)["value"].get_string().get(value)) value = got.body;
    if (got.status == 404 && value.empty()) {  // the route is not there: a service that takes no reports
      value = "no brakes here: this service takes no update reports (start it with --reports.state_dir, or "
              "--reports.postgres_file for replicas), or --url names another service";
    }
    return Status::IoError(fmt::format("{}: HTTP {}: {}", a.url + path, got.status, value));
  }
  return got.body;
}

// The table of `brakes list`; BY and NOTE (who confirmed or cleared, and why) when the
// answer has them (the admin token was given).
Status PrintBrakes(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::array brakes;
  if (parser.parse(json)["brakes"].get_array().get(brakes)) return Status::IoError("the answer is not a list of brakes");
  std::vector<std::vector<std::string>> rows = {{"FROM", "TO", "STATE", "FAILED", "CLUSTERS", "SINCE", "FILE", "BY", "NOTE"}};
  bool people = false;
  for (simdjson::dom::element b : brakes) {
    auto text = [&](const char* key, const char* absent = "") {
      std::string_view v;
      return b[key].get_string().get(v) ? std::string(absent) : std::string(v);
    };
    auto number = [&](const char* key) {
      int64_t v = 0;
      return b[key].get_int64().get(v) ? int64_t{0} : v;
    };
    people = people || !b["by"].error();
    rows.push_back({text("from"), text("to"), text("state"), std::to_string(number("failures")),
                    std::to_string(number("clusters")), text("since"), text("file", "-"), text("by"), text("note")});
  }
  const size_t columns = people ? rows[0].size() : rows[0].size() - 2;
  std::vector<size_t> width(columns, 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < columns; ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < columns; ++i) {
      const bool numeric = i == 3 || i == 4;
      line += numeric ? fmt::format("{:>{}}", r[i], width[i]) : fmt::format("{:<{}}", r[i], width[i]);
      if (i + 1 < columns) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << '\n';
  }
  return Status::OK();
}

void AddCommon(CLI::App* cmd, const std::shared_ptr<BrakeArgs>& a) {
  cmd->add_option("--url", a->url, "The graph builder's (or serve's) address with its path prefix")->capture_default_str()->type_name("URL");
  cmd->add_option("--token-file", a->token_file, "The brakes' admin token (brakes.admin_token_file)")->type_name("PATH");
}

void AddEdge(CLI::App* cmd, const std::shared_ptr<BrakeArgs>& a) {
  cmd->add_option("--from", a->from, "The edge's from-version")->required()->type_name("VERSION");
  cmd->add_option("--to", a->to, "The edge's to-version")->required()->type_name("VERSION");
  cmd->add_option("--by", a->by, "Who you are (kept in the audit trail and the file)")->required()->type_name("NAME");
  cmd->add_option("--note", a->note, "Why (a ticket, a fix)")->type_name("TEXT");
}

int Finish(const Result<std::string>& got, bool json) {
  if (!got.ok()) {
    std::cerr << "error: " << got.status().message() << '\n';
    return 1;
  }
  if (json) {
    std::cout << *got << '\n';
    return 0;
  }
  if (Status s = PrintBrakes(*got); !s.ok()) {
    std::cerr << "error: " << s.message() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace

void RegisterBrakeCommands(CLI::App& app, int& exit_code) {
  CLI::App* brakes = app.add_subcommand(
      "brakes", "The automatic brakes of update edges (graph builder with reports.state_dir): list, confirm, clear");
  brakes->require_subcommand(1);
  auto a = std::make_shared<BrakeArgs>();
  CLI::App* list = brakes->add_subcommand("list", "Every brake: its edge, state, counts, and the blocked-edges file to review");
  AddCommon(list, a);
  list->add_flag("--json", a->json, "The answer as JSON");
  list->callback([a, &exit_code] { exit_code = Finish(Call(*a, "GET", "/v1/brakes", ""), a->json); });
  for (const bool clear : {false, true}) {
    CLI::App* cmd = brakes->add_subcommand(clear ? "clear" : "confirm",
                                           clear ? "Lift a brake: the edge is offered again; only attempts started from now "
                                                   "on count toward a new brake"
                                                 : "Keep a brake until it is cleared (the file says who confirmed it)");
    AddCommon(cmd, a);
    AddEdge(cmd, a);
    cmd->callback([a, clear, &exit_code] {
      const std::string body =
          WriteJson(boost::json::object{{"from", a->from}, {"to", a->to}, {"by", a->by}, {"note", a->note}});
      exit_code = Finish(Call(*a, "POST", clear ? "/v1/brakes/clear" : "/v1/brakes/confirm", body), false);
    });
  }
}

}  // namespace cincinnati::cli
