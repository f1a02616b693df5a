#include "agent/promql.h"

#include <fmt/format.h>

#include <cstdlib>

namespace cincinnati::agent {
namespace {

Status Failed(std::string message) { return Status::Internal(std::move(message)); }

// One sample of 0 or 1, as the CVO's PromQL condition requires.
Result<bool> Verdict(const std::vector<prometheus::Sample>& samples) {
  if (samples.size() != 1) {
    return Failed(fmt::format("invalid PromQL result length must be one, but is {}", samples.size()));
  }
  const std::string& text = samples[0].value;
  char* end = nullptr;
  double number = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && *end == '\0') {
    if (number == 0) return false;
    if (number == 1) return true;
  }
  return Failed(fmt::format("invalid PromQL result (must be 0 or 1): {}", text));
}

}  // namespace

Result<bool> ReadInstantQueryAnswer(std::string_view body) {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<prometheus::Sample> samples, prometheus::ReadInstantVector(body));
  return Verdict(samples);
}

Result<bool> PrometheusEvaluator::Match(const MatchingRule& rule) {
  if (!rule.promql || rule.promql->empty()) {
    return Failed("the 'promql.promql' query string must be non-empty for 'type: PromQL' conditions");
  }
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<prometheus::Sample> samples, prometheus::InstantQuery(settings_, *rule.promql));
  return Verdict(samples);
}

}  // namespace cincinnati::agent
