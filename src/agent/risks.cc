#include "agent/risks.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <cctype>
#include <ctime>

#include "core/json.h"
#include "core/strings.h"

namespace cincinnati::agent {
namespace {

constexpr std::string_view kNotExposed = "NotExposedToRisks";
constexpr std::string_view kEvaluationFailed = "EvaluationFailed";
constexpr std::string_view kMultiple = "MultipleReasons";
constexpr std::string_view kExposed = "ExposedToRisks";

// Kubernetes' pattern for a condition reason: ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$
bool IsConditionReason(std::string_view s) {
  auto inner = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ',' || c == ':'; };
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s.front()))) return false;
  for (char c : s) {
    if (!inner(c)) return false;
  }
  char last = s.back();
  return std::isalnum(static_cast<unsigned char>(last)) || last == '_';
}

std::string CombineStatus(const std::string& now, std::string_view want) {
  if (now == "False" || want == "False") return "False";
  if (now == "Unknown" || want == "Unknown") return "Unknown";
  return std::string(want);
}

std::string CombineReason(const std::string& now, std::string_view want) {
  if (now == kNotExposed) return std::string(want);
  if (now == want) return now;
  return std::string(kMultiple);
}

std::string ClockTime(std::chrono::system_clock::time_point t) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:02}:{:02}:{:02}Z", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

}  // namespace

std::string RuleJson(const MatchingRule& rule) {
  boost::json::object out{{"type", rule.type}};
  if (rule.promql) out["promql"] = boost::json::object{{"promql", *rule.promql}};
  return WriteJson(out);
}

CachedRuleEvaluator::CachedRuleEvaluator(RuleEvaluator& inner, env::Clock& clock, RuleCacheSettings settings)
    : inner_(inner), clock_(clock), settings_(settings) {}

bool CachedRuleEvaluator::HasResult(const MatchingRule& rule) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(RuleJson(rule));
  return it != entries_.end() && it->second.when != TimePoint{};
}

void CachedRuleEvaluator::ExpireStale(TimePoint now) {
  std::erase_if(entries_, [&](const auto& item) {
    const Entry& e = item.second;
    TimePoint since = e.when != TimePoint{} ? e.when : e.access;
    return now - since > settings_.expiration;
  });
}

std::map<std::string, CachedRuleEvaluator::Entry>::iterator CachedRuleEvaluator::MostStale() {
  auto thief = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const Entry& e = it->second;
    if (e.access <= e.when) continue;  // not requested since its last evaluation
    if (thief == entries_.end() || e.when < thief->second.when ||
        (e.when == thief->second.when && e.access < thief->second.access)) {
      thief = it;
    }
  }
  return thief;
}

Result<bool> CachedRuleEvaluator::Match(const MatchingRule& rule) {
  std::lock_guard lock(mu_);
  const std::string key = RuleJson(rule);
  const TimePoint now = clock_.Now();
  // Every request, answered or not, counts as an access (after the decision below).
  struct Touch {
    CachedRuleEvaluator& self;
    const std::string& key;
    const MatchingRule& rule;
    TimePoint now;
    ~Touch() {
      auto [it, added] = self.entries_.try_emplace(key);
      if (added) it->second.rule = rule;
      it->second.access = now;
    }
  } touch{*this, key, rule, now};

  ExpireStale(now);
  auto cached = [&]() -> const Entry* {
    auto it = entries_.find(key);
    return it != entries_.end() && it->second.when != TimePoint{} ? &it->second : nullptr;
  };
  if (now - last_match_ <= settings_.min_between_matches) {
    if (const Entry* e = cached()) return e->result;
    return Status::Internal(
        fmt::format("evaluation is throttled until {}", ClockTime(last_match_ + settings_.min_between_matches)));
  }
  // Spend this query on the most stale requested rule that is due, so that callers
  // asking in the same order cannot starve the later rules; else on the caller's rule
  // unless its result is still fresh.
  auto thief = MostStale();
  std::string target_key = key;
  MatchingRule target = rule;
  if (thief != entries_.end() && now - thief->second.when >= settings_.min_for_condition) {
    target_key = thief->first;
    target = thief->second.rule;
  } else if (const Entry* e = cached(); e && now - e->when < settings_.min_for_condition) {
    return e->result;
  }
  Result<bool> result = inner_.Match(target);
  last_match_ = clock_.Now();
  auto [it, added] = entries_.try_emplace(target_key);
  if (added) it->second.rule = target;
  it->second.when = last_match_;
  it->second.result = std::move(result);
  if (const Entry* e = cached()) return e->result;
  return Status::Internal("evaluation is throttled");
}

Result<bool> MatchRules(const std::vector<MatchingRule>& rules, RuleEvaluator& promql) {
  std::vector<std::string> errors;
  for (const auto& rule : rules) {
    Result<bool> result = Status::Internal("");
    if (rule.type == "Always") {
      result = true;
    } else if (rule.type == "PromQL") {
      result = promql.Match(rule);
    } else {
      continue;  // not a registered type
    }
    if (result.ok()) return result;
    errors.push_back(result.status().message());
  }
  if (errors.empty()) return false;
  if (errors.size() == 1) return Status::Internal(errors.front());
  std::string all = "[" + errors.front();
  for (size_t i = 1; i < errors.size(); ++i) all += ", " + errors[i];
  return Status::Internal(all + "]");
}

RecommendedCondition EvaluateRecommended(const std::vector<Risk>& risks, const RiskMatcher& match) {
  RecommendedCondition out{"True", std::string(kNotExposed),
                           "The update is recommended, because none of the conditional update risks apply to this cluster."};
  std::vector<std::string> messages;
  for (const auto& risk : risks) {
    Result<bool> exposed = match(risk.matching_rules);
    if (!exposed.ok()) {
      out.status = CombineStatus(out.status, "Unknown");
      out.reason = CombineReason(out.reason, kEvaluationFailed);
      messages.push_back(fmt::format("Could not evaluate exposure to update risk {} ({})\n  {} description: {}\n  {} URL: {}",
                                     risk.name, Abbreviate(exposed.status().message(), 1024), risk.name, risk.message,
                                     risk.name, risk.url));
    } else if (*exposed) {
      out.status = CombineStatus(out.status, "False");
      out.reason = CombineReason(out.reason, IsConditionReason(risk.name) ? std::string_view(risk.name) : kExposed);
      messages.push_back(risk.message + " " + risk.url);
    }
  }
  if (!messages.empty()) {
    out.message = messages.front();
    for (size_t i = 1; i < messages.size(); ++i) out.message += "\n\n" + messages[i];
  }
  return out;
}

}  // namespace cincinnati::agent
