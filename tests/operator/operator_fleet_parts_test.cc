// The operator's parts apart from the operator: the fleet's typed pause over a store that
// can fail, the LOCAL config source, and the documents and gauges its API shows.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "config_api/cluster_version.h"
#include "operator/agent_client.h"
#include "operator/config_source.h"
#include "operator/fleet_pause.h"
#include "operator/operator_view.h"
#include "test_util.h"

namespace cincinnati::upgrade {
namespace {
using kube::FindMember;
using kube::TextOf;
using kube::BoolOf;
using kube::ItemsOf;

using testing::TempDir;
using testing::WriteFile;

// Flags in memory; every call fails while `broken` is set.
class MemoryFlags : public FlagStore {
 public:
  Result<std::optional<std::string>> GetFlag(const std::string& key) override {
    if (broken) return Status::IoError("state.db: disk I/O error");
    auto it = flags.find(key);
    return it == flags.end() ? std::optional<std::string>() : std::optional<std::string>(it->second);
  }
  Status SetFlag(const std::string& key, const std::string& value) override {
    if (broken || key == fail_key) return Status::IoError("state.db: disk I/O error");
    flags[key] = value;
    return Status::OK();
  }
  Status ClearFlag(const std::string& key) override {
    if (broken) return Status::IoError("state.db: disk I/O error");
    flags.erase(key);
    return Status::OK();
  }
  std::map<std::string, std::string> flags;
  bool broken = false;
  std::string fail_key;
};

TEST(FleetPausesTest, AnAdministratorsPauseHoldsEverythingUntilResumed) {
  MemoryFlags flags;
  FleetPauses pauses(flags);
  EXPECT_EQ(pauses.Current()->reason, "");
  ASSERT_TRUE(pauses.Pause("").ok());
  EXPECT_EQ(pauses.Current()->reason, "paused by an administrator");
  EXPECT_EQ(pauses.Current()->version, "");
  ASSERT_TRUE(pauses.Resume({}).ok());
  EXPECT_EQ(pauses.Current()->reason, "");
  EXPECT_TRUE(flags.flags.empty());
}

TEST(FleetPausesTest, ASecondPauseWithoutAReasonKeepsTheReasonGiven) {
  MemoryFlags flags;
  FleetPauses pauses(flags);
  ASSERT_TRUE(pauses.Pause("the network team's change window").ok());
  ASSERT_TRUE(pauses.Pause("").ok());
  EXPECT_EQ(pauses.Current()->reason, "the network team's change window");
  ASSERT_TRUE(pauses.Pause("a new reason, said").ok());
  EXPECT_EQ(pauses.Current()->reason, "a new reason, said");
  // A pause for failures keeps its reason and its version too.
  ASSERT_TRUE(pauses.Resume({}).ok());
  ASSERT_TRUE(pauses.PauseOnFailures({{"4.1.1", 2}}, 2).ok());
  ASSERT_TRUE(pauses.Pause("").ok());
  EXPECT_EQ(pauses.Current()->version, "4.1.1");
  EXPECT_EQ(pauses.Current()->reason, "2 upgrade(s) to 4.1.1 failed (fleet.failureThreshold 2)");
}

TEST(FleetPausesTest, FailuresPauseTheirVersionAndAResumeCountsOnlyNewOnes) {
  MemoryFlags flags;
  FleetPauses pauses(flags);
  auto none = pauses.PauseOnFailures({{"4.1.1", 1}}, 2);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
  auto paused = pauses.PauseOnFailures({{"4.1.0", 1}, {"4.1.1", 2}}, 2);
  ASSERT_TRUE(paused.ok() && *paused);
  EXPECT_EQ((*paused)->version, "4.1.1");
  EXPECT_EQ(pauses.Current()->reason, "2 upgrade(s) to 4.1.1 failed (fleet.failureThreshold 2)");
  EXPECT_EQ(pauses.Current()->version, "4.1.1");
  // While paused nothing more is set; a threshold of 0 never pauses.
  EXPECT_FALSE(*pauses.PauseOnFailures({{"4.1.0", 5}}, 2));
  ASSERT_TRUE(pauses.Resume({{"4.1.1", 2}}).ok());
  EXPECT_FALSE(*pauses.PauseOnFailures({{"4.1.1", 3}}, 2));  // one new failure
  EXPECT_TRUE(*pauses.PauseOnFailures({{"4.1.1", 4}}, 2));   // two new ones
  ASSERT_TRUE(pauses.Resume({{"4.1.1", 4}}).ok());
  EXPECT_FALSE(*pauses.PauseOnFailures({{"4.1.1", 100}}, 0));
}

TEST(FleetPausesTest, APauseThatCannotBeReadIsAnErrorAndAHalfWrittenOneHoldsEverything) {
  MemoryFlags flags;
  FleetPauses pauses(flags);
  flags.broken = true;
  EXPECT_EQ(pauses.Current().status().code(), Status::Code::kIoError);
  EXPECT_FALSE(pauses.PauseOnFailures({{"4.1.1", 9}}, 2).ok());
  // The version is written, the reason fails: no pause yet, and the next try completes it.
  flags.broken = false;
  flags.fail_key = "pause.reason";
  EXPECT_FALSE(pauses.PauseOnFailures({{"4.1.1", 2}}, 2).ok());
  EXPECT_EQ(pauses.Current()->reason, "");
  flags.fail_key.clear();
  ASSERT_TRUE(pauses.PauseOnFailures({{"4.1.1", 2}}, 2).ok());
  EXPECT_EQ(pauses.Current()->version, "4.1.1");
  // A resume that stops between its two writes leaves a pause of every version.
  flags.flags.erase("pause.version");
  EXPECT_EQ(pauses.Current()->version, "");
  EXPECT_NE(pauses.Current()->reason, "");
}

TEST(FleetStatusDocumentTest, AnUnreadablePauseShowsAsAPause) {
  const TimePoint now = *ParseTime("2026-01-01T12:00:00Z");
  kube::JsonValue broken = FleetStatusDocument(Status::IoError("state.db: disk I/O error"), 1, 2, now);
  EXPECT_TRUE(BoolOf(*FindMember(broken, "paused")));
  EXPECT_EQ(TextOf(*FindMember(broken, "reason")), "the fleet's pause cannot be read: state.db: disk I/O error");
  kube::JsonValue running = FleetStatusDocument(FleetPause{}, 0, 2, now);
  EXPECT_EQ(kube::WriteJson(running), R"({"paused":false,"upgrading":0,"maxParallel":2,"now":"2026-01-01T12:00:00Z"})");
  kube::JsonValue paused = FleetStatusDocument(FleetPause{"2 failed", "4.1.1"}, 3, 0, now);
  EXPECT_EQ(kube::WriteJson(paused),
            R"({"paused":true,"reason":"2 failed","version":"4.1.1","upgrading":3,"maxParallel":0,"now":"2026-01-01T12:00:00Z"})");
}

TEST(UpgradeConfigListTest, ItemsCarryWhatTheirClusterWaitsForAndAreFoundByCluster) {
  UpgradeConfig a;
  a.cluster = "prod-1";
  a.spec.upgrade_at = "2026-01-01T12:00:00Z";
  a.spec.desired = {"4.1.1", "stable-4.1", ""};
  UpgradeConfig b = a;
  b.cluster = "prod-2";
  kube::JsonValue list = UpgradeConfigList({{"prod-1", a}, {"prod-2", b}}, {{"prod-1", "the fleet is paused"}, {"prod-2", ""}});
  ASSERT_EQ(ItemsOf(*FindMember(list, "items")).size(), 2u);
  auto one = FindUpgradeConfig(list, "prod-1");
  ASSERT_TRUE(one);
  EXPECT_EQ(TextOf(*FindMember(*FindMember(*FindMember(*one, "metadata"), "annotations"), kWaitingForAnnotation)), "the fleet is paused");
  auto two = FindUpgradeConfig(list, "prod-2");
  ASSERT_TRUE(two);
  EXPECT_EQ(FindMember(*FindMember(*two, "metadata"), "annotations"), nullptr);
  EXPECT_FALSE(FindUpgradeConfig(list, "prod-3"));
  EXPECT_FALSE(FindUpgradeConfig(kube::JsonValue("not a list"), "prod-1"));
}

TEST(CollectorMetricsTest, GaugesComeFromTheHistoryAndPassesAreCountedPerCluster) {
  UpgradeConfig c;
  c.cluster = "prod-1";
  c.spec.upgrade_at = "2026-01-01T12:00:00Z";
  c.spec.desired = {"4.1.1", "stable-4.1", ""};
  c.spec.pdb_force_drain_timeout = 60;
  UpgradeConfig none = c;  // no history: no gauges
  none.cluster = "prod-2";
  c.SetHistory({"4.1.1", "4.1.0", Phase::kUpgrading, {}, "2026-01-01T12:00:05Z", "", "", ""});
  const std::string text = CollectorMetrics({{"prod-1", c}, {"prod-2", none}}, {{"prod-1", 3}, {"prod-2", 0}});
  EXPECT_NE(text.find("managed_upgrade_upgrade_scheduled{upgradeconfig_name=\"prod-1\",version=\"4.1.0\",desired_version=\"4.1.1\","
                      "phase=\"Upgrading\"} 1767268800"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("managed_upgrade_upgrade_start_timestamp{upgradeconfig_name=\"prod-1\""), std::string::npos) << text;
  EXPECT_EQ(text.find("upgradeconfig_name=\"prod-2\",version"), std::string::npos) << text;
  EXPECT_NE(text.find("upgradeoperator_reconciles_total{upgradeconfig_name=\"prod-1\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("upgradeoperator_reconciles_total{upgradeconfig_name=\"prod-2\"} 0\n"), std::string::npos) << text;
}

TEST(LocalConfigSourceTest, AnUnreadableFileKeepsItsClusterAndAnUnknownOneKeepsEveryone) {
  TempDir dir;
  const std::string good = "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\n"
                           "metadata:\n  name: osd-upgrade-config\n  labels:\n    cluster: prod-1\n"
                           "spec:\n  type: OSD\n  upgradeAt: \"2026-01-01T12:00:00Z\"\n  PDBForceDrainTimeout: 60\n"
                           "  desired:\n    version: 4.1.1\n    channel: stable-4.1\n";
  WriteFile(dir.path() / "a.yaml", good);
  WriteFile(dir.path() / "notes.txt", "not a config");
  LocalConfigSource source(dir.path().string());
  SourceRead first = source.Read();
  ASSERT_EQ(first.specs.size(), 1u);
  EXPECT_EQ(first.specs.begin()->first, "prod-1");  // from the label, not the file name
  EXPECT_FALSE(first.keep_unlisted);
  // Broken after a good read: its cluster (named by the label) is left as it is.
  WriteFile(dir.path() / "a.yaml", "spec: [");
  SourceRead broken = source.Read();
  EXPECT_TRUE(broken.specs.empty());
  EXPECT_TRUE(broken.Unreadable("prod-1"));
  EXPECT_FALSE(broken.keep_unlisted);
  // A broken file never read whole: nobody knows its cluster, nothing is deleted.
  LocalConfigSource fresh(dir.path().string());
  EXPECT_TRUE(fresh.Read().keep_unlisted);
  // A directory that cannot be listed leaves everything.
  LocalConfigSource missing((dir.path() / "missing").string());
  EXPECT_TRUE(missing.Read().Unreadable("any-cluster"));
}

// The operator reads the agent's ClusterVersion with the model the agent writes it with.
TEST(AgentSnapshotTest, TheOperatorReadsWhatTheAgentWrites) {
  config_api::ClusterVersion cv;
  cv.spec.cluster_id = "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a";
  cv.spec.channel = "stable-4.13";
  cv.spec.desired_update = config_api::DesiredUpdate{"4.13.1", "quay.io/x@sha256:1", false, ""};
  cv.status.desired = {"4.13.0", "quay.io/x@sha256:0", "", {}, false};
  cv.status.history = {{"Partial", "2026-01-01T12:00:00Z", "", "4.13.1", "quay.io/x@sha256:1", false, ""},
                       {"Completed", "2025-12-01T12:00:00Z", "2025-12-01T13:00:00Z", "4.13.0", "quay.io/x@sha256:0", true, ""}};
  cv.status.available_updates = {{"4.13.2", "quay.io/x@sha256:2", "", {}, false}};
  config_api::ConditionalUpdateStatus risky;
  risky.release = {"4.14.0", "quay.io/x@sha256:3", "", {}, false};
  cv.status.conditional_updates = {risky};
  cv.SetCondition({"Failing", "True", "ClusterOperatorDegraded", "etcd is degraded", "2026-01-01T12:05:00Z"});
  cv.SetCondition({"Progressing", "True", "", "Working towards 4.13.1", "2026-01-01T12:00:00Z"});
  auto snapshot = ReadAgentSnapshot(kube::WriteJson(config_api::ToJson(cv)), R"({"items":[]})");
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().message();
  EXPECT_EQ(snapshot->cluster_id, cv.spec.cluster_id);
  EXPECT_EQ(snapshot->channel, "stable-4.13");
  EXPECT_EQ(snapshot->desired_update.version, "4.13.1");
  EXPECT_EQ(snapshot->status_desired.image, "quay.io/x@sha256:0");
  ASSERT_EQ(snapshot->history.size(), 2u);
  EXPECT_EQ(snapshot->history[1].completion_time, "2025-12-01T13:00:00Z");
  ASSERT_EQ(snapshot->available_updates.size(), 1u);
  EXPECT_EQ(snapshot->available_updates[0].version, "4.13.2");
  ASSERT_EQ(snapshot->conditional_updates.size(), 1u);
  EXPECT_EQ(snapshot->conditional_updates[0].version, "4.14.0");
  EXPECT_EQ(snapshot->failing.reason, "ClusterOperatorDegraded");
  EXPECT_EQ(snapshot->progressing.message, "Working towards 4.13.1");
  EXPECT_EQ(snapshot->upgradeable.status, "");  // absent
  // A wrong type is an error naming the document and the field.
  auto bad = ReadAgentSnapshot(R"({"status":{"desired":{"version":4}}})", R"({"items":[]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("status.desired.version: must be a string"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace cincinnati::upgrade
