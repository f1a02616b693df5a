// PrometheusAlerts: the AlertSource port over a real Prometheus: the instant query
// ALERTS{alertstate="firing",severity="critical"} through the client the agent's risk
// evaluation uses (prometheus/instant_query.h: bearer token file, CA directory,
// timeout). Each series of the answer is one firing alert (alertname, severity,
// namespace labels).
//
// Thread-safe (no mutable state); never throws; an unreachable Prometheus, an HTTP
// error, an API error or an answer of the wrong type is an error naming the URL.
#pragma once

#include <string_view>

#include "operator/ports.h"
#include "prometheus/instant_query.h"

namespace cincinnati::upgrade {

class PrometheusAlerts : public AlertSource {
 public:
  explicit PrometheusAlerts(prometheus::Settings settings) : settings_(std::move(settings)) {}
  Result<std::vector<FiringAlert>> FiringCriticalAlerts() override;

 private:
  prometheus::Settings settings_;
};

// The alerts of a /api/v1/query answer whose result is a vector (exposed for tests).
Result<std::vector<FiringAlert>> ReadFiringAlerts(std::string_view body);

}  // namespace cincinnati::upgrade
