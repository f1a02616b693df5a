// The upgrade operator's reconcile pass driven through fake ports: every dependency (the
// cluster's agent, Prometheus alerts, Alertmanager windows, webhooks, hooks) is a small
// in-memory object the test sets and inspects, each can fail, and time is a value the
// test moves. What the end-to-end tests show with real processes, these show for every
// port's failure, in milliseconds and without a single wait.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "operator_fakes.h"
#include "operator/fleet_hold.h"
#include "operator/notifications.h"
#include "operator/operator_config.h"
#include "operator/operator_metrics.h"
#include "operator/ports.h"
#include "operator/reconciler.h"
#include "operator/state_store.h"
#include "operator/upgrade_config.h"
#include "test_util.h"

namespace cincinnati::upgrade {
namespace {

using namespace fakes;
using std::chrono::minutes;
using std::chrono::seconds;

class OperatorPortsTest : public ::testing::Test {
 protected:
  OperatorPortsTest() {
    auto store = StateStore::Open((dir_.path() / "state.db").string());
    EXPECT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    settings_.control_plane_criticals = {"etcdMembersDown"};
    config_.cluster = "prod-1";
    config_.spec.upgrade_at = "2026-01-01T12:00:00Z";
    config_.spec.desired = {"4.1.1", "stable-4.1", ""};
    now_ = *ParseTime("2026-01-01T12:00:00Z");
  }
  void MakeNotifications() {
    std::vector<std::unique_ptr<Notifier>> notifiers;
    notifiers.push_back(std::make_unique<RecordingNotifier>(sent_, webhook_down_));
    notifications_ = std::make_unique<NotificationCenter>(*store_, metrics_, std::move(notifiers));
  }
  // One pass at the current time, as the operator runs it.
  PassResult Pass() {
    if (!notifications_) MakeNotifications();
    PassContext pass{settings_, *notifications_, metrics_, now_, now_, 1.0, seconds(60),
                     [this](const UpgradeConfig&) { return hold_; }};
    ClusterPorts ports{&agent_, &alerts_, &windows_, nullptr, nullptr, &hooks_};
    return ReconcileOnce(config_, ports, pass);
  }
  // Passes until the phase is `phase` (at most `limit` passes, time moving a minute each).
  bool PassUntil(Phase phase, int limit = 40) {
    for (int i = 0; i < limit; ++i) {
      if (Current() == phase) return true;
      Pass();
      now_ += minutes(1);
    }
    return Current() == phase;
  }
  Phase Current() const { return config_.history.empty() ? Phase::kNew : config_.history.front().phase; }
  int Sent(std::string_view event) const {
    int n = 0;
    for (const auto& s : sent_) n += s.event == event;
    return n;
  }
  std::string Condition(const std::string& type) const {
    if (config_.history.empty()) return "";
    const UpgradeCondition* c = config_.history.front().FindCondition(type);
    return c ? c->status : "";
  }
  double Gauge(const std::string& name, const Labels& labels) const {
    double value = -1;
    metrics_.Get(name, labels, &value);
    return value;
  }

  testing::TempDir dir_;
  std::unique_ptr<StateStore> store_;
  OperatorConfig settings_;
  GaugeTable metrics_;
  std::vector<Notification> sent_;
  bool webhook_down_ = false;
  std::unique_ptr<NotificationCenter> notifications_;
  FakeAgent agent_;
  FakeAlerts alerts_;
  FakeWindows windows_;
  FakeHooks hooks_;
  std::string hold_;
  UpgradeConfig config_;
  TimePoint now_;
};

TEST_F(OperatorPortsTest, AnUpgradeGoesThroughEveryStepOnceAndEachSideEffectHappensOnce) {
  ASSERT_TRUE(PassUntil(Phase::kUpgrading));
  EXPECT_EQ(agent_.snapshot.desired_update.version, "4.1.1");
  // The control plane's window: a silence for its alerts and one for the critical ones.
  ASSERT_EQ(windows_.Active(), 2);
  EXPECT_EQ(windows_.silences[0].comment, "Silence for OSD control plane upgrade to version 4.1.1");
  EXPECT_EQ(windows_.silences[1].comment, "Silence for critical alerts during OSD control plane upgrade to version 4.1.1");
  EXPECT_EQ(windows_.silences[0].created_by, "managed-upgrade-operator");
  EXPECT_EQ(Condition("UpgradeCommenced"), "True");
  EXPECT_EQ(Condition("ControlPlaneUpgraded"), "False");
  // The agent is told once, however many passes wait for it.
  for (int i = 0; i < 5; ++i) Pass();
  EXPECT_EQ(agent_.commands, 1);
  EXPECT_EQ(windows_.created, 2);
  agent_.Progress();
  Pass();
  EXPECT_EQ(Current(), Phase::kUpgrading);
  agent_.Complete();
  ASSERT_TRUE(PassUntil(Phase::kUpgraded, 5));
  EXPECT_EQ(windows_.Active(), 0);
  for (std::string_view e : {event::kStarted, event::kControlPlaneStarted, event::kControlPlaneFinished,
                             event::kWorkersFinished, event::kCompleted}) {
    EXPECT_EQ(Sent(e), 1) << e;
  }
  // Later passes change nothing and send nothing.
  const UpgradeConfig done = config_;
  const size_t notifications = sent_.size();
  for (int i = 0; i < 3; ++i) Pass();
  EXPECT_EQ(config_, done);
  EXPECT_EQ(sent_.size(), notifications);
}

// kill -9 after the agent was commanded and before the operator saved it: the stored
// config still says Pending, and the cluster may already run the target. The upgrade
// goes on to Upgraded (validation would refuse "desired matches current" forever),
// without a second command, and each event is sent once.
TEST_F(OperatorPortsTest, ACommandNotYetSavedWhenTheOperatorDiedIsTakenUpAgain) {
  ASSERT_TRUE(PassUntil(Phase::kPending));
  const UpgradeConfig saved = config_;
  ASSERT_TRUE(PassUntil(Phase::kUpgrading));
  ASSERT_EQ(agent_.commands, 1);
  config_ = saved;  // what the store held when the operator died
  agent_.Progress();  // the agent went on and finished meanwhile
  agent_.Complete();
  ASSERT_TRUE(PassUntil(Phase::kUpgraded, 5));
  EXPECT_EQ(agent_.commands, 1);
  for (std::string_view e : {event::kStarted, event::kControlPlaneStarted, event::kCompleted}) {
    EXPECT_EQ(Sent(e), 1) << e;
  }
}

TEST_F(OperatorPortsTest, AnUnreachableAgentIsAnErrorThatChangesNothing) {
  agent_.reachable = false;
  const UpgradeConfig before = config_;
  PassResult r = Pass();
  EXPECT_FALSE(r.error.ok());
  EXPECT_NE(r.error.message().find("connection refused"), std::string::npos) << r.error.message();
  EXPECT_EQ(r.note, "the cluster's agent cannot be read");
  EXPECT_EQ(config_, before);
  agent_.reachable = true;
  EXPECT_TRUE(PassUntil(Phase::kUpgrading));
}

TEST_F(OperatorPortsTest, ACommandTheAgentRefusesIsRetriedUntilItIsTaken) {
  agent_.refuse_commands = true;
  ASSERT_TRUE(PassUntil(Phase::kUpgrading));
  for (int i = 0; i < 3; ++i) {
    PassResult r = Pass();
    EXPECT_FALSE(r.error.ok());
    EXPECT_NE(r.error.message().find("HTTP 503"), std::string::npos) << r.error.message();
  }
  EXPECT_TRUE(agent_.snapshot.desired_update.version.empty());
  EXPECT_EQ(Sent(event::kControlPlaneStarted), 1);  // sent before the command, once
  agent_.refuse_commands = false;
  Pass();
  EXPECT_EQ(agent_.snapshot.desired_update.version, "4.1.1");
  EXPECT_EQ(Condition("UpgradeCommenced"), "True");
  EXPECT_EQ(Sent(event::kControlPlaneStarted), 1);
}

TEST_F(OperatorPortsTest, ACriticalAlertHoldsTheStartUntilItClears) {
  settings_.pre_health_check_gate = true;
  alerts_.firing = {{"KubeAPIDown", "critical", "openshift-kube-apiserver", {}}};
  ASSERT_TRUE(PassUntil(Phase::kUpgrading));
  for (int i = 0; i < 4; ++i) Pass();
  EXPECT_EQ(Current(), Phase::kUpgrading);
  EXPECT_EQ(Condition("ClusterHealthyBeforeUpgrade"), "False");
  EXPECT_TRUE(agent_.snapshot.desired_update.version.empty()) << "commanded while a critical alert fired";
  EXPECT_EQ(Sent(event::kHealthCheck), 1);  // said once, not at every pass
  EXPECT_EQ(Gauge("upgradeoperator_healthcheck_failed",
                  {{"upgradeconfig_name", "prod-1"}, {"state", "Upgrading"}, {"version", "4.1.0"}, {"reason", "critical_alerts_firing"}}),
            1);
  // An alert the settings ignore does not hold anything.
  alerts_.firing = {{"etcdMembersDown", "critical", "openshift-etcd", {}}};
  settings_.ignored_criticals = {"etcdMembersDown"};
  Pass();
  EXPECT_EQ(Condition("ClusterHealthyBeforeUpgrade"), "True");
  Pass();
  EXPECT_EQ(agent_.snapshot.desired_update.version, "4.1.1");
}

TEST_F(OperatorPortsTest, PrometheusDownIsNotHealthy) {
  settings_.pre_health_check_gate = true;
  alerts_.down = true;
  ASSERT_TRUE(PassUntil(Phase::kUpgrading));
  for (int i = 0; i < 3; ++i) Pass();
  EXPECT_GT(alerts_.queries, 3);
  EXPECT_EQ(Condition("ClusterHealthyBeforeUpgrade"), "False");
  EXPECT_TRUE(agent_.snapshot.desired_update.version.empty());
  alerts_.down = false;
  Pass();
  Pass();
  EXPECT_EQ(agent_.snapshot.desired_update.version, "4.1.1");
}

TEST_F(OperatorPortsTest, AlertmanagerDownStopsBeforeTheCommandAndTheWindowIsMadeOnce) {
  windows_.down = true;
  ASSERT_TRUE(PassUntil(Phase::kUpgrading));
  for (int i = 0; i < 3; ++i) {
    PassResult r = Pass();
    EXPECT_FALSE(r.error.ok());
    EXPECT_NE(r.error.message().find("alertmanager"), std::string::npos) << r.error.message();
  }
  EXPECT_TRUE(agent_.snapshot.desired_update.version.empty()) << "commanded without a maintenance window";
  windows_.down = false;
  Pass();
  Pass();
  EXPECT_EQ(windows_.created, 2);
  EXPECT_EQ(agent_.snapshot.desired_update.version, "4.1.1");
  // Alertmanager gone again while the control plane updates: the removal waits for it.
  agent_.Progress();
  agent_.Complete();
  windows_.down = true;
  for (int i = 0; i < 3; ++i) Pass();
  EXPECT_EQ(Current(), Phase::kUpgrading);
  EXPECT_EQ(windows_.Active(), 2);
  windows_.down = false;
  ASSERT_TRUE(PassUntil(Phase::kUpgraded, 5));
  EXPECT_EQ(windows_.Active(), 0);
}

TEST_F(OperatorPortsTest, AWebhookThatFailsIsRetriedAndEachEventIsSentOnce) {
  webhook_down_ = true;
  ASSERT_TRUE(PassUntil(Phase::kUpgrading));
  for (int i = 0; i < 3; ++i) {
    PassResult r = Pass();
    EXPECT_FALSE(r.error.ok());
  }
  EXPECT_TRUE(sent_.empty());
  EXPECT_EQ(Condition("StartedNotificationSent"), "False");
  EXPECT_EQ(Gauge("upgrade_notification_failed", {{"upgradeconfig_name", "prod-1"}, {"event", "started"}}), 1);
  webhook_down_ = false;
  Pass();
  EXPECT_EQ(Sent(event::kStarted), 1);
  EXPECT_EQ(Gauge("upgrade_notification_failed", {{"upgradeconfig_name", "prod-1"}, {"event", "started"}}), 0);
  agent_.Progress();
  agent_.Complete();
  ASSERT_TRUE(PassUntil(Phase::kUpgraded));
  for (const auto& n : sent_) EXPECT_EQ(Sent(n.event), 1) << n.event;
}

TEST_F(OperatorPortsTest, TheFleetHoldKeepsAClusterPendingAndSaysWhy) {
  hold_ = "the fleet is paused: 2 upgrade(s) to 4.1.1 failed";
  ASSERT_TRUE(PassUntil(Phase::kPending));
  for (int i = 0; i < 5; ++i) {
    PassResult r = Pass();
    EXPECT_TRUE(r.error.ok());
    EXPECT_EQ(r.note, hold_);
    EXPECT_EQ(r.requeue, seconds(60));
  }
  EXPECT_EQ(Current(), Phase::kPending);
  EXPECT_TRUE(sent_.empty());
  EXPECT_EQ(agent_.commands, 0);
  hold_.clear();
  Pass();
  EXPECT_EQ(Current(), Phase::kUpgrading);
}

TEST_F(OperatorPortsTest, ItWaitsForUpgradeAtAndFailsOnceTheWindowHasPassed) {
  config_.spec.upgrade_at = "2026-01-01T13:00:00Z";
  ASSERT_TRUE(PassUntil(Phase::kPending));
  PassResult r = Pass();
  EXPECT_EQ(Current(), Phase::kPending);
  EXPECT_EQ(r.requeue, seconds(300));  // at most the resync period, not a busy loop
  EXPECT_NE(r.note.find("scheduled for 2026-01-01T13:00:00Z"), std::string::npos) << r.note;
  // Past upgradeAt + the upgrade window (120 minutes) without a start: Failed, said once.
  now_ = *ParseTime("2026-01-01T15:01:00Z");
  Pass();
  EXPECT_EQ(Current(), Phase::kFailed);
  Pass();
  Pass();
  EXPECT_EQ(Sent(event::kFailed), 1);
  EXPECT_EQ(agent_.commands, 0);
  EXPECT_EQ(Gauge("upgradeoperator_upgrade_window_breached", {{"upgradeconfig_name", "prod-1"}}), 1);
}

TEST_F(OperatorPortsTest, ACapacityHookIsRunUntilItSaysDone) {
  config_.spec.capacity_reservation = true;
  settings_.capacity_hook = "reserve-capacity";
  hooks_.exit_code = 1;  // not yet
  ASSERT_TRUE(PassUntil(Phase::kUpgrading));
  for (int i = 0; i < 3; ++i) Pass();
  EXPECT_EQ(Condition("ComputeCapacityReserved"), "False");
  EXPECT_EQ(agent_.commands, 0);
  EXPECT_GE(hooks_.runs.size(), 3u);
  EXPECT_EQ(hooks_.runs.front(), "reserve-capacity capacityReservation");
  hooks_.exit_code = 0;
  Pass();
  Pass();
  EXPECT_EQ(Condition("ComputeCapacityReserved"), "True");
  EXPECT_EQ(agent_.snapshot.desired_update.version, "4.1.1");
}

TEST_F(OperatorPortsTest, AFailingCapacityHookIsAnErrorNamingItsExitAndOutput) {
  config_.spec.capacity_reservation = true;
  settings_.capacity_hook = "reserve-capacity";
  hooks_.exit_code = 7;
  ASSERT_TRUE(PassUntil(Phase::kUpgrading));
  PassResult r = Pass();
  EXPECT_FALSE(r.error.ok());
  EXPECT_NE(r.error.message().find("exit 7"), std::string::npos) << r.error.message();
  EXPECT_NE(r.error.message().find("hook output"), std::string::npos) << r.error.message();
  EXPECT_EQ(agent_.commands, 0);
}

// The fleet's holds as the operator computes them for a pass (fleet_hold.h).
class FleetHoldTest : public ::testing::Test {
 protected:
  UpgradeConfig& Add(const std::string& name, const std::string& wave, Phase phase) {
    UpgradeConfig c;
    c.cluster = name;
    c.spec.desired.version = "4.1.1";
    if (phase != Phase::kNew) {
      UpgradeHistory h;
      h.version = "4.1.1";
      h.phase = phase;
      c.history.push_back(h);
    }
    if (!wave.empty()) labels_[name] = {{"wave", wave}};
    return configs_[name] = c;
  }
  std::string Hold(const std::string& name) {
    return FleetHold(configs_.at(name), settings_, pause_, configs_, [this](const std::string& cluster) {
      auto it = labels_.find(cluster);
      return it == labels_.end() ? nullptr : &it->second;
    });
  }
  OperatorConfig settings_;
  FleetPause pause_;
  std::map<std::string, UpgradeConfig> configs_;
  std::map<std::string, std::map<std::string, std::string>> labels_;
};

TEST_F(FleetHoldTest, MaxParallelCountsTheOthersUpgradingExactly) {
  settings_.max_parallel = 2;
  Add("a", "", Phase::kUpgrading);
  Add("b", "", Phase::kPending);
  Add("c", "", Phase::kPending);
  Add("d", "", Phase::kUpgraded);
  EXPECT_EQ(Hold("b"), "");  // one running: a second may start
  configs_["b"].history.front().phase = Phase::kUpgrading;
  EXPECT_EQ(Hold("c"), "the fleet allows 2 upgrade(s) at once and 2 are running");
  EXPECT_EQ(Hold("a"), "");  // a running one is never held by the count it is part of
  configs_["a"].history.front().phase = Phase::kFailed;
  EXPECT_EQ(Hold("c"), "");
  settings_.max_parallel = 0;  // no cap
  for (auto& [name, c] : configs_) c.history.front().phase = Phase::kUpgrading;
  EXPECT_EQ(Hold("c"), "");
}

TEST_F(FleetHoldTest, WavesGoInOrderAndUnlabelledClustersGoLast) {
  settings_.wave_label = "wave";
  settings_.waves = {"canary", "main"};
  Add("canary-1", "canary", Phase::kPending);
  Add("main-1", "main", Phase::kPending);
  Add("other", "", Phase::kPending);
  Add("unknown-wave", "later", Phase::kPending);
  EXPECT_EQ(Hold("canary-1"), "");
  EXPECT_EQ(Hold("main-1"), "wave canary goes first (cluster canary-1)");
  EXPECT_EQ(Hold("other"), "wave canary goes first (cluster canary-1)");
  configs_["canary-1"].history.front().phase = Phase::kFailed;  // finished, however it ended
  EXPECT_EQ(Hold("main-1"), "");
  EXPECT_EQ(Hold("other"), "wave main goes first (cluster main-1)");
  EXPECT_EQ(Hold("unknown-wave"), "wave main goes first (cluster main-1)");
  configs_["main-1"].history.front().phase = Phase::kUpgraded;
  EXPECT_EQ(Hold("other"), "");
}

TEST_F(FleetHoldTest, APauseHoldsItsVersionOrEverything) {
  Add("a", "", Phase::kPending);
  Add("b", "", Phase::kPending).spec.desired.version = "4.1.2";
  configs_["b"].history.front().version = "4.1.2";
  pause_ = {"2 upgrade(s) to 4.1.1 failed (fleet.failureThreshold 2)", "4.1.1"};
  EXPECT_EQ(Hold("a"), "the fleet is paused: 2 upgrade(s) to 4.1.1 failed (fleet.failureThreshold 2)");
  EXPECT_EQ(Hold("b"), "");
  pause_.version.clear();
  EXPECT_EQ(Hold("b"), "the fleet is paused: 2 upgrade(s) to 4.1.1 failed (fleet.failureThreshold 2)");
  pause_ = {};
  EXPECT_EQ(Hold("a"), "");
}

}  // namespace
}  // namespace cincinnati::upgrade
