// Risk evaluation, as the CVO does it: the PromQL cache's throttling and fairness, the
// condition registry, and the Recommended condition.
#include <gtest/gtest.h>

#include <map>

#include "agent/risks.h"

namespace cincinnati::agent {
namespace {

using namespace std::chrono_literals;
using TimePoint = CachedRuleEvaluator::TimePoint;

// Answers queries from a table and records which were asked.
class TableEvaluator : public RuleEvaluator {
 public:
  Result<bool> Match(const MatchingRule& rule) override {
    asked.push_back(*rule.promql);
    auto it = answers.find(*rule.promql);
    if (it == answers.end()) return Status::Internal("no such query");
    return it->second;
  }
  std::map<std::string, bool> answers;
  std::vector<std::string> asked;
};

MatchingRule PromQL(std::string query) { return {"PromQL", std::move(query)}; }

struct CacheFixture : ::testing::Test {
  env::ManualClock clock{TimePoint{} + 1000h};
  TableEvaluator inner;
  CachedRuleEvaluator cache{inner, clock};
};

TEST_F(CacheFixture, OneQueryPerSecondAndFreshResultsFromTheCache) {
  inner.answers = {{"a", true}, {"b", false}};
  auto a = cache.Match(PromQL("a"));
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(*a);
  // Within a second: nothing new is asked; a rule without a result is throttled.
  clock.Advance(500ms);
  auto b = cache.Match(PromQL("b"));
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("evaluation is throttled until"), std::string::npos) << b.status().message();
  EXPECT_TRUE(*cache.Match(PromQL("a")));
  EXPECT_EQ(inner.asked, (std::vector<std::string>{"a"}));
  // Later, b (requested and never evaluated) gets its query.
  clock.Advance(2s);
  b = cache.Match(PromQL("b"));
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(*b);
  // a's result is fresh for an hour: answered from the cache even after the throttle.
  clock.Advance(10min);
  inner.answers["a"] = false;
  EXPECT_TRUE(*cache.Match(PromQL("a")));
  EXPECT_EQ(inner.asked, (std::vector<std::string>{"a", "b"}));
  clock.Advance(1h);
  EXPECT_FALSE(*cache.Match(PromQL("a")));
  EXPECT_EQ(inner.asked.size(), 3u);
}

TEST_F(CacheFixture, TheQuerySpendsItselfOnTheMostStaleRequestedRule) {
  inner.answers = {{"a", true}, {"b", true}, {"c", true}};
  ASSERT_TRUE(cache.Match(PromQL("a")).ok());
  // c is asked first, then b: queued, not evaluated.
  clock.Advance(100ms);
  EXPECT_FALSE(cache.Match(PromQL("c")).ok());
  clock.Advance(100ms);
  EXPECT_FALSE(cache.Match(PromQL("b")).ok());
  clock.Advance(2s);
  // The caller asks for b, but c has waited longer: c is evaluated, b is throttled.
  auto b = cache.Match(PromQL("b"));
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), "evaluation is throttled");
  EXPECT_EQ(inner.asked.back(), "c");
  EXPECT_TRUE(cache.HasResult(PromQL("c")));
  clock.Advance(2s);
  EXPECT_TRUE(cache.Match(PromQL("b")).ok());
  EXPECT_EQ(inner.asked, (std::vector<std::string>{"a", "c", "b"}));
}

TEST_F(CacheFixture, ErrorsAreCachedAndUnusedEntriesExpire) {
  auto missing = cache.Match(PromQL("nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "no such query");
  clock.Advance(2s);
  EXPECT_EQ(cache.Match(PromQL("nope")).status().message(), "no such query");  // from the cache
  EXPECT_EQ(inner.asked.size(), 1u);
  clock.Advance(25h);
  inner.answers["nope"] = true;
  EXPECT_TRUE(*cache.Match(PromQL("nope")));  // expired, evaluated again
  EXPECT_EQ(inner.asked.size(), 2u);
}

TEST(MatchRulesTest, FirstRuleThatEvaluatesDecides) {
  TableEvaluator promql;
  promql.answers = {{"zero", false}};
  EXPECT_TRUE(*MatchRules({{"Always", std::nullopt}}, promql));
  EXPECT_FALSE(*MatchRules({{"Future", std::nullopt}, PromQL("broken"), PromQL("zero"), {"Always", std::nullopt}}, promql));
  auto failed = MatchRules({PromQL("x"), PromQL("y")}, promql);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "[no such query, no such query]");
  EXPECT_EQ(MatchRules({PromQL("x")}, promql).status().message(), "no such query");
}

Risk MakeRisk(std::string name, std::string query) {
  return {"https://example.com/" + name, name, name + " breaks things.", {PromQL(std::move(query))}};
}

TEST(RecommendedTest, CombinesRisksAsTheOperatorDoes) {
  TableEvaluator promql;
  promql.answers = {{"one", true}, {"zero", false}};
  auto match = [&](const std::vector<MatchingRule>& rules) { return MatchRules(rules, promql); };

  auto none = EvaluateRecommended({MakeRisk("A", "zero")}, match);
  EXPECT_EQ(none.status, "True");
  EXPECT_EQ(none.reason, "NotExposedToRisks");
  EXPECT_EQ(none.message, "The update is recommended, because none of the conditional update risks apply to this cluster.");

  auto exposed = EvaluateRecommended({MakeRisk("A", "zero"), MakeRisk("B", "one")}, match);
  EXPECT_EQ(exposed.status, "False");
  EXPECT_EQ(exposed.reason, "B");
  EXPECT_EQ(exposed.message, "B breaks things. https://example.com/B");

  auto bad_name = EvaluateRecommended({MakeRisk("not a reason!", "one")}, match);
  EXPECT_EQ(bad_name.reason, "ExposedToRisks");

  auto failed = EvaluateRecommended({MakeRisk("C", "broken")}, match);
  EXPECT_EQ(failed.status, "Unknown");
  EXPECT_EQ(failed.reason, "EvaluationFailed");
  EXPECT_EQ(failed.message,
            "Could not evaluate exposure to update risk C (no such query)\n"
            "  C description: C breaks things.\n"
            "  C URL: https://example.com/C");

  auto both = EvaluateRecommended({MakeRisk("B", "one"), MakeRisk("C", "broken")}, match);
  EXPECT_EQ(both.status, "False");
  EXPECT_EQ(both.reason, "MultipleReasons");
  EXPECT_EQ(both.message.find("B breaks things. https://example.com/B\n\nCould not evaluate"), 0u) << both.message;

  auto always = EvaluateRecommended({{"https://x", "Always", "m", {{"Always", std::nullopt}}}}, match);
  EXPECT_EQ(always.status, "False");
  EXPECT_EQ(always.reason, "Always");
}

TEST(RecommendedTest, RuleJsonIsTheStatusShape) {
  EXPECT_EQ(RuleJson(PromQL("a{b=\"c\"}")), R"({"type":"PromQL","promql":{"promql":"a{b=\"c\"}"}})");
  EXPECT_EQ(RuleJson({"Always", std::nullopt}), R"({"type":"Always"})");
}

}  // namespace
}  // namespace cincinnati::agent
