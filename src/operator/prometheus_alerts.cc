#include "operator/prometheus_alerts.h"

#include <fmt/format.h>

#include "agent/json_value.h"
#include "operator/http_call.h"
#include "server/query.h"

namespace cincinnati::upgrade {

using agent::JsonValue;

Result<std::vector<FiringAlert>> ReadFiringAlerts(std::string_view body) {
  auto doc = agent::ParseJson(body);
  if (!doc.ok()) return Status::InvalidArgument("the ALERTS answer is not JSON: " + doc.status().message());
  if (!doc->is_object()) return Status::InvalidArgument("the ALERTS answer is not an object");
  const JsonValue* status = doc->Find("status");
  if (!status || !status->is_string()) return Status::InvalidArgument("the ALERTS answer has no status");
  if (status->text() != "success") {
    const JsonValue* type = doc->Find("errorType");
    const JsonValue* error = doc->Find("error");
    return Status::IoError(fmt::format("the ALERTS query failed: {}: {}", type && type->is_string() ? type->text() : "unknown",
                                       error && error->is_string() ? error->text() : "no error message"));
  }
  const JsonValue* data = doc->Find("data");
  const JsonValue* type = data && data->is_object() ? data->Find("resultType") : nullptr;
  if (!type || !type->is_string() || type->text() != "vector") {
    return Status::InvalidArgument(fmt::format("the ALERTS answer's data.resultType is {}, not vector",
                                               type && type->is_string() ? type->text() : "missing"));
  }
  const JsonValue* result = data->Find("result");
  if (!result || !result->is_array()) return Status::InvalidArgument("the ALERTS answer's data.result is not a list");
  std::vector<FiringAlert> out;
  for (size_t i = 0; i < result->items().size(); ++i) {
    const JsonValue& series = result->items()[i];
    const JsonValue* metric = series.is_object() ? series.Find("metric") : nullptr;
    if (!metric || !metric->is_object()) return Status::InvalidArgument(fmt::format("data.result[{}].metric: not an object", i));
    FiringAlert alert;
    for (const auto& [name, value] : metric->members()) {
      if (!value.is_string()) return Status::InvalidArgument(fmt::format("data.result[{}].metric.{}: not a string", i, name));
      alert.labels[name] = value.text();
    }
    alert.name = alert.labels["alertname"];
    alert.severity = alert.labels["severity"];
    alert.namespace_ = alert.labels["namespace"];
    if (alert.name.empty()) return Status::InvalidArgument(fmt::format("data.result[{}].metric: no alertname", i));
    out.push_back(std::move(alert));
  }
  return out;
}

Result<std::vector<FiringAlert>> PrometheusAlerts::FiringCriticalAlerts() {
  std::string base = settings_.url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string url =
      base + "/api/v1/query?" + server::EncodeQuery({{"query", R"(ALERTS{alertstate="firing",severity="critical"})"}});
  HttpPeer peer{settings_.token_file, settings_.ca_path, settings_.timeout, {}};
  auto body = CallPeer(peer, "GET", url);
  if (!body.ok()) {
    // Prometheus answers a bad query with an error document and a 4xx: still readable.
    return body.status();
  }
  auto alerts = ReadFiringAlerts(*body);
  if (!alerts.ok()) return alerts.status().WithContext(url);
  return alerts;
}

}  // namespace cincinnati::upgrade
