// PromQL risks against a real Prometheus: a recording rule the test switches between 1
// and 0, answers of the wrong shape, a broken query and a stopped server.
#include <gtest/gtest.h>

#include "agent/promql.h"
#include "agent/update_retriever.h"
#include "service_util.h"

namespace cincinnati::agent {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;
using testing::WaitFor;

std::string Rules(int value) {
  return "groups:\n- name: risks\n  interval: 1s\n  rules:\n  - record: cluster_risk_switch\n    expr: vector(" +
         std::to_string(value) + ")\n";
}

MatchingRule PromQL(std::string query) { return {"PromQL", std::move(query)}; }

class RealPrometheus : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists("/usr/bin/prometheus")) << "scripts/deps.sh installs the Debian prometheus package";
    testing::WriteFile(dir_ / "rules.yml", Rules(1));
    testing::WriteFile(dir_ / "prometheus.yml", "global:\n  evaluation_interval: 1s\nrule_files:\n- " +
                                                    (dir_ / "rules.yml").string() + "\n");
    port_ = testing::FreePort();
    prometheus_ = std::make_unique<ChildProcess>(std::vector<std::string>{
        "/usr/bin/prometheus", "--config.file=" + (dir_ / "prometheus.yml").string(),
        "--storage.tsdb.path=" + (dir_ / "data").string(), "--web.enable-lifecycle",
        "--web.listen-address=127.0.0.1:" + std::to_string(port_)});
    settings_.url = "http://127.0.0.1:" + std::to_string(port_);
    settings_.timeout = std::chrono::seconds(10);
    PrometheusEvaluator evaluator(settings_);
    ASSERT_TRUE(WaitFor([&] { return evaluator.Match(PromQL("cluster_risk_switch")).ok(); }, std::chrono::seconds(60)))
        << prometheus_->log();
  }

  void Switch(int value) {
    testing::WriteFile(dir_ / "rules.yml", Rules(value));
    http::RequestOptions post;
    post.method = "POST";
    ASSERT_EQ(http::Request(settings_.url + "/-/reload", post).status, 200);
  }

  testing::TempDir dir_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> prometheus_;
  PrometheusSettings settings_;
};

TEST_F(RealPrometheus, RecordingRuleDecidesTheRisk) {
  PrometheusEvaluator evaluator(settings_);
  auto match = [&](const std::vector<MatchingRule>& rules) { return MatchRules(rules, evaluator); };
  Risk risk{"https://example.com/r", "ClusterRiskSwitch", "The switch is on.", {PromQL("cluster_risk_switch")}};

  auto on = EvaluateRecommended({risk}, match);
  EXPECT_EQ(on.status, "False");
  EXPECT_EQ(on.reason, "ClusterRiskSwitch");
  EXPECT_EQ(on.message, "The switch is on. https://example.com/r");

  Switch(0);
  ASSERT_TRUE(WaitFor([&] {
    auto r = evaluator.Match(PromQL("cluster_risk_switch"));
    return r.ok() && !*r;
  }, std::chrono::seconds(30)));
  auto off = EvaluateRecommended({risk}, match);
  EXPECT_EQ(off.status, "True");
  EXPECT_EQ(off.reason, "NotExposedToRisks");
}

// A Prometheus shared by many clusters (a hosted control plane's): two clusters' series
// told apart by `_id`. A risk written for it (`_id=""`, as most of graph-data's
// blocked-edges are) matches only this cluster once the agent runs with --hypershift,
// as the CVO's rewrite does it; left as written it matches neither.
TEST_F(RealPrometheus, HypershiftNamesThisClusterInRisksWithAnEmptyId) {
  const std::string exposed = "0f2a2ab5-0f4d-4c3a-9d8e-1c2b3a4d5e6f", safe = "7b1c9d2e-3f4a-4b5c-8d6e-7f8091a2b3c4";
  testing::WriteFile(dir_ / "rules.yml", "groups:\n- name: clusters\n  interval: 1s\n  rules:\n"
                                         "  - record: cluster_feature_on\n    expr: vector(1)\n    labels:\n      _id: " + exposed + "\n"
                                         "  - record: cluster_feature_on\n    expr: vector(0)\n    labels:\n      _id: " + safe + "\n");
  http::RequestOptions post;
  post.method = "POST";
  ASSERT_EQ(http::Request(settings_.url + "/-/reload", post).status, 200);
  PrometheusEvaluator evaluator(settings_);
  ASSERT_TRUE(WaitFor([&] {
    auto r = evaluator.Match(PromQL("max(cluster_feature_on{_id=\"" + exposed + "\"})"));
    return r.ok() && *r;
  }, std::chrono::seconds(30))) << prometheus_->log();
  auto match = [&](const std::vector<MatchingRule>& rules) { return MatchRules(rules, evaluator); };
  const Risk risk{"https://example.com/r", "FeatureOn", "The feature is on.", {PromQL("max(cluster_feature_on{_id=\"\"}) or vector(0)")}};
  auto recommended_for = [&](const std::string* cluster) {
    std::vector<graph_client::ConditionalUpdate> updates(1);
    updates[0].risks = {risk};
    if (cluster) InjectClusterId(*cluster, updates);
    return EvaluateRecommended(updates[0].risks, match).status;
  };
  EXPECT_EQ(recommended_for(&exposed), "False") << "this cluster's series says the feature is on";
  EXPECT_EQ(recommended_for(&safe), "True");
  EXPECT_EQ(recommended_for(nullptr), "True") << "unrewritten, _id=\"\" matches no cluster's series";
}

TEST(InjectClusterIdTest, OnlyEmptyIdMatchersOfPromQLRulesAreRewritten) {
  std::vector<graph_client::ConditionalUpdate> updates(1);
  updates[0].risks = {Risk{"u", "R", "m",
                           {MatchingRule{"PromQL", std::string(R"(a{_id=""} + b{_id="", job="x"} + c{_id!=""} + d{_id = ""})")},
                            MatchingRule{"Always", std::nullopt}, MatchingRule{"Other", std::string(R"(e{_id=""})")}}}};
  InjectClusterId("c1", updates);
  const auto& rules = updates[0].risks[0].matching_rules;
  EXPECT_EQ(*rules[0].promql, R"(a{_id="c1"} + b{_id="c1", job="x"} + c{_id!=""} + d{_id = ""})") << "a plain replace, as the CVO's";
  EXPECT_FALSE(rules[1].promql);
  EXPECT_EQ(*rules[2].promql, R"(e{_id=""})") << "only PromQL rules";
}

TEST_F(RealPrometheus, AnswersOfTheWrongShapeAreErrors) {
  PrometheusEvaluator evaluator(settings_);
  struct Case {
    std::string query, message;
  };
  std::vector<Case> cases = {
      {"vector(1) or label_replace(vector(1), \"x\", \"y\", \"\", \"\")", "invalid PromQL result length must be one, but is 2"},
      {"no_such_metric_anywhere", "invalid PromQL result length must be one, but is 0"},
      {"vector(2)", "invalid PromQL result (must be 0 or 1): 2"},
      {"scalar(vector(1))", "invalid PromQL result type is scalar, not vector"},
      {"sum(", "executing PromQL query: bad_data: "},
  };
  for (const auto& c : cases) {
    auto got = evaluator.Match(PromQL(c.query));
    ASSERT_FALSE(got.ok()) << c.query;
    EXPECT_EQ(got.status().message().rfind(c.message, 0), 0u) << c.query << " -> " << got.status().message();
  }
  // A failed evaluation makes the update's Recommended condition Unknown, naming why.
  Risk risk{"https://example.com/b", "Broken", "Broken query.", {PromQL("sum(")}};
  auto unknown = EvaluateRecommended({risk}, [&](const auto& rules) { return MatchRules(rules, evaluator); });
  EXPECT_EQ(unknown.status, "Unknown");
  EXPECT_EQ(unknown.reason, "EvaluationFailed");
  EXPECT_NE(unknown.message.find("Could not evaluate exposure to update risk Broken (executing PromQL query: bad_data"),
            std::string::npos)
      << unknown.message;
}

TEST_F(RealPrometheus, StoppedPrometheusIsAnEvaluationFailure) {
  PrometheusEvaluator evaluator(settings_);
  EXPECT_EQ(prometheus_->Stop(), 0) << prometheus_->log();
  auto got = evaluator.Match(PromQL("cluster_risk_switch"));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message().rfind("executing PromQL query: ", 0), 0u) << got.status().message();
  Risk risk{"https://example.com/r", "ClusterRiskSwitch", "m", {PromQL("cluster_risk_switch")}};
  auto unknown = EvaluateRecommended({risk}, [&](const auto& rules) { return MatchRules(rules, evaluator); });
  EXPECT_EQ(unknown.status, "Unknown");
}

TEST(PromQLAnswerTest, ReadsOnlyOneSampleOfZeroOrOne) {
  EXPECT_TRUE(*ReadInstantQueryAnswer(R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}})"));
  EXPECT_FALSE(*ReadInstantQueryAnswer(R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0"]}]}})"));
  for (std::string_view bad : {"", "[]", R"({"status":"success"})", R"({"status":"success","data":{"resultType":"vector","result":{}}})",
                               R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"NaN"]}]}})",
                               R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1]}]}})",
                               R"({"status":"error","errorType":"timeout","error":"query timed out"})"}) {
    EXPECT_FALSE(ReadInstantQueryAnswer(bad).ok()) << bad;
  }
  EXPECT_EQ(ReadInstantQueryAnswer(R"({"status":"error","errorType":"timeout","error":"query timed out"})").status().message(),
            "executing PromQL query: timeout: query timed out");
}

}  // namespace
}  // namespace cincinnati::agent
