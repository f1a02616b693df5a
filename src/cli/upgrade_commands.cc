// `cincinnati upgrade-operator` (the managed-upgrade operator's role for a fleet) and
// `cincinnati upgrades list|status|pause|resume` (its administrator's view).
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <set>
#include <thread>

#include "cli/commands.h"
#include "core/strings.h"
#include "env/file_system.h"
#include "http/client.h"
#include "kube/api_access.h"
#include "kube/status_document.h"
#include "operator/operator_api.h"
#include "operator/postgres_state.h"
#include "operator/scheduler.h"
#include "postgres/postgres_session.h"
#include "operator/upgrade_operator.h"
#include "http_server/http_server.h"

namespace cincinnati::cli {
namespace {

using kube::JsonValue;
using kube::JsonObject;
using kube::FindMember;
using kube::TextOf;
using kube::BoolOf;
using kube::MembersOf;
using kube::ItemsOf;

struct OperatorArgs {
  std::string config, fleet, state_dir, postgres, replica, configs, address = "127.0.0.1", token_file, ports_file, testing_now;
  int port = 8383;
  double interval_seconds = 60, time_scale = 1;
  int workers = 32, call_threads = 64, agent_timeout_seconds = 10;
  int verbosity = 0;
};

Status RunOperator(const OperatorArgs& a) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("upgrade-operator"));
  spdlog::set_level(a.verbosity <= 0 ? spdlog::level::info : spdlog::level::debug);
  upgrade::OperatorOptions options;
  options.config_path = a.config;
  options.fleet_path = a.fleet;
  options.state_dir = a.state_dir;
  options.postgres_url = a.postgres;
  options.replica_name = a.replica;
  options.configs_dir = a.configs;
  if (!a.configs.empty()) {
    // Checked once here: a mistyped directory would otherwise be an error at every pass.
    const env::FileInfo configs = env::DefaultFileSystem().Stat(a.configs);
    if (!configs.is_directory()) {
      return Status::InvalidArgument(fmt::format("--configs: {} is not a directory{}", a.configs,
                                                 configs.exists() ? "" : " (it does not exist)"));
    }
  }
  options.workers = a.workers;
  options.call_threads = a.call_threads;
  options.agent_timeout = std::chrono::seconds(a.agent_timeout_seconds);
  if (a.interval_seconds < 0.01) return Status::InvalidArgument("--interval: must be at least 0.01 seconds");
  options.interval = std::chrono::seconds(std::max<int64_t>(1, static_cast<int64_t>(a.interval_seconds)));
  if (a.time_scale <= 0) return Status::InvalidArgument("--testing.time-scale: must be greater than 0");
  options.time_scale = a.time_scale;
  if (!a.testing_now.empty()) {
    auto now = upgrade::ParseTime(a.testing_now);
    if (!now.ok()) return Status::InvalidArgument(fmt::format("--testing.now {}: not an RFC 3339 time", a.testing_now));
    options.testing_now = *now;
  }
  std::string token;
  if (!a.token_file.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(token, kube::ReadTokenFile(a.token_file, "--token-file"));
  }
  // Anyone who reaches the API can pause or resume the fleet's rollouts.
  CINCINNATI_RETURN_IF_ERROR(kube::RequireTokenOffLoopback("--listen", a.address, !token.empty()));
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<upgrade::UpgradeOperator> op, upgrade::UpgradeOperator::Open(options));
  http_server::ServerLimits limits;
  limits.threads = 2;
  http_server::HttpServer http(limits);
  http.SetErrorResponse(kube::ServerErrorResponse);
  http.CatchSignals();
  CINCINNATI_ASSIGN_OR_RETURN(uint16_t port, http.Listen(a.address, static_cast<uint16_t>(a.port), [&](const http_server::Request& r) {
                                return upgrade::HandleOperatorApi(*op, r, token);
                              }));
  if (!a.ports_file.empty()) {
    CINCINNATI_RETURN_IF_ERROR(env::WriteFileDurably(a.ports_file, fmt::format("main={}\nstatus={}\n", port, port)));
  }
  std::jthread loop([&](std::stop_token stop) { op->Run(stop); });
  http.Start();
  std::cerr << fmt::format("cincinnati upgrade-operator: API and metrics on http://{}{}, state in {}\n",
                           kube::HostPort(a.address, port), upgrade::kConfigsPath,
                           a.postgres.empty() ? a.state_dir : postgres::RedactedConninfo(a.postgres));
  http.WaitForSignal();
  loop.request_stop();
  op->Wake();
  return Status::OK();
}

// ---- the administrator's commands ----

struct ClientArgs {
  std::string url = "http://127.0.0.1:8383", token_file, cluster, reason;
  bool json = false;
};

Result<JsonValue> Call(const ClientArgs& a, const std::string& method, const std::string& path, const std::string& body = "") {
  http::RequestOptions options;
  options.method = method;
  options.body = body;
  options.timeout = std::chrono::seconds(10);
  if (method != "GET") options.headers.push_back("Content-Type: application/json");
  if (!a.token_file.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(std::string token, kube::ReadTokenFile(a.token_file, "--token-file"));
    options.headers.push_back("Authorization: Bearer " + token);
  }
  http::Result got = http::Request(a.url + path, options);
  if (!got.error.empty()) {
    return Status::IoError(fmt::format("cannot reach the upgrade operator at {}: {}; start one with `cincinnati "
                                       "upgrade-operator` or pass --operator URL",
                                       a.url, got.error));
  }
  auto json = kube::ParseJson(got.body);
  if (!got.ok()) {
    const JsonValue* message = json.ok() ? FindMember(*json, "message") : nullptr;
    return Status::IoError(fmt::format("{}: HTTP {}{}", a.url + path, got.status, message ? ": " + TextOf(*message) : ""));
  }
  if (!json.ok()) return Status::IoError(fmt::format("{}: the answer is not JSON: {}", a.url + path, json.status().message()));
  return json;
}

std::string Text(const JsonValue& v, std::initializer_list<const char*> path) {
  const JsonValue* at = &v;
  for (const char* key : path) {
    at = FindMember(*at, key);
    if (!at) return "";
  }
  return at->is_string() ? TextOf(*at) : "";
}

const JsonValue* NewestHistory(const JsonValue& config) {
  const JsonValue* status = FindMember(config, "status");
  const JsonValue* history = status ? FindMember(*status, "history") : nullptr;
  return history && history->is_array() && !ItemsOf(*history).empty() ? &ItemsOf(*history)[0] : nullptr;
}

// The table of `upgrades list`. MESSAGE says what the cluster waits for when its last pass
// said more than its newest step's condition (a paused fleet, a failed validation, an
// agent that cannot be read, a file that cannot be read); clusters whose UpgradeConfig
// cannot be read at all are listed too, as Unreadable, and clusters an UpgradeConfig
// names that the fleet file lacks, as NotInFleet. A paused fleet is said first.
void PrintList(const JsonValue& list, const JsonValue& fleet) {
  if (const JsonValue* paused = FindMember(fleet, "paused"); paused && BoolOf(*paused)) {
    std::cout << fmt::format("The fleet is paused: {}. Upgrades that have not started wait (`cincinnati upgrades resume`).\n\n",
                             Text(fleet, {"reason"}).empty() ? "no reason given" : Text(fleet, {"reason"}));
  }
  std::vector<std::vector<std::string>> rows = {{"NAME", "DESIRED_VERSION", "UPGRADE_AT", "PHASE", "STAGE", "STATUS", "REASON", "MESSAGE"}};
  std::set<std::string> listed;
  for (const auto& item : ItemsOf(*FindMember(list, "items"))) {
    std::vector<std::string> row = {Text(item, {"metadata", "labels", "cluster"}), Text(item, {"spec", "desired", "version"}),
                                    Text(item, {"spec", "upgradeAt"})};
    listed.insert(row[0]);
    const JsonValue* h = NewestHistory(item);
    const JsonValue* conditions = h ? FindMember(*h, "conditions") : nullptr;
    const JsonValue* c = conditions && conditions->is_array() && !ItemsOf(*conditions).empty() ? &ItemsOf(*conditions)[0] : nullptr;
    row.push_back(h ? Text(*h, {"phase"}) : "");
    for (const char* key : {"type", "status", "reason", "message"}) row.push_back(c ? Text(*c, {key}) : "");
    // A note that only names the step adds nothing to the step's own message.
    const std::string waiting = Text(item, {"metadata", "annotations", "upgrade.cincinnati.openshift.io/waiting-for"});
    if (!waiting.empty() && waiting != row[4]) row.back() = waiting;
    rows.push_back(std::move(row));
  }
  if (const JsonValue* unreadable = FindMember(fleet, "unreadableConfigs"); unreadable && unreadable->is_object()) {
    for (const auto& [cluster, why] : MembersOf(*unreadable)) {
      if (!listed.count(cluster) && why.is_string()) rows.push_back({cluster, "", "", "Unreadable", "", "", "", TextOf(why)});
    }
  }
  if (const JsonValue* unknown = FindMember(fleet, "unknownClusters"); unknown && unknown->is_array()) {
    for (const auto& cluster : ItemsOf(*unknown)) {
      if (!cluster.is_string() || listed.count(TextOf(cluster))) continue;
      rows.push_back({TextOf(cluster), "", "", "NotInFleet", "", "", "",
                      "an UpgradeConfig names this cluster, but the fleet file does not list it: add it there (name, agent)"});
    }
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) line += i + 1 == r.size() ? r[i] : fmt::format("{:<{}}   ", r[i], width[i]);
    std::cout << TrimWhitespace(line) << '\n';
  }
}

void PrintStatus(const JsonValue& config) {
  std::cout << fmt::format("Cluster:      {}\nDesired:      {}{}\nUpgrade at:   {}\nType:         {}\n",
                           Text(config, {"metadata", "labels", "cluster"}), Text(config, {"spec", "desired", "version"}),
                           Text(config, {"spec", "desired", "channel"}).empty() ? "" : " (channel " + Text(config, {"spec", "desired", "channel"}) + ")",
                           Text(config, {"spec", "upgradeAt"}), Text(config, {"spec", "type"}));
  if (std::string waiting = Text(config, {"metadata", "annotations", "upgrade.cincinnati.openshift.io/waiting-for"}); !waiting.empty()) {
    std::cout << "Waiting for:  " << waiting << '\n';
  }
  const JsonValue* history = FindMember(config, "status") ? FindMember(*FindMember(config, "status"), "history") : nullptr;
  if (!history || !history->is_array()) return;
  for (const auto& h : ItemsOf(*history)) {
    std::cout << fmt::format("\nHistory {} (from {}): {}", Text(h, {"version"}), Text(h, {"precedingVersion"}), Text(h, {"phase"}));
    if (!Text(h, {"startTime"}).empty()) std::cout << ", started " << Text(h, {"startTime"});
    if (!Text(h, {"completeTime"}).empty()) std::cout << ", completed " << Text(h, {"completeTime"});
    std::cout << '\n';
    const JsonValue* conditions = FindMember(h, "conditions");
    if (!conditions || !conditions->is_array()) continue;
    for (auto it = ItemsOf(*conditions).rbegin(); it != ItemsOf(*conditions).rend(); ++it) {  // in step order
      std::cout << fmt::format("  {:<40} {:<6} {}\n", Text(*it, {"type"}), Text(*it, {"status"}), Text(*it, {"message"}));
    }
  }
}

void AddClientOptions(CLI::App* cmd, const std::shared_ptr<ClientArgs>& a) {
  cmd->add_option("--operator", a->url, "The upgrade operator's API")->type_name("URL")->capture_default_str();
  cmd->add_option("--token-file", a->token_file, "Bearer token for the operator's API")->type_name("PATH");
}

int Report(const Result<JsonValue>& got, const std::function<void(const JsonValue&)>& print) {
  if (!got.ok()) {
    std::cerr << "error: " << got.status().message() << '\n';
    return 1;
  }
  print(*got);
  return 0;
}

void RegisterUpgradesClient(CLI::App& app, int& exit_code) {
  CLI::App* upgrades = app.add_subcommand("upgrades", "Look at and control the upgrade operator's UpgradeConfigs (`upgrade-operator`)");
  upgrades->require_subcommand(1);
  auto a = std::make_shared<ClientArgs>();

  CLI::App* list = upgrades->add_subcommand("list", "Every cluster's UpgradeConfig: desired version, phase and latest step");
  AddClientOptions(list, a);
  list->add_flag("--json", a->json, "The UpgradeConfigList as JSON");
  list->callback([a, &exit_code] {
    exit_code = Report(Call(*a, "GET", std::string(upgrade::kConfigsPath)), [&](const JsonValue& v) {
      if (a->json) {
        std::cout << kube::WriteJson(v, 2) << '\n';
        return;
      }
      // The fleet's pause and unreadable configs; an operator that cannot say still lists.
      Result<JsonValue> fleet = Call(*a, "GET", std::string(upgrade::kFleetPath));
      if (!fleet.ok()) std::cerr << "warning: the fleet's state: " << fleet.status().message() << '\n';
      PrintList(v, fleet.ok() ? *fleet : JsonValue(JsonObject()));
    });
  });

  CLI::App* status = upgrades->add_subcommand("status", "One cluster's UpgradeConfig: every step's condition and the history");
  AddClientOptions(status, a);
  status->add_option("cluster", a->cluster, "Cluster name (as in the fleet file)")->required();
  status->add_flag("--json", a->json, "The UpgradeConfig as JSON");
  status->callback([a, &exit_code] {
    exit_code = Report(Call(*a, "GET", std::string(upgrade::kConfigsPath) + "/" + a->cluster), [&](const JsonValue& v) {
      if (a->json) {
        std::cout << kube::WriteJson(v, 2) << '\n';
      } else {
        PrintStatus(v);
      }
    });
  });

  // The fleet after the command, as a state rather than a negation ("not paused" after
  // a resume read like an error).
  auto print_fleet = [](const JsonValue& v) {
    std::cout << (FindMember(v, "paused") && BoolOf(*FindMember(v, "paused")) ? "paused: " + Text(v, {"reason"})
                                                                      : std::string("running: upgrades start when they are due"))
              << '\n';
  };
  CLI::App* pause = upgrades->add_subcommand("pause", "Hold every upgrade that has not started yet (running ones go on)");
  AddClientOptions(pause, a);
  pause->add_option("--reason", a->reason, "Why (shown in every held cluster's status)");
  pause->callback([a, &exit_code, print_fleet] {
    JsonValue body = JsonObject({{"reason", JsonValue(a->reason)}});
    exit_code = Report(Call(*a, "POST", std::string(upgrade::kFleetPath) + "/pause", kube::WriteJson(body)), print_fleet);
  });
  CLI::App* resume = upgrades->add_subcommand("resume", "Let held upgrades start again (failures so far are acknowledged)");
  AddClientOptions(resume, a);
  resume->callback([a, &exit_code, print_fleet] {
    exit_code = Report(Call(*a, "POST", std::string(upgrade::kFleetPath) + "/resume", "{}"), print_fleet);
  });
}

}  // namespace

void RegisterUpgradeCommands(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<OperatorArgs>();
  CLI::App* cmd = app.add_subcommand(
      "upgrade-operator",
      "Run the upgrade operator (the managed-upgrade operator's role) for a fleet: it applies each cluster's "
      "UpgradeConfig at its upgradeAt through ordered, idempotent steps (health checks against Prometheus, "
      "maintenance windows in Alertmanager, the agent's update, notifications), with fleet-wide caps and waves");
  cmd->add_option("--fleet", a->fleet, "The clusters: a YAML file with clusters: [{name, agent, tokenFile, labels}]")
      ->type_name("FILE")
      ->required();
  cmd->add_option("--configs", a->configs, "Directory of UpgradeConfig YAML files, one per cluster (the LOCAL policy source)")
      ->type_name("DIR");
  cmd->add_option("--config", a->config, "The operator's settings (the reference's config.yaml keys, plus ours)")->type_name("FILE");
  auto* state_dir = cmd->add_option("--state-dir", a->state_dir,
                                    "Directory of the operator's state (state.db; kept across restarts). A second operator on "
                                    "the same directory stands by until the first one stops")
                         ->type_name("PATH");
  auto* postgres = cmd->add_option("--state.postgres", a->postgres,
                                   "Keep the state in PostgreSQL instead (a libpq URL, e.g. postgresql://operator@db/fleet; "
                                   "the password in ~/.pgpass or PGPASSWORD): replicas on one database elect a leader, the "
                                   "others serve the read API and take over within seconds when it goes")
                       ->type_name("URL");
  state_dir->excludes(postgres);
  postgres->excludes(state_dir);
  cmd->add_option("--replica-name", a->replica, "This replica's name in logs and in a standby's answers (default: host:pid)")
      ->type_name("NAME");
  cmd->add_option("--listen", a->address, "API and metrics address: an IP address or localhost (non-loopback needs --token-file)")->type_name("ADDRESS")->capture_default_str();
  cmd->add_option("--port", a->port, "API and metrics port (0: any free port)")->type_name("PORT")->capture_default_str();
  cmd->add_option("--token-file", a->token_file, "Bearer token every API request must carry")->type_name("PATH");
  cmd->add_option("--interval", a->interval_seconds, "Seconds (operator time) between passes of an upgrade in progress")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd->add_option("--workers", a->workers, "Clusters reconciled at once (each pass waits only on its cluster's agent)")
      ->type_name("N")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--call-threads", a->call_threads,
                  "Hooks, dependency probes, webhooks, Prometheus and Alertmanager calls running at once, outside the passes")
      ->type_name("N")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--agent-timeout", a->agent_timeout_seconds, "Seconds one call to a cluster's agent may take")
      ->type_name("SECONDS")
      ->check(CLI::Range(1, 600))
      ->capture_default_str();
  cmd->add_option("--testing.now", a->testing_now, "Start the operator's clock at this time (RFC 3339)")->type_name("TIME");
  cmd->add_option("--testing.time-scale", a->time_scale, "Operator seconds per real second (e.g. 60: an hour a minute)")
      ->type_name("FACTOR")
      ->capture_default_str();
  cmd->add_option("--testing.ports_file", a->ports_file, "Write the bound port to this file (for tests)")->type_name("PATH");
  cmd->add_flag("-v,--verbose", a->verbosity, "More logging");
  cmd->callback([a, &exit_code] {
    Status s = a->state_dir.empty() && a->postgres.empty()
                   ? Status::InvalidArgument("--state-dir DIR or --state.postgres URL is required (where the operator keeps its state)")
                   : RunOperator(*a);
    if (!s.ok()) {
      std::cerr << "error: " << s.message() << '\n';
      exit_code = 1;
    }
  });
  RegisterUpgradesClient(app, exit_code);
}

}  // namespace cincinnati::cli
