#include "operator/prometheus_alerts.h"

#include <fmt/format.h>

namespace cincinnati::upgrade {
namespace {

constexpr std::string_view kCriticalAlerts = R"(ALERTS{alertstate="firing",severity="critical"})";

Result<std::vector<FiringAlert>> ToAlerts(std::vector<prometheus::Sample> samples) {
  std::vector<FiringAlert> out;
  for (size_t i = 0; i < samples.size(); ++i) {
    FiringAlert alert;
    alert.labels = std::move(samples[i].labels);
    alert.name = alert.labels["alertname"];
    alert.severity = alert.labels["severity"];
    alert.namespace_ = alert.labels["namespace"];
    if (alert.name.empty()) return Status::InvalidArgument(fmt::format("data.result[{}].metric: no alertname", i));
    out.push_back(std::move(alert));
  }
  return out;
}

}  // namespace

Result<std::vector<FiringAlert>> ReadFiringAlerts(std::string_view body) {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<prometheus::Sample> samples, prometheus::ReadInstantVector(body));
  return ToAlerts(std::move(samples));
}

Result<std::vector<FiringAlert>> PrometheusAlerts::FiringCriticalAlerts() {
  auto samples = prometheus::InstantQuery(settings_, kCriticalAlerts);
  if (!samples.ok()) return samples.status().WithContext(settings_.url);
  auto alerts = ToAlerts(std::move(*samples));
  if (!alerts.ok()) return alerts.status().WithContext(settings_.url);
  return alerts;
}

}  // namespace cincinnati::upgrade
