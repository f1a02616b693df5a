// Risks: whether a conditional update applies to this cluster, as the CVO evaluates them.
//
//   - RuleEvaluator answers one matching rule: match, no match, or an error.
//   - CachedRuleEvaluator wraps the PromQL evaluator the way the cluster-version
//     operator's cache does: at most one real query per `min_between_matches`, a rule
//     re-queried at most once per `min_for_condition`, results dropped after
//     `expiration` without use; the query it is allowed spends itself on the most stale
//     requested rule that is due, not necessarily the caller's (a caller without a
//     cached answer then gets "evaluation is throttled"). Unlike the operator's code,
//     whose own rule is queried again on every call more than a second apart, a rule's
//     fresh result is answered from the cache, as the CVO's pkg/clusterconditions/cache/cache.go
//     intends (MinForCondition). Thread-safe (one mutex, held during the wrapped call so that queries never overlap).
//   - MatchRules is the condition registry: rules in order, unknown types skipped, the
//     first rule that evaluates without error decides; if every rule errs, the errors
//     together are the result.
//   - EvaluateRecommended combines the risks of one conditional update into its
//     Recommended condition: any exposed risk makes it False, else any failed
//     evaluation Unknown, else True; the reason is the one contributed reason or
//     MultipleReasons; messages are joined by a blank line.
// Nothing here throws.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "agent/graph_client_names.h"
#include "core/status.h"
#include "env/clock.h"

namespace cincinnati::agent {

class RuleEvaluator {
 public:
  virtual ~RuleEvaluator() = default;
  virtual Result<bool> Match(const MatchingRule& rule) = 0;
};

struct RuleCacheSettings {
  std::chrono::milliseconds min_between_matches{1000};
  std::chrono::milliseconds min_for_condition{std::chrono::hours(1)};
  std::chrono::milliseconds expiration{std::chrono::hours(24)};
};

class CachedRuleEvaluator : public RuleEvaluator {
 public:
  using TimePoint = std::chrono::system_clock::time_point;

  // `inner` and `clock` must outlive this object.
  CachedRuleEvaluator(RuleEvaluator& inner, env::Clock& clock, RuleCacheSettings settings = {});
  Result<bool> Match(const MatchingRule& rule) override;

  // Whether a rule has an evaluated result in the cache (for deciding to come back soon).
  bool HasResult(const MatchingRule& rule) const;

 private:
  struct Entry {
    MatchingRule rule;
    TimePoint when{};    // completion of the last evaluation; epoch: never
    TimePoint access{};  // most recent request
    Result<bool> result = Status::Internal("not evaluated");
  };
  void ExpireStale(TimePoint now);
  // The requested rule that waited longest since its evaluation, if any.
  std::map<std::string, Entry>::iterator MostStale();

  RuleEvaluator& inner_;
  env::Clock& clock_;
  RuleCacheSettings settings_;
  mutable std::mutex mu_;
  TimePoint last_match_{};
  std::map<std::string, Entry> entries_;  // by the rule's JSON
};

Result<bool> MatchRules(const std::vector<MatchingRule>& rules, RuleEvaluator& promql);

struct RecommendedCondition {
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
};

using RiskMatcher = std::function<Result<bool>(const std::vector<MatchingRule>&)>;
RecommendedCondition EvaluateRecommended(const std::vector<Risk>& risks, const RiskMatcher& match);

// The rule as JSON ({"type":...,"promql":{"promql":...}}): the cache key, and the
// form in which ClusterVersion status shows it.
std::string RuleJson(const MatchingRule& rule);

}  // namespace cincinnati::agent
