// The upgrade operator end to end for one cluster (the fixture: operator_e2e_fixture.h):
// the schedule and its alert gate, validation, the start window, kill -9 at any step, a
// time scale, and a remote policy.
#include <gtest/gtest.h>

#include <optional>
#include <set>

#include "operator/scheduler.h"
#include "operator_e2e_fixture.h"

namespace cincinnati::upgrade::e2e {
namespace {
using kube::TextOf;
using kube::BoolOf;
using kube::ItemsOf;

TEST_F(OperatorE2ETest, AScheduledUpgradeWaitsForItsTimeAndForTheAlertToClear) {
  Cluster& c = AddCluster("prod-1");
  WaitUntilOffered(c);
  Alert(true);
  // Whole seconds, as upgradeAt is written.
  const auto at = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now() + 6s);
  WriteUpgradeConfig("prod-1", "4.1.1", at);
  StartOperator();
  ASSERT_TRUE(WaitFor([&] { return Phase("prod-1") == "Pending"; })) << operator_->log();
  EXPECT_LT(std::chrono::system_clock::now(), at);

  ASSERT_TRUE(WaitFor([&] {
    return ConditionMessage("prod-1", "ClusterHealthyBeforeUpgrade") == "critical alert(s) firing: TestCriticalAlert";
  }, 30s)) << kube::WriteJson(Config("prod-1"), 2) << operator_->log();
  EXPECT_GE(std::chrono::system_clock::now(), at);
  EXPECT_EQ(Phase("prod-1"), "Upgrading");
  JsonValue cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  EXPECT_TRUE(At(cv, {"spec", "desiredUpdate"}).is_null()) << kube::WriteJson(cv, 2);
  EXPECT_EQ(Metric(R"(upgradeoperator_healthcheck_failed{upgradeconfig_name="prod-1",state="Upgrading",version="4.1.0",reason="critical_alerts_firing"})"), 1);
  EXPECT_EQ(receiver_.Count("prod-1", "control_plane_started"), 0);

  Alert(false);
  bool saw_window = false;
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& s : Silences()) {
      saw_window |= TextOf(At(s, {"comment"})) == "Silence for OSD control plane upgrade to version 4.1.1" &&
                    TextOf(At(s, {"status", "state"})) == "active";
    }
    return Phase("prod-1") == "Upgraded";
  }, 90s)) << kube::WriteJson(Config("prod-1"), 2) << operator_->log();
  EXPECT_TRUE(saw_window) << "the control plane's silence was never seen active";

  const JsonValue config = Config("prod-1");
  const JsonValue& entry = ItemsOf(At(config, {"status", "history"}))[0];
  EXPECT_EQ(TextOf(At(entry, {"version"})), "4.1.1");
  EXPECT_EQ(TextOf(At(entry, {"precedingVersion"})), "4.1.0");
  EXPECT_FALSE(TextOf(At(entry, {"completeTime"})).empty());
  const auto& conditions = ItemsOf(At(entry, {"conditions"}));
  ASSERT_EQ(conditions.size(), std::size(kOsdConditions)) << kube::WriteJson(entry, 2);
  for (size_t i = 0; i < conditions.size(); ++i) {
    // Newest-added first: the last step's condition leads.
    EXPECT_EQ(TextOf(At(conditions[i], {"type"})), kOsdConditions[std::size(kOsdConditions) - 1 - i]);
    EXPECT_EQ(TextOf(At(conditions[i], {"status"})), "True") << TextOf(At(conditions[i], {"type"}));
  }
  cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  EXPECT_EQ(TextOf(At(ItemsOf(At(cv, {"status", "history"}))[0], {"state"})), "Completed");
  EXPECT_EQ(TextOf(At(ItemsOf(At(cv, {"status", "history"}))[0], {"version"})), "4.1.1");

  int control_plane = 0, criticals = 0;
  for (const auto& s : Silences()) {
    const std::string comment = TextOf(At(s, {"comment"}));
    control_plane += comment == "Silence for OSD control plane upgrade to version 4.1.1";
    criticals += comment == "Silence for critical alerts during OSD control plane upgrade to version 4.1.1";
    if (comment.find("4.1.1") != std::string::npos) {
      EXPECT_EQ(TextOf(At(s, {"status", "state"})), "expired") << comment;
    }
    EXPECT_EQ(TextOf(At(s, {"createdBy"})), "managed-upgrade-operator");
  }
  EXPECT_EQ(control_plane, 1);
  EXPECT_EQ(criticals, 1);
  // The operator's own gauges live in its memory: read them before the restart.
  EXPECT_EQ(Metric(R"(upgradeoperator_upgradeconfig_validation_failed{upgradeconfig_name="prod-1"})"), 0);
  RestartOperatorAndWaitForAPass("prod-1");  // another pass: nothing is sent again
  for (const char* event : kOnceEach) EXPECT_EQ(receiver_.Count("prod-1", event), 1) << event;
  // The reference's collector gauges, from the config.
  EXPECT_GT(Metric(R"(managed_upgrade_condition_notification_complete_timestamp{upgradeconfig_name="prod-1",version="4.1.0",desired_version="4.1.1",condition="True"})"), 0);
  EXPECT_EQ(Metric(R"(managed_upgrade_upgrade_pdb_timeout_minutes{upgradeconfig_name="prod-1",version="4.1.0",desired_version="4.1.1"})"), 60);
  EXPECT_GT(Metric(R"(managed_upgrade_upgrade_complete_timestamp{upgradeconfig_name="prod-1",version="4.1.0",desired_version="4.1.1",phase="Upgraded"})"), 0);

  auto listed = testing::RunCincinnati("upgrades list --operator " + operator_->url(""));
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("prod-1"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("Upgraded"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("CompletedNotificationSent"), std::string::npos) << listed.out;
  auto status = testing::RunCincinnati("upgrades status prod-1 --operator " + operator_->url(""));
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("ClusterHealthyBeforeUpgrade"), std::string::npos) << status.out;
}

// A target the cluster does not offer, or one older than the current version, fails
// validation with the reference's message and the validation metric; nothing starts.
TEST_F(OperatorE2ETest, ATargetNotOfferedOrOlderFailsValidation) {
  Cluster& c = AddCluster("prod-1");
  WaitUntilOffered(c);
  WriteUpgradeConfig("prod-1", "4.1.5", std::chrono::system_clock::now());
  StartOperator();
  const std::string metric = R"(upgradeoperator_upgradeconfig_validation_failed{upgradeconfig_name="prod-1"})";
  ASSERT_TRUE(WaitFor([&] { return Metric(metric) == 1; })) << operator_->log();
  EXPECT_EQ(Phase("prod-1"), "Pending");
  // The metric is set before the line is logged: wait for the line too.
  EXPECT_TRUE(WaitFor([&] {
    return operator_->log().find("version 4.1.5 not found in clusterversion available or conditional updates") !=
           std::string::npos;
  })) << operator_->log();
  auto status = testing::RunCincinnati("upgrades status prod-1 --operator " + operator_->url(""));
  EXPECT_NE(status.out.find("version 4.1.5 not found in clusterversion available or conditional updates"), std::string::npos)
      << status.out;
  EXPECT_TRUE(WaitFor([&] { return receiver_.Count("prod-1", "validation_failed") == 1; }));

  WriteUpgradeConfig("prod-1", "4.0.9", std::chrono::system_clock::now());  // replaces the config: it never started
  ASSERT_TRUE(WaitFor([&] {
    const JsonValue config = Config("prod-1");
    return TextOf(At(config, {"metadata", "annotations", "upgrade.cincinnati.openshift.io/waiting-for"})) ==
           "downgrades to desired version 4.0.9 from 4.1.0 are unsupported";
  })) << kube::WriteJson(Config("prod-1"), 2);
  EXPECT_EQ(Metric(metric), 1);
  JsonValue cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  EXPECT_TRUE(At(cv, {"spec", "desiredUpdate"}).is_null());
}

// An upgrade that could not start within upgradeAt + the upgrade window fails, and says so
// once.
TEST_F(OperatorE2ETest, AStartWindowBreachFailsTheUpgradeAndNotifiesOnce) {
  Cluster& c = AddCluster("prod-1");
  WaitUntilOffered(c);
  WriteUpgradeConfig("prod-1", "4.1.1", std::chrono::system_clock::now() - 3h);
  StartOperator();
  ASSERT_TRUE(WaitFor([&] { return Phase("prod-1") == "Failed"; })) << kube::WriteJson(Config("prod-1"), 2) << operator_->log();
  EXPECT_EQ(Metric(R"(upgradeoperator_upgrade_window_breached{upgradeconfig_name="prod-1"})"), 1);
  RestartOperatorAndWaitForAPass("prod-1");
  EXPECT_EQ(receiver_.Count("prod-1", "failed"), 1);
  EXPECT_EQ(receiver_.Count("prod-1", "started"), 0);
  JsonValue cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  EXPECT_TRUE(At(cv, {"spec", "desiredUpdate"}).is_null());
}

// kill -9 of the operator at random moments of an upgrade: every restart resumes at the
// first unfinished step, and no side effect happens twice (silence, webhook, command).
TEST_F(OperatorE2ETest, KillNineAtAnyStepRepeatsNoSideEffect) {
  Cluster& c = AddCluster("prod-1");
  WaitUntilOffered(c);
  WriteUpgradeConfig("prod-1", "4.1.1", std::chrono::system_clock::now());
  std::mt19937 rng(1515);
  StartOperator();
  int kills = 0;
  for (int round = 0; round < 12 && Phase("prod-1") != "Upgraded"; ++round, ++kills) {
    // Short enough that an upgrade under sanitizers (slower start, same step times) still
    // sees several kills before it ends.
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 180));
    operator_->Kill();
    StartOperator();
  }
  ASSERT_TRUE(WaitFor([&] { return Phase("prod-1") == "Upgraded"; }, 90s)) << kube::WriteJson(Config("prod-1"), 2) << operator_->log();
  EXPECT_GE(kills, 2) << "the upgrade ended before the operator was killed a few times";
  RestartOperatorAndWaitForAPass("prod-1");
  // At most once each: a kill between a notification's claim and its sending loses it
  // (the ledger's rule), so each kill may cost one.
  int received = 0;
  for (const char* event : kOnceEach) {
    EXPECT_LE(receiver_.Count("prod-1", event), 1) << event;
    received += receiver_.Count("prod-1", event);
  }
  EXPECT_GE(received, static_cast<int>(std::size(kOnceEach)) - kills);
  int control_plane = 0;
  for (const auto& s : Silences()) control_plane += TextOf(At(s, {"comment"})) == "Silence for OSD control plane upgrade to version 4.1.1";
  EXPECT_EQ(control_plane, 1);
  JsonValue cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  EXPECT_EQ(ItemsOf(At(cv, {"status", "history"})).size(), 2u) << kube::WriteJson(cv, 2);
}

// The operator's clock can start anywhere and run faster than real time: an upgrade
// scheduled an hour ahead starts within seconds, at its upgradeAt in operator time.
TEST_F(OperatorE2ETest, ATimeScaleRunsHoursOfScheduleInSeconds) {
  Cluster& c = AddCluster("prod-1");
  WaitUntilOffered(c);
  const auto start = std::chrono::system_clock::now() - 24h;  // yesterday, in operator time
  WriteUpgradeConfig("prod-1", "4.1.1", start + 1h);
  StartOperator("", {"--testing.now", Rfc3339(start), "--testing.time-scale", "1200"});
  ASSERT_TRUE(WaitFor([&] { return Phase("prod-1") == "Pending"; })) << operator_->log();
  const auto real_start = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor([&] { return Phase("prod-1") == "Upgraded"; }, 60s)) << kube::WriteJson(Config("prod-1"), 2) << operator_->log();
  EXPECT_LT(std::chrono::steady_clock::now() - real_start, 40s);
  const JsonValue config = Config("prod-1");
  const std::string started = TextOf(At(ItemsOf(At(config, {"status", "history"}))[0], {"startTime"}));
  EXPECT_GE(started, Rfc3339(start + 1h)) << started;   // not before upgradeAt ...
  EXPECT_LT(started, Rfc3339(start + 2h)) << started;   // ... and in operator time, not today
}

// While the control plane updates, the operator watches the agent: it sees the agent's
// history say Completed at once, although its next pass is an hour away, and across
// the agent's hand-over to its successor (the release carries the agent's own
// manifest). Meanwhile a client reading the agent's ClusterVersion every 10 ms is never
// refused and never gets an empty document: the listening socket passes to the
// successor. Both moments are taken on this test's clock, by two pollers.
class OperatorHandOverE2ETest : public OperatorE2ETest {
 protected:
  void SetUp() override {
    agents_hand_over_ = true;
    OperatorE2ETest::SetUp();
  }
};

TEST_F(OperatorHandOverE2ETest, AFinishedControlPlaneIsNoticedAtOnceNotAnIntervalLater) {
  Cluster& c = AddCluster("prod-1");
  WaitUntilOffered(c);
  const std::string cv_url = c.agent->url("/apis/config.openshift.io/v1/clusterversions/version");
  std::atomic<bool> done{false};
  std::atomic<int> polls{0};
  std::mutex mu;
  std::vector<std::string> failures;
  std::set<std::string> pids;
  std::optional<std::chrono::steady_clock::time_point> completed_seen;
  std::thread poller([&] {
    while (!done) {
      const http::Result r = Get(cv_url);
      ++polls;
      std::lock_guard lock(mu);
      if (r.status != 200 || r.body.empty()) {
        failures.push_back(r.error.empty() ? "status " + std::to_string(r.status) : r.error);
      } else {
        const JsonValue cv = Json(r.body);
        const JsonValue& history = At(cv, {"status", "history"});
        if (!completed_seen && history.is_array() && !ItemsOf(history).empty() && TextOf(At(ItemsOf(history)[0], {"state"})) == "Completed" &&
            TextOf(At(ItemsOf(history)[0], {"version"})) == "4.1.1") {
          completed_seen = std::chrono::steady_clock::now();
        }
      }
      const http::Result progress = Get(c.agent->url("/apis/agent.cincinnati.openshift.io/v1/updateprogress"));
      if (progress.ok()) {
        const JsonValue document = Json(progress.body);
        const JsonValue& pid = At(document, {"agentPid"});
        if (!pid.is_null()) pids.insert(kube::WriteJson(pid));
      }
      std::this_thread::sleep_for(10ms);  // the client's pace, not a wait for an event
    }
  });
  WriteUpgradeConfig("prod-1", "4.1.1", std::chrono::system_clock::now() - 1min);
  StartOperator("", {"--interval", "3600"});
  auto condition = [&]() -> JsonValue {
    const JsonValue config = Config("prod-1");
    const JsonValue& history = At(config, {"status", "history"});
    if (!history.is_array() || ItemsOf(history).empty()) return JsonValue();
    for (const auto& item : ItemsOf(At(ItemsOf(history)[0], {"conditions"}))) {
      if (TextOf(At(item, {"type"})) == "ControlPlaneUpgraded" && TextOf(At(item, {"status"})) == "True") return item;
    }
    return JsonValue();
  };
  const bool noticed = WaitFor([&] { return !condition().is_null(); }, 120s);
  const auto noticed_at = std::chrono::steady_clock::now();
  done = true;
  poller.join();
  ASSERT_TRUE(noticed) << kube::WriteJson(Config("prod-1"), 2) << operator_->log();
  std::lock_guard lock(mu);
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << polls << " reads failed, the first: " << failures.front();
  EXPECT_GE(pids.size(), 2u) << "the polls did not span the agent's hand-over";
  ASSERT_TRUE(completed_seen.has_value()) << "the poller never saw the agent's history say Completed";
  const auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(noticed_at - *completed_seen);
  std::cerr << polls << " reads of the agent, none refused; the agent's Completed seen by the operator " << delay.count()
            << " ms after the poller saw it, across " << pids.size() << " agent processes\n";
  EXPECT_LE(delay, 2s);  // an hour without the watch; 51 s when the watch waited for the next pass
  EXPECT_EQ(receiver_.Count("prod-1", "control_plane_finished"), 1);
}

// The remote policy source: the operator finds the cluster by its ID, makes its config
// from the policy (channel inferred, upgradeAt = next_run, the drain grace period), runs
// it, and moves the policy's state along the reference's transitions.
TEST_F(OperatorE2ETest, ARemotePolicyDrivesTheUpgradeAndHearsHowItWent) {
  Cluster& c = AddCluster("prod-1");
  WaitUntilOffered(c);
  JsonValue cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  PolicyServiceStandIn ocm(TextOf(At(cv, {"spec", "clusterID"})), "4.1.1", Rfc3339(std::chrono::system_clock::now() + 60s));
  // 30 operator seconds a real one: the source is read every 2 s, the policy runs in 2 s.
  StartOperator("configManager: {source: OCM, ocmBaseUrl: \"" + ocm.url() + "\", watchInterval: 1}\n",
                {"--testing.time-scale", "30", "--interval", "30"});
  ASSERT_TRUE(WaitFor([&] { return Phase("prod-1") != ""; })) << operator_->log();
  const JsonValue config = Config("prod-1");
  EXPECT_EQ(TextOf(At(config, {"spec", "desired", "channel"})), "stable-4.1");
  EXPECT_EQ(TextOf(At(config, {"spec", "PDBForceDrainTimeout"})), "30");
  EXPECT_TRUE(BoolOf(At(config, {"spec", "capacityReservation"})));
  // Started; then a skipped capacity step (no hook) reads as delayed; then completed,
  // which the operator sets at its last step, after the health check. (The phase is not
  // polled: the completed policy removes the config within milliseconds of Upgraded.)
  ASSERT_TRUE(WaitFor([&] { return !ocm.states().empty() && ocm.states().back() == "completed"; }, 60s))
      << operator_->log();
  EXPECT_EQ(ocm.states(), (std::vector<std::string>{"started", "delayed", "completed"}));
  cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  EXPECT_EQ(TextOf(At(cv, {"status", "desired", "version"})), "4.1.1");
  EXPECT_EQ(TextOf(At(ItemsOf(At(cv, {"status", "history"}))[0], {"state"})), "Completed");
  // The completed policy asks for nothing more: the config goes at the next sync.
  ASSERT_TRUE(WaitFor([&] { return Get(operator_->url(std::string(kConfigs) + "/prod-1")).status == 404; }, 30s)) << operator_->log();
}

}  // namespace
}  // namespace cincinnati::upgrade::e2e
