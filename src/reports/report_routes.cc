#include "reports/report_routes.h"

#include <fmt/format.h>

#include <algorithm>
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include "core/date_time.h"
#include "core/error_document.h"
#include "core/json.h"
#include "kube/api_access.h"
#include "kube/json_value.h"
#include "reports/report_batches.h"

namespace cincinnati::server {
namespace {
using kube::FindMember;
using kube::TextOf;

using http_server::Response;

constexpr size_t kMaxBatch = 256;

// Text without control characters (a line feed only where `lines`) and at most `max` bytes.
bool PlainText(const std::string& text, bool lines, size_t max) {
  return text.size() <= max && std::none_of(text.begin(), text.end(), [&](char c) {
           const auto u = static_cast<unsigned char>(c);
           return (u < 0x20 && !(lines && c == '\n')) || u == 0x7F;
         });
}

// A report's entry in a batch's answer: "accepted", "duplicate" or "refused: <why>".
std::string BatchResult(const reports::ReportVerdict& verdict) {
  switch (verdict.kind) {
    case reports::ReportVerdict::Kind::kDuplicate: return "duplicate";
    case reports::ReportVerdict::Kind::kRefused: {
      std::string out = "refused: ";
      out += verdict.why;
      return out;
    }
    case reports::ReportVerdict::Kind::kRecorded: break;
  }
  return "accepted";
}

Response Error(int status, const std::string& kind, const std::string& message) {
  return Response::Text(status, ErrorDocument{kind, message, status}.ToJson(), "application/json");
}

}  // namespace

std::shared_ptr<ReportSink> MakeBoardSink(reports::BrakeBoard& board) {
  return std::make_shared<BatchingSink>(
      [&board](const std::vector<UpdateReport>& batch, std::stop_token) { return board.Submit(batch); },
      "too many reports wait to be recorded");
}

ReportRoutes::ReportRoutes(reports::BrakeBoard& board, ReportRoutesOptions options)
    : board_(board), options_(std::move(options)), writer_(options_.batches ? MakeBoardSink(board) : nullptr) {}

std::optional<Response> ReportRoutes::HandleBrakes(const http_server::Request& request) {
  const std::string brakes = options_.path_prefix + "/v1/brakes";
  if (request.path == brakes + "/clear") return Change(request, true);
  if (request.path == brakes + "/confirm") return Change(request, false);
  if (request.path != brakes && !request.path.starts_with(brakes + "/")) return std::nullopt;
  if (request.method != "GET" && request.method != "HEAD") return Response::Empty(405);
  return List(request, request.path == brakes ? "" : request.path.substr(brakes.size() + 1));
}

bool ReportRoutes::HandleBatch(const http_server::Request& request, const std::function<void(Response)>& respond) {
  if (!writer_ || request.path != options_.path_prefix + "/v1/reports") return false;
  if (request.method != "POST") return respond(Response::Empty(405)), true;
  if (options_.batch_token.empty() || !kube::BearerTokenMatches(request.Header("Authorization"), options_.batch_token)) {
    return respond(Error(401, "unauthorized", "a policy engine's batch needs the graph builder's reports token")), true;
  }
  simdjson::dom::parser parser;
  simdjson::dom::array items;
  if (auto err = parser.parse(request.body).get_array().get(items)) {
    return respond(Error(400, "invalid_report", fmt::format("the batch must be a JSON array: {}", simdjson::error_message(err)))), true;
  }
  if (items.size() > kMaxBatch) return respond(Error(413, "too_large", fmt::format("a batch has at most {} reports", kMaxBatch))), true;
  std::vector<UpdateReport> batch;
  for (simdjson::dom::element item : items) {
    auto report = DecodeUpdateReport(simdjson::minify(item));
    if (!report.ok()) {
      return respond(Error(400, "invalid_report", fmt::format("report {}: {}", batch.size(), report.status().message()))), true;
    }
    batch.push_back(std::move(report).value());
  }
  if (batch.empty()) return respond(Response::Text(200, R"({"results":[]})", "application/json")), true;
  // Answered once every report of the batch is recorded (the writer batches them again).
  struct Pending {
    std::mutex mu;
    std::vector<std::string> results;
    size_t left;
    std::string error;
  };
  auto pending = std::make_shared<Pending>();
  pending->results.resize(batch.size());
  pending->left = batch.size();
  for (size_t i = 0; i < batch.size(); ++i) {
    writer_->Submit(std::move(batch[i]), [pending, i, respond](Result<reports::ReportVerdict> verdict) {
      std::unique_lock lock(pending->mu);
      if (!verdict.ok()) pending->error = verdict.status().message();
      if (verdict.ok()) pending->results[i] = BatchResult(*verdict);
      if (--pending->left > 0) return;
      lock.unlock();
      if (!pending->error.empty()) return respond(Error(503, "report_not_recorded", pending->error));
      respond(Response::Text(200, WriteJson(boost::json::object{{"results", boost::json::value_from(pending->results)}}),
                             "application/json"));
    });
  }
  return true;
}

Response ReportRoutes::List(const http_server::Request& request, const std::string& edge) {
  const bool with_people = !options_.admin_token.empty() && kube::BearerTokenMatches(request.Header("Authorization"), options_.admin_token);
  std::vector<reports::BrakeRecord> brakes = board_.List();
  if (!edge.empty()) {
    std::erase_if(brakes, [&](const reports::BrakeRecord& b) { return b.from + "-" + b.to != edge; });
    if (brakes.empty()) return Error(404, "not_found", fmt::format("no brake on {}", edge));
  }
  return Response::Text(200, BrakesJson(brakes, with_people), "application/json");
}

Response ReportRoutes::Change(const http_server::Request& request, bool clear) {
  if (request.method != "POST") return Response::Empty(405);
  if (options_.admin_token.empty()) {
    return Error(403, "forbidden", "brakes are confirmed and cleared with an admin token: set brakes.admin_token_file");
  }
  if (!kube::BearerTokenMatches(request.Header("Authorization"), options_.admin_token)) {
    // Whether a token came at all is the caller's own knowledge; which token is right is not said.
    const std::string* given = request.Header("Authorization");
    return Error(401, "unauthorized",
                 given && !given->empty() ? "the token given is not the brakes' admin token (brakes.admin_token_file)"
                                          : "the brakes' admin token is required: none was given (--token-file)");
  }
  if (!kube::IsJsonRequest(request.Header("Content-Type"), {"application/json"})) {
    return Error(415, "not_json", "POST with Content-Type: application/json");
  }
  auto body = kube::ParseJson(request.body);
  auto text = [&](const char* key) -> std::optional<std::string> {
    const kube::JsonValue* v = body.ok() ? FindMember(*body, key) : nullptr;
    if (!v) return std::string();
    if (!v->is_string()) return std::nullopt;
    return TextOf(*v);
  };
  auto from = text("from"), to = text("to"), by = text("by"), note = text("note");
  if (!body.ok() || !from || !to || !by || !note || from->empty() || to->empty()) {
    return Error(400, "invalid_request", R"(the body must be {"from": "4.13.1", "to": "4.13.2", "by": "who", "note": "why"})");
  }
  // They are written into the brake's file for graph-data: no character may change its YAML.
  if (!PlainText(*by, false, 256) || !PlainText(*note, true, 4096)) {
    return Error(400, "invalid_request",
                 "by (at most 256 bytes, one line) and note (at most 4096 bytes) are text without control characters");
  }
  Status s = clear ? board_.Clear(*from, *to, *by, *note) : board_.Confirm(*from, *to, *by, *note);
  if (s.code() == Status::Code::kNotFound) return Error(404, "not_found", s.message());
  if (s.code() == Status::Code::kInvalidArgument) return Error(400, "invalid_request", s.message());
  if (!s.ok()) return Error(500, "internal_error", s.message());
  return List(request, "");
}

std::string BrakesJson(const std::vector<reports::BrakeRecord>& brakes, bool with_people) {
  boost::json::array list;
  for (const reports::BrakeRecord& b : brakes) {
    boost::json::object brake{{"from", b.from},
                              {"to", b.to},
                              {"state", reports::BrakeStateName(b.state)},
                              {"since", FormatUnixSeconds(b.since)},
                              {"firstFailure", FormatUnixSeconds(b.first_failure)},
                              {"clusters", b.counts.clusters},
                              {"failures", b.counts.failures},
                              {"lowerBound", b.lower_bound},
                              {"risk", reports::BrakeRiskName(b.from, b.to)},
                              {"message", b.message}};
    // A cleared brake's file is gone: naming it would send a reader to nothing.
    if (reports::InForceState(b.state)) brake["file"] = reports::BrakeFileName(b.from, b.to);
    if (with_people) {
      brake["by"] = b.by;
      brake["note"] = b.note;
    }
    list.push_back(std::move(brake));
  }
  return WriteJsonFixed(boost::json::object{{"brakes", std::move(list)}}, 4);  // the bound, as it has always been given
}

}  // namespace cincinnati::server
