#include "prometheus/instant_query.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "http/client.h"
#include "kube/api_access.h"
#include "http_server/query.h"

namespace cincinnati::prometheus {
namespace {

constexpr size_t kMaxAnswerBytes = size_t{4} << 20;

Status Failed(std::string message) { return Status::Internal(std::move(message)); }

// The answer of an API error: {"status":"error","errorType":"bad_data","error":"..."}.
std::string ApiError(simdjson::dom::element doc) {
  std::string_view type, error;
  if (doc["errorType"].get_string().get(type)) type = "unknown";
  if (doc["error"].get_string().get(error)) error = "no error message";
  return fmt::format("{}: {}", type, error);
}

Result<Sample> ReadSample(simdjson::dom::element series, size_t index) {
  Sample sample;
  simdjson::dom::object metric;
  if (!series["metric"].get_object().get(metric)) {
    for (auto [name, value] : metric) {
      std::string_view text;
      if (value.get_string().get(text)) {
        return Failed(fmt::format("invalid PromQL result: data.result[{}].metric.{} is not a string", index, name));
      }
      sample.labels.emplace(std::string(name), std::string(text));
    }
  }
  std::string_view value;
  if (series["value"].at(1).get_string().get(value)) {
    return Failed(fmt::format("invalid PromQL result: data.result[{}] has no value", index));
  }
  sample.value = std::string(value);
  return sample;
}

}  // namespace

Result<std::vector<Sample>> ReadInstantVector(std::string_view body) {
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
  simdjson::dom::array series;
  if (doc["data"]["result"].get_array().get(series)) {
    return Failed("invalid PromQL result type is nominally vector, but fails Vector cast");
  }
  std::vector<Sample> out;
  size_t index = 0;
  for (simdjson::dom::element one : series) {
    CINCINNATI_ASSIGN_OR_RETURN(Sample sample, ReadSample(one, index++));
    out.push_back(std::move(sample));
  }
  return out;
}

Result<std::vector<Sample>> InstantQuery(const Settings& settings, std::string_view query) {
  std::string base = settings.url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string url = base + "/api/v1/query?" + http_server::EncodeQuery({{"query", std::string(query)}});

  http::RequestOptions options;
  options.timeout = settings.timeout;
  options.ca_path = settings.ca_path;
  options.max_body_bytes = kMaxAnswerBytes;
  options.max_body_name = "the PromQL answer limit";
  options.stop = settings.stop;
  if (!settings.token_file.empty()) {
    auto token = kube::ReadTokenFile(settings.token_file, "the Prometheus token file");
    if (!token.ok()) return Failed("creating PromQL round-tripper: " + token.status().message());
    options.headers.push_back("Authorization: Bearer " + *token);
  }
  http::Result answer = http::Request(url, options);
  if (!answer.error.empty()) return Failed("executing PromQL query: " + answer.error);
  // An API error comes as a JSON error document; anything else is the server's own failure.
  if (answer.status != 200 && answer.body.find("\"status\"") == std::string::npos) {
    return Failed(fmt::format("executing PromQL query: server returned HTTP status {}", answer.status));
  }
  return ReadInstantVector(answer.body);
}

}  // namespace cincinnati::prometheus
