// The step runner's outcomes, the step lists of the OSD and ARO upgraders, notification
// texts and the upgrade-policy state transitions, as the managed-upgrade-operator has them.
#include <gtest/gtest.h>

#include "operator/notifications.h"
#include "operator/step_runner.h"
#include "operator/steps.h"

namespace cincinnati::upgrade {
namespace {

struct Counter {
  std::vector<std::string> ran;
  std::map<std::string, StepResult> answers;  // default: done
};

std::vector<Step<Counter>> ThreeSteps() {
  std::vector<Step<Counter>> steps;
  for (const char* name : {"First", "Second", "Third"}) {
    steps.push_back({name, std::string(name) + "Done", [name](Counter& c) {
                       c.ran.push_back(name);
                       auto it = c.answers.find(name);
                       return it == c.answers.end() ? StepResult::Done() : it->second;
                     }});
  }
  return steps;
}

TEST(StepRunnerTest, AllDoneNotDoneAndErrorWriteTheReferenceConditions) {
  Counter counter;
  counter.answers["Second"] = StepResult::NotDone();
  UpgradeHistory h;
  RunOutcome first = RunSteps(ThreeSteps(), counter, h, "t1");
  EXPECT_EQ(first.phase, Phase::kUpgrading);
  EXPECT_EQ(first.step, "Second");
  EXPECT_EQ(counter.ran, (std::vector<std::string>{"First", "Second"}));
  ASSERT_EQ(h.conditions.size(), 2u);
  EXPECT_EQ(h.conditions[0].type, "SecondDone");  // the latest step to start comes first
  EXPECT_EQ(h.conditions[0].status, "False");
  EXPECT_EQ(h.conditions[0].reason, "SecondDone not done");
  EXPECT_EQ(h.conditions[0].message, "SecondDone still in progress");
  EXPECT_EQ(h.conditions[1].status, "True");
  EXPECT_EQ(h.conditions[1].reason, "FirstDone done");
  EXPECT_EQ(h.conditions[1].message, "FirstDone is completed");
  EXPECT_EQ(h.conditions[1].complete_time, "t1");

  // The next pass starts from the first step again; an error stops it with its text.
  counter.ran.clear();
  counter.answers["Second"] = StepResult::Error("critical alert(s) firing: KubeAPIDown");
  RunOutcome second = RunSteps(ThreeSteps(), counter, h, "t2");
  EXPECT_EQ(second.phase, Phase::kUpgrading);
  EXPECT_EQ(second.error, "critical alert(s) firing: KubeAPIDown");
  EXPECT_EQ(counter.ran, (std::vector<std::string>{"First", "Second"}));
  EXPECT_EQ(h.FindCondition("SecondDone")->message, "critical alert(s) firing: KubeAPIDown");
  EXPECT_EQ(h.FindCondition("SecondDone")->start_time, "t1");  // the first start is kept
  EXPECT_EQ(h.FindCondition("FirstDone")->complete_time, "t1");  // set once

  counter.ran.clear();
  counter.answers.clear();
  RunOutcome third = RunSteps(ThreeSteps(), counter, h, "t3");
  EXPECT_EQ(third.phase, Phase::kUpgraded);
  EXPECT_EQ(counter.ran.size(), 3u);
  EXPECT_EQ(h.conditions[0].type, "ThirdDone");
  for (const auto& c : h.conditions) EXPECT_EQ(c.status, "True") << c.type;
  EXPECT_EQ(h.FindCondition("SecondDone")->complete_time, "t3");
}

TEST(StepRunnerTest, TheUpgradersListTheReferenceStepsInOrder) {
  std::vector<std::string> osd, aro;
  for (const auto& s : StepsFor(UpgradeType::kOSD)) osd.push_back(s.name + "/" + s.condition);
  for (const auto& s : StepsFor(UpgradeType::kARO)) aro.push_back(s.name);
  EXPECT_EQ(osd, (std::vector<std::string>{
                     "SendStartedNotification/StartedNotificationSent", "UpgradeDelayedCheck/UpgradeDelayedCheck",
                     "IsUpgradeable/IsClusterUpgradable", "PreUpgradeHealthCheck/ClusterHealthyBeforeUpgrade",
                     "ExternalDependencyAvailabilityCheck/ExternalDependenciesAvailable",
                     "EnsureExtraUpgradeWorkers/ComputeCapacityReserved",
                     "CreateControlPlaneMaintWindow/ControlPlaneMaintenanceWindowCreated", "CommenceUpgrade/UpgradeCommenced",
                     "ControlPlaneUpgraded/ControlPlaneUpgraded",
                     "RemoveControlPlaneMaintWindow/ControlPlaneMaintenanceWindowRemoved",
                     "CreateWorkerMaintWindow/WorkersMaintenanceWindowCreated", "AllWorkersUpgraded/WorkerNodesUpgraded",
                     "RemoveExtraScaledNodes/ComputeCapacityRemoved", "RemoveMaintWindow/WorkersMaintenanceWindowRemoved",
                     "PostUpgradeHealthCheck/ClusterHealthyAfterUpgrade", "PostUpgradeProcedures/PostUpgradeTasksCompleted",
                     "SendCompletedNotification/CompletedNotificationSent"}));
  EXPECT_EQ(aro, (std::vector<std::string>{"SendStartedNotification", "PreUpgradeHealthCheck", "ExternalDependencyAvailabilityCheck",
                                           "EnsureExtraUpgradeWorkers", "CreateControlPlaneMaintWindow", "CommenceUpgrade",
                                           "ControlPlaneUpgraded", "RemoveControlPlaneMaintWindow", "CreateWorkerMaintWindow",
                                           "AllWorkersUpgraded", "RemoveExtraScaledNodes", "RemoveMaintWindow",
                                           "PostUpgradeHealthCheck", "SendCompletedNotification"}));
}

TEST(NotificationTest, PolicyStateTransitionsFollowTheReferenceTable) {
  struct Row {
    const char* from;
    std::vector<const char*> allowed;
  };
  const std::vector<Row> table = {
      {"scheduled", {"started"}},
      {"started", {"scale-skipped", "delayed", "completed", "failed"}},
      {"scale-skipped", {"delayed", "skipped", "completed", "failed"}},
      {"delayed", {"completed", "failed", "skipped"}},
      {"skipped", {"completed", "failed"}},
      {"pending", {}},
      {"completed", {}},
      {"failed", {}},
      {"cancelled", {}},
  };
  const std::vector<const char*> all = {"scheduled", "started", "scale-skipped", "delayed", "skipped",
                                        "pending",   "completed", "failed",       "cancelled"};
  for (const auto& row : table) {
    for (const char* to : all) {
      const bool expected = std::find_if(row.allowed.begin(), row.allowed.end(),
                                         [&](const char* a) { return std::string(a) == to; }) != row.allowed.end();
      EXPECT_EQ(PolicyTransitionAllowed(row.from, to), expected) << row.from << " -> " << to;
    }
  }
  EXPECT_EQ(PolicyStateFor(event::kStarted), "started");
  EXPECT_EQ(PolicyStateFor(event::kDelayed), "delayed");
  EXPECT_EQ(PolicyStateFor(event::kSkipped), "delayed");
  EXPECT_EQ(PolicyStateFor(event::kScaleSkipped), "delayed");
  EXPECT_EQ(PolicyStateFor(event::kCompleted), "completed");
  EXPECT_EQ(PolicyStateFor(event::kFailed), "failed");
  EXPECT_EQ(PolicyStateFor(event::kControlPlaneStarted), "");
}

TEST(NotificationTest, DescriptionsFollowTheFirstConditionStillFalse) {
  UpgradeConfig c;
  c.cluster = "prod-1";
  c.spec.desired.version = "4.14.12";
  EXPECT_EQ(DescribeEvent(event::kStarted, c), "Cluster is currently being upgraded to version 4.14.12");
  EXPECT_EQ(DescribeEvent(event::kCompleted, c), "Cluster has been successfully upgraded to version 4.14.12");
  UpgradeHistory h;
  h.version = "4.14.12";
  h.SetCondition({"StartedNotificationSent", "True", "", "", "", "", "", ""}, "t");
  h.SetCondition({"ClusterHealthyBeforeUpgrade", "False", "", "critical alert(s) firing: X", "", "", "", ""}, "t");
  c.SetHistory(h);
  EXPECT_NE(DescribeEvent(event::kDelayed, c).find("delay as health alerts are firing"), std::string::npos);
  EXPECT_NE(DescribeEvent(event::kFailed, c).find("was cancelled during the pre-upgrade health check"), std::string::npos);
  h.SetCondition({"IsClusterUpgradable", "False", "", "cluster upgrade to version 4.14.12 on ... has been cancelled: R: M", "", "", "", ""}, "t");
  c.SetHistory(h);
  EXPECT_EQ(DescribeEvent(event::kFailed, c), "cluster upgrade to version 4.14.12 on ... has been cancelled: R: M");
  EXPECT_EQ(DescribeEvent(event::kValidationFailed, c, "version 4.14.12 not found"),
            "The upgrade to version 4.14.12 failed validation: version 4.14.12 not found");
}

}  // namespace
}  // namespace cincinnati::upgrade
