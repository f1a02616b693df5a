// PrometheusEvaluator: the PromQL rule of a conditional update's risk, evaluated as an
// instant query (prometheus/instant_query.h, the client the operator's health gate
// uses too), as the cluster-version operator's PromQL condition does
// (pkg/clusterconditions/promql in openshift/cluster-version-operator).
//
// The answer must be an instant vector of exactly one sample whose value is 0 (no
// match) or 1 (match); anything else, an API error, an HTTP error or an unreachable
// server is an error with the CVO's wording, which the Recommended condition then
// reports as EvaluationFailed.
//
// Thread-safe (no shared state besides the read-only settings); never throws. Wrap it
// in CachedRuleEvaluator for the CVO's throttling.
#pragma once

#include <string_view>

#include "agent/risks.h"
#include "prometheus/instant_query.h"

namespace cincinnati::agent {

using PrometheusSettings = prometheus::Settings;

class PrometheusEvaluator : public RuleEvaluator {
 public:
  explicit PrometheusEvaluator(PrometheusSettings settings) : settings_(std::move(settings)) {}
  Result<bool> Match(const MatchingRule& rule) override;

 private:
  PrometheusSettings settings_;
};

// A PromQL matcher that refuses: no Prometheus was configured.
class NoPrometheus : public RuleEvaluator {
 public:
  Result<bool> Match(const MatchingRule&) override {
    return Status::Internal("no Prometheus is configured (--prometheus.url)");
  }
};

// The verdict of a Prometheus /api/v1/query answer (exposed for tests and fuzzing).
Result<bool> ReadInstantQueryAnswer(std::string_view body);

}  // namespace cincinnati::agent
