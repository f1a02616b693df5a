// PrometheusEvaluator: the PromQL rule of a conditional update's risk, evaluated as an
// instant query against a Prometheus (or Thanos) HTTP API (reference C6).
//
// GET {url}/api/v1/query?query=...&time=now, with a bearer token read from a file on
// every query when one is configured, extra CA certificates from a directory, and a
// per-query timeout. The answer must be an instant vector of exactly one sample whose
// value is 0 (no match) or 1 (match); anything else, an API error, an HTTP error or an
// unreachable server is an error with the operator's wording, which the Recommended
// condition then reports as EvaluationFailed.
//
// Thread-safe (no shared state besides the read-only settings); never throws. Wrap it
// in CachedRuleEvaluator for the operator's throttling.
#pragma once

#include <chrono>
#include <stop_token>
#include <string>

#include "agent/risks.h"

namespace cincinnati::agent {

struct PrometheusSettings {
  std::string url;         // e.g. http://127.0.0.1:9090 (nothing appended but /api/v1/query)
  std::string token_file;  // empty: no Authorization header
  std::string ca_path;     // empty: system roots only
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  std::stop_token stop{};  // a query in flight ends within about a second of a stop
};

class PrometheusEvaluator : public RuleEvaluator {
 public:
  explicit PrometheusEvaluator(PrometheusSettings settings) : settings_(std::move(settings)) {}
  Result<bool> Match(const MatchingRule& rule) override;

 private:
  PrometheusSettings settings_;
};

// The verdict of a Prometheus /api/v1/query answer (exposed for tests and fuzzing).
Result<bool> ReadInstantQueryAnswer(std::string_view body);

}  // namespace cincinnati::agent
