// PromQL risks against a real Prometheus: a recording rule the test switches between 1
// and 0, answers of the wrong shape, a broken query and a stopped server.
#include <gtest/gtest.h>

#include "agent/promql.h"
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
