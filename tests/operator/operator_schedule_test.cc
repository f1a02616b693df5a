// The whole upgrade operator (its source, schedule, fleet holds, back-off and state) in
// this process, on a manual clock and fake ports: the test calls RunOnce() after each
// step of time, so that "due in 60 s" is checked at 59 s and at 60 s, on any machine.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "env/clock.h"
#include "operator/upgrade_operator.h"
#include "operator_fakes.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati::upgrade {
namespace {
using kube::FindMember;
using kube::TextOf;
using kube::ItemsOf;

using namespace fakes;
using std::chrono::minutes;
using std::chrono::seconds;

class OperatorScheduleTest : public ::testing::Test {
 protected:
  void Start(const std::string& settings, int clusters) {
    std::string fleet = "clusters:\n";
    for (int i = 1; i <= clusters; ++i) {
      fleet += "- name: c" + std::to_string(i) + "\n  agent: \"http://c" + std::to_string(i) + ".invalid\"\n";
    }
    testing::WriteFile(dir_.path() / "fleet.yaml", fleet);
    testing::WriteFile(dir_.path() / "operator.yaml", settings);
    std::filesystem::create_directories(dir_.path() / "configs");
    OperatorOptions options;
    options.config_path = (dir_.path() / "operator.yaml").string();
    options.fleet_path = (dir_.path() / "fleet.yaml").string();
    options.state_dir = (dir_.path() / "state").string();
    options.configs_dir = (dir_.path() / "configs").string();
    options.interval = seconds(60);
    options.clock = &clock_;
    options.make_ports = [this](const FleetCluster& cluster, const OperatorConfig&) {
      ClusterPortSet ports;
      auto agent = std::make_unique<FakeAgent>();
      agents_[cluster.name] = agent.get();
      ports.agent = std::move(agent);
      return ports;
    };
    auto op = UpgradeOperator::Open(options);
    ASSERT_TRUE(op.ok()) << op.status().message();
    operator_ = std::move(*op);
  }
  void WriteConfig(const std::string& cluster, const std::string& upgrade_at) {
    testing::WriteFile(dir_.path() / "configs" / (cluster + ".yaml"),
                       "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nmetadata:\n"
                       "  name: managed-upgrade-config\n  labels: {cluster: " + cluster + "}\nspec:\n  type: OSD\n"
                       "  upgradeAt: \"" + upgrade_at + "\"\n  PDBForceDrainTimeout: 60\n  desired:\n"
                       "    version: \"4.1.1\"\n    channel: stable-4.1\n");
  }
  void Step(std::chrono::seconds by) {
    clock_.Advance(by);
    operator_->RunOnce();
  }
  double Passes(const std::string& cluster) {
    return testing::MetricValue(operator_->Metrics(), R"(upgradeoperator_reconciles_total{upgradeconfig_name=")" + cluster + R"("})");
  }
  std::string Phase(const std::string& cluster) {
    auto config = operator_->Get(cluster);
    if (!config) return "";
    const kube::JsonValue* history = FindMember(*config, "status") ? FindMember(*FindMember(*config, "status"), "history") : nullptr;
    return history && history->is_array() && !ItemsOf(*history).empty() ? TextOf(*FindMember(ItemsOf(*history)[0], "phase")) : "";
  }
  bool Commanded(const std::string& cluster) { return agents_.at(cluster)->snapshot.desired_update.version == "4.1.1"; }

  testing::TempDir dir_;
  env::ManualClock clock_;  // 2026-01-01T00:00:00Z
  std::map<std::string, FakeAgent*> agents_;
  std::unique_ptr<UpgradeOperator> operator_;
};

TEST_F(OperatorScheduleTest, AnUpgradeStartsAtUpgradeAtToTheSecond) {
  Start("", 1);
  WriteConfig("c1", "2026-01-01T00:10:00Z");
  operator_->RunOnce();
  EXPECT_EQ(Phase("c1"), "Pending");
  Step(minutes(9) + seconds(59));
  EXPECT_EQ(Phase("c1"), "Pending");
  EXPECT_FALSE(Commanded("c1"));
  Step(seconds(1));
  EXPECT_EQ(Phase("c1"), "Upgrading");
  EXPECT_TRUE(Commanded("c1"));
}

TEST_F(OperatorScheduleTest, PassesAreDueAfterTheIntervalAndBackOffWhileTheAgentIsDown) {
  Start("", 1);
  WriteConfig("c1", "2026-01-01T00:00:00Z");
  // New -> Pending -> Upgrading, each due at once after the one before.
  for (int i = 0; i < 3 && Phase("c1") != "Upgrading"; ++i) operator_->RunOnce();
  ASSERT_EQ(Phase("c1"), "Upgrading");
  const double passes = Passes("c1");
  // Waiting for the control plane: a pass every interval (60 s), none between.
  Step(seconds(59));
  EXPECT_EQ(Passes("c1"), passes);
  Step(seconds(1));
  EXPECT_EQ(Passes("c1"), passes + 1);
  // The agent cannot be read: 60 s, then 120 s, 240 s, then at most 300 s between passes.
  agents_.at("c1")->reachable = false;
  Step(seconds(60));
  double expected = passes + 2;
  EXPECT_EQ(Passes("c1"), expected);
  for (int wait : {60, 120, 240, 300, 300}) {
    Step(seconds(wait - 1));
    EXPECT_EQ(Passes("c1"), expected) << "too early after " << wait - 1 << " s";
    Step(seconds(1));
    EXPECT_EQ(Passes("c1"), ++expected) << "not due after " << wait << " s";
  }
  // Back again: the back-off ends with the first good pass.
  agents_.at("c1")->reachable = true;
  Step(seconds(300));
  const double after = Passes("c1");
  Step(seconds(60));
  EXPECT_EQ(Passes("c1"), after + 1);
}

TEST_F(OperatorScheduleTest, MaxParallelHoldsExactlyAcrossTheFleet) {
  Start("fleet: {maxParallel: 2}\n", 5);
  for (int i = 1; i <= 5; ++i) WriteConfig("c" + std::to_string(i), "2026-01-01T00:00:00Z");
  for (int round = 0; round < 3; ++round) Step(seconds(60));
  int upgrading = 0;
  for (int i = 1; i <= 5; ++i) upgrading += Phase("c" + std::to_string(i)) == "Upgrading";
  EXPECT_EQ(upgrading, 2);
  int commanded = 0;
  for (auto& [name, agent] : agents_) commanded += Commanded(name);
  EXPECT_EQ(commanded, 2);
  // One finishes: exactly one more starts.
  for (auto& [name, agent] : agents_) {
    if (Commanded(name)) {
      agent->Progress();
      agent->Complete();
      break;
    }
  }
  for (int round = 0; round < 3; ++round) Step(seconds(60));
  upgrading = 0;
  int upgraded = 0;
  for (int i = 1; i <= 5; ++i) {
    upgrading += Phase("c" + std::to_string(i)) == "Upgrading";
    upgraded += Phase("c" + std::to_string(i)) == "Upgraded";
  }
  EXPECT_EQ(upgraded, 1);
  EXPECT_EQ(upgrading, 2);
}

}  // namespace
}  // namespace cincinnati::upgrade
