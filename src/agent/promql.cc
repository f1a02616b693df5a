#include "agent/promql.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <cstdlib>

#include "core/strings.h"
#include "env/file_system.h"
#include "http/client.h"
#include "server/query.h"

namespace cincinnati::agent {
namespace {

Status Failed(std::string message) { return Status::Internal(std::move(message)); }

// The answer of an API error: {"status":"error","errorType":"bad_data","error":"..."}.
std::string ApiError(simdjson::dom::element doc) {
  std::string_view type, error;
  if (doc["errorType"].get_string().get(type)) type = "unknown";
  if (doc["error"].get_string().get(error)) error = "no error message";
  return fmt::format("{}: {}", type, error);
}

}  // namespace

Result<bool> ReadInstantQueryAnswer(std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body.data(), body.size());
  simdjson::dom::element doc;
  if (auto err = parser.parse(padded).get(doc)) {
    return Failed(fmt::format("executing PromQL query: invalid answer: {}", simdjson::error_message(err)));
  }
  std::string_view status;
  if (doc["status"].get_string().get(status)) return Failed("executing PromQL query: answer without a status");
  if (status != "success") return Failed("executing PromQL query: " + ApiError(doc));
  std::string_view type;
  if (doc["data"]["resultType"].get_string().get(type)) {
    return Failed("executing PromQL query: answer without data.resultType");
  }
  if (type != "vector") return Failed(fmt::format("invalid PromQL result type is {}, not vector", type));
  simdjson::dom::array samples;
  if (doc["data"]["result"].get_array().get(samples)) {
    return Failed("invalid PromQL result type is nominally vector, but fails Vector cast");
  }
  if (samples.size() != 1) {
    return Failed(fmt::format("invalid PromQL result length must be one, but is {}", samples.size()));
  }
  std::string_view value;
  if (samples.at(0)["value"].at(1).get_string().get(value)) {
    return Failed("invalid PromQL result: the sample has no value");
  }
  std::string text(value);
  char* end = nullptr;
  double number = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && *end == '\0') {
    if (number == 0) return false;
    if (number == 1) return true;
  }
  return Failed(fmt::format("invalid PromQL result (must be 0 or 1): {}", text));
}

Result<bool> PrometheusEvaluator::Match(const MatchingRule& rule) {
  if (!rule.promql || rule.promql->empty()) {
    return Failed("the 'promql.promql' query string must be non-empty for 'type: PromQL' conditions");
  }
  std::string base = settings_.url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string url = base + "/api/v1/query?" + server::EncodeQuery({{"query", *rule.promql}});

  http::RequestOptions options;
  options.timeout = settings_.timeout;
  options.ca_path = settings_.ca_path;
  options.max_body_bytes = size_t{4} << 20;
  options.max_body_name = "the PromQL answer limit";
  options.stop = settings_.stop;
  if (!settings_.token_file.empty()) {
    auto token = env::ReadFile(settings_.token_file, 64 * 1024);
    if (!token.ok()) return Failed(fmt::format("creating PromQL round-tripper: cannot read token file: {}", token.status().message()));
    options.headers.push_back("Authorization: Bearer " + std::string(TrimWhitespace(*token)));
  }
  http::Result answer = http::Request(url, options);
  if (!answer.error.empty()) return Failed("executing PromQL query: " + answer.error);
  // Prometheus answers API errors (a bad query: 400, 422; a timeout: 503) with a JSON
  // error document; anything else is the server's own failure.
  if (answer.status != 200 && answer.body.find("\"status\"") == std::string::npos) {
    return Failed(fmt::format("executing PromQL query: server returned HTTP status {}", answer.status));
  }
  return ReadInstantQueryAnswer(answer.body);
}

}  // namespace cincinnati::agent
