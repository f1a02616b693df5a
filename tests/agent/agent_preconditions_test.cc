// Preconditions of an update, with the cluster-version operator's reasons
// and messages, and our own `previous` check.
#include <gtest/gtest.h>

#include "agent/preconditions.h"

namespace cincinnati::agent {
namespace {

ClusterVersion At(const std::string& version, std::vector<std::string> history_versions = {}) {
  ClusterVersion cv;
  cv.spec.channel = "stable-4.2";
  cv.status.desired.version = version;
  cv.status.desired.image = "quay.io/ocp@sha256:" + version;
  cv.status.history.push_back({"Completed", "t", "t", version, cv.status.desired.image, true, ""});
  for (const auto& v : history_versions) cv.status.history.push_back({"Completed", "t", "t", v, "quay.io/ocp@sha256:" + v, true, ""});
  cv.SetCondition({"RetrievedUpdates", "True", "", "", "t"});
  return cv;
}

std::vector<Version> Vs(std::vector<std::string> texts) {
  std::vector<Version> out;
  for (const auto& t : texts) out.push_back(*Version::Parse(t));
  return out;
}

// The failures of the named precondition, as "reason: message".
std::vector<std::string> Of(const std::vector<PreconditionFailure>& failures, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& f : failures) {
    if (f.name == name) out.push_back(f.reason + ": " + f.message);
  }
  return out;
}

TEST(PreconditionsTest, RollbackOnlyToThePreviousZStreamRelease) {
  const std::vector<Version> prev = Vs({"4.1.1"});
  EXPECT_TRUE(Of(RunPreconditions(At("4.1.1", {"4.1.0"}), "4.1.0", prev), "ClusterVersionRollback").empty());
  EXPECT_EQ(Of(RunPreconditions(At("4.1.1", {"4.1.0"}), "4.0.9", prev), "ClusterVersionRollback"),
            std::vector<std::string>{"LowDesiredVersion: 4.0.9 is less than the current target 4.1.1, and the only "
                                     "supported rollback is to the cluster's previous version 4.1.0 (quay.io/ocp@sha256:4.1.0)"});
  EXPECT_EQ(Of(RunPreconditions(At("4.1.1", {"4.0.5"}), "4.0.5", prev), "ClusterVersionRollback"),
            std::vector<std::string>{"LowDesiredVersion: 4.0.5 is less than the current target 4.1.1 and matches the "
                                     "cluster's previous version, but rollbacks that change major or minor versions are not "
                                     "recommended"});
  EXPECT_EQ(Of(RunPreconditions(At("4.1.1"), "4.1.0", prev), "ClusterVersionRollback"),
            std::vector<std::string>{"LowDesiredVersion: 4.1.0 is less than the current target 4.1.1, and the cluster "
                                     "has no previous Semantic Version"});
  // A rollback is not asked to be listed in the older release's `previous`.
  EXPECT_TRUE(Of(RunPreconditions(At("4.1.1", {"4.1.0"}), "4.1.0", {}), "ReleasePrevious").empty());
}

TEST(PreconditionsTest, GiantHops) {
  auto hop = [](const std::string& from, const std::string& to) {
    return Of(RunPreconditions(At(from), to, Vs({from})), "ClusterVersionGiantHop");
  };
  EXPECT_TRUE(hop("4.1.1", "4.2.0").empty());
  EXPECT_EQ(hop("4.1.1", "4.3.0"),
            std::vector<std::string>{"MultipleMinorVersionsUpdate: 4.3.0 is more than one minor version beyond the "
                                     "current target 4.1.1 (4.3 > 4.(1+1)), and only updates within the current minor "
                                     "version or to the next minor version are supported."});
  EXPECT_TRUE(hop("4.18.3", "5.0.0").empty());
  EXPECT_EQ(hop("4.18.3", "5.1.0"),
            std::vector<std::string>{"MajorVersionUpdate: 5.1.0 has a larger major version than the current target "
                                     "4.18.3 (5 > 4), and only updates within the current major version or to 5.0 are "
                                     "supported."});
  EXPECT_EQ(hop("4.18.3", "6.0.0"),
            std::vector<std::string>{"MajorVersionUpdate: 6.0.0 has a larger major version than the current target "
                                     "4.18.3 (6 > 4), and only updates within the current major version are supported."});
}

TEST(PreconditionsTest, UpgradeableFalseBlocksMinorUpdatesOnly) {
  ClusterVersion cv = At("4.1.1");
  cv.SetCondition({"Upgradeable", "False", "AdminAckRequired", "Kubernetes 1.26 removes APIs.", "t"});
  EXPECT_EQ(Of(RunPreconditions(cv, "4.2.0", Vs({"4.1.1"})), "ClusterVersionUpgradeable"),
            std::vector<std::string>{"AdminAckRequired: Kubernetes 1.26 removes APIs."});
  EXPECT_TRUE(Of(RunPreconditions(cv, "4.1.2", Vs({"4.1.1"})), "ClusterVersionUpgradeable").empty());
  // A retarget while a minor update is in progress: a warning.
  ClusterVersion updating = At("4.2.0");
  updating.status.history[0].state = "Partial";
  updating.status.history.push_back({"Completed", "t", "t", "4.1.1", "quay.io/ocp@sha256:4.1.1", true, ""});
  updating.SetCondition({"Upgradeable", "False", "AdminAckRequired", "m", "t"});
  updating.SetCondition({"Progressing", "True", "", "", "t"});
  auto failures = RunPreconditions(updating, "4.2.1", Vs({"4.2.0"}));
  ASSERT_EQ(Of(failures, "ClusterVersionUpgradeable"),
            std::vector<std::string>{"MinorVersionClusterUpdateInProgress: Retarget to 4.2.1 while a minor version update "
                                     "from 4.1.1 to 4.2.0 is in progress"});
  EXPECT_FALSE(Summarize(failures, false)->blocked);
}

TEST(PreconditionsTest, RecommendedIsAWarning) {
  ClusterVersion cv = At("4.1.1");
  cv.status.available_updates.push_back({"4.1.2", "img", "", {}, false});
  EXPECT_TRUE(RunPreconditions(cv, "4.1.2", Vs({"4.1.1"})).empty());

  ConditionalUpdateStatus risky;
  risky.release.version = "4.2.0";
  risky.conditions.push_back({"Recommended", "False", "IngressRisk", "Ingress may drop connections.", "t"});
  cv.status.conditional_updates.push_back(risky);
  auto failures = RunPreconditions(cv, "4.2.0", Vs({"4.1.1"}));
  EXPECT_EQ(Of(failures, "ClusterVersionRecommendedUpdate"),
            std::vector<std::string>{"IngressRisk: Update from 4.1.1 to 4.2.0 is not recommended:\n\nIngress may drop "
                                     "connections."});
  auto summary = Summarize(failures, false);
  ASSERT_TRUE(summary.has_value());
  EXPECT_FALSE(summary->blocked);
  EXPECT_EQ(summary->message, "Precondition \"ClusterVersionRecommendedUpdate\" failed because of \"IngressRisk\": Update "
                              "from 4.1.1 to 4.2.0 is not recommended:\n\nIngress may drop connections.");

  EXPECT_EQ(Of(RunPreconditions(cv, "4.1.5", Vs({"4.1.1"})), "ClusterVersionRecommendedUpdate"),
            std::vector<std::string>{"UnknownUpdate: RetrievedUpdates=True (), so the update from 4.1.1 to 4.1.5 is "
                                     "probably neither recommended nor supported."});
  cv.spec.channel = "";
  EXPECT_EQ(Of(RunPreconditions(cv, "4.1.5", Vs({"4.1.1"})), "ClusterVersionRecommendedUpdate"),
            std::vector<std::string>{"NoChannel: Configured channel is unset, so the recommended status of updating from "
                                     "4.1.1 to 4.1.5 is unknown."});
}

TEST(PreconditionsTest, ThePayloadMustDeclareTheCurrentVersionAndForceOverrides) {
  ClusterVersion cv = At("4.1.1");
  cv.status.available_updates.push_back({"4.1.2", "img", "", {}, false});
  auto failures = RunPreconditions(cv, "4.1.2", Vs({"4.1.0"}));
  EXPECT_EQ(Of(failures, "ReleasePrevious"),
            std::vector<std::string>{"NotAnUpdateFromCurrentVersion: the release 4.1.2 does not declare an update from "
                                     "the current version 4.1.1: its release-metadata previous is [4.1.0]"});
  auto blocked = Summarize(failures, false);
  ASSERT_TRUE(blocked.has_value());
  EXPECT_TRUE(blocked->blocked);
  EXPECT_EQ(blocked->reason, "UpgradePreconditionCheckFailed");

  // Two failures: listed; forced: a warning that says so.
  auto two = RunPreconditions(cv, "4.3.0", Vs({"4.1.0"}));
  auto forced = Summarize(two, true);
  ASSERT_TRUE(forced.has_value());
  EXPECT_FALSE(forced->blocked);
  EXPECT_EQ(forced->message.rfind("Forced through blocking failures: Multiple precondition checks failed:\n* Precondition "
                                  "\"ClusterVersionGiantHop\" failed because of \"MultipleMinorVersionsUpdate\"",
                                  0),
            0u)
      << forced->message;
  EXPECT_NE(forced->message.find("\n* Precondition \"ReleasePrevious\""), std::string::npos);
  EXPECT_FALSE(Summarize({}, false).has_value());
}

}  // namespace
}  // namespace cincinnati::agent
