// The upgrade operator at fleet scale, in this process: passes of different clusters run
// at once, a peer that hangs (a dependency, a hook, a webhook) holds only its own
// cluster, and the fleet's holds stay exact under concurrency. The dependency and the
// webhook receiver are real HTTP servers on 127.0.0.1, the hook a real process; the
// agents are in-process stand-ins (thread-safe) that finish an update when told to.
// Tests wait for events (a call held, a phase reached), never for durations.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "env/clock.h"
#include "http_server/http_server.h"
#include "operator/config_source.h"
#include "operator/hook_runner.h"
#include "operator/pending_calls.h"
#include "operator/upgrade_operator.h"
#include "operator_fakes.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati::upgrade {
namespace {
using kube::FindMember;
using kube::TextOf;
using kube::ItemsOf;

using namespace std::chrono_literals;

// An agent at 4.1.0 offering 4.1.1; told to go there, it has gone (when `finishes`).
class InstantAgent : public UpdateAgent {
 public:
  explicit InstantAgent(bool finishes) : finishes_(finishes) {
    snapshot_.cluster_id = "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a";
    snapshot_.channel = "stable-4.1";
    snapshot_.status_desired = {"4.1.0", "quay.io/ocp/release@sha256:410"};
    snapshot_.history = {{"Completed", "4.1.0", "quay.io/ocp/release@sha256:410", "2026-01-01T00:00:00Z", "2026-01-01T00:30:00Z"}};
    snapshot_.available_updates = {{"4.1.1", "quay.io/ocp/release@sha256:411"}};
    snapshot_.components = {{"ingress", true, false}};
  }
  Result<AgentSnapshot> Snapshot() override {
    std::lock_guard lock(mu_);
    return snapshot_;
  }
  Status SetChannel(const std::string& channel) override {
    std::lock_guard lock(mu_);
    snapshot_.channel = channel;
    return Status::OK();
  }
  Status SetDesiredUpdate(const std::string& version, const std::string& image) override {
    std::lock_guard lock(mu_);
    ++commands_;
    snapshot_.desired_update = {version, image};
    snapshot_.status_desired = {"4.1.1", "quay.io/ocp/release@sha256:411"};
    snapshot_.history.insert(snapshot_.history.begin(), {finishes_ ? "Completed" : "Partial", "4.1.1", "quay.io/ocp/release@sha256:411",
                                                         "2026-01-01T12:00:00Z", finishes_ ? "2026-01-01T12:01:00Z" : ""});
    return Status::OK();
  }
  int commands() {
    std::lock_guard lock(mu_);
    return commands_;
  }

 private:
  const bool finishes_;
  std::mutex mu_;
  AgentSnapshot snapshot_;
  int commands_ = 0;
};

// An HTTP peer that answers at once, except the requests `holds` picks: those wait,
// without a thread, until Release().
class HoldingPeer {
 public:
  explicit HoldingPeer(std::function<bool(const http_server::Request&)> holds) : holds_(std::move(holds)) {
    auto port = server_.ListenAsync("127.0.0.1", 0, [this](const http_server::Request& r, std::function<void(http_server::Response)> done) {
      std::unique_lock lock(mu_);
      if (!released_ && holds_(r)) {
        held_.push_back(std::move(done));
        return;
      }
      lock.unlock();
      done(http_server::Response::Text(200, "ok\n"));
    });
    port_ = port.ok() ? *port : 0;
    server_.Start();
  }
  ~HoldingPeer() {
    Release();
    server_.Shutdown(100ms);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }
  size_t Held() {
    std::lock_guard lock(mu_);
    return held_.size();
  }
  void Release() {
    std::vector<std::function<void(http_server::Response)>> held;
    {
      std::lock_guard lock(mu_);
      released_ = true;
      held.swap(held_);
    }
    for (auto& done : held) done(http_server::Response::Text(200, "late\n"));
  }

 private:
  std::function<bool(const http_server::Request&)> holds_;
  http_server::HttpServer server_;
  std::mutex mu_;
  std::vector<std::function<void(http_server::Response)>> held_;
  bool released_ = false;
  uint16_t port_ = 0;
};

class OperatorParallelTest : public ::testing::Test {
 protected:
  void Start(const std::string& settings, int clusters, bool agents_finish, env::Clock* clock) {
    std::string fleet = "clusters:\n";
    for (int i = 1; i <= clusters; ++i) {
      const std::string name = "c" + std::to_string(i);
      fleet += "- name: " + name + "\n  agent: \"http://" + name + ".invalid\"\n";
      testing::WriteFile(dir_.path() / "configs" / (name + ".yaml"),
                         "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nmetadata:\n"
                         "  name: managed-upgrade-config\n  labels: {cluster: " + name + "}\nspec:\n  type: OSD\n"
                         "  upgradeAt: \"" + FormatTime(clock->Now() - 1min) + "\"\n  PDBForceDrainTimeout: 60\n"
                         "  capacityReservation: true\n  desired:\n    version: \"4.1.1\"\n    channel: stable-4.1\n");
    }
    testing::WriteFile(dir_.path() / "fleet.yaml", fleet);
    testing::WriteFile(dir_.path() / "operator.yaml", settings);
    OperatorOptions options;
    options.config_path = (dir_.path() / "operator.yaml").string();
    options.fleet_path = (dir_.path() / "fleet.yaml").string();
    options.state_dir = (dir_.path() / "state").string();
    options.configs_dir = (dir_.path() / "configs").string();
    options.interval = 1s;
    options.clock = clock;
    options.make_ports = [this, agents_finish](const FleetCluster& cluster, const OperatorConfig&) {
      ClusterPortSet ports;
      auto agent = std::make_unique<InstantAgent>(agents_finish);
      agents_[cluster.name] = agent.get();
      ports.agent = std::move(agent);
      ports.hooks = std::make_unique<ProcessHookRunner>();
      return ports;
    };
    auto op = UpgradeOperator::Open(options);
    ASSERT_TRUE(op.ok()) << op.status().message();
    operator_ = std::move(*op);
  }
  std::map<std::string, std::string> Phases() { return fakes::PhasesOf(operator_->List()); }
  // A field ("status", "message") of a condition of the cluster's newest history entry
  // ("" when absent).
  std::string ConditionField(const std::string& cluster, const std::string& type, const char* field) {
    kube::JsonValue list = operator_->List();
    for (const auto& item : ItemsOf(*FindMember(list, "items"))) {
      if (TextOf(*FindMember(*FindMember(*FindMember(item, "metadata"), "labels"), "cluster")) != cluster) continue;
      const kube::JsonValue* history = FindMember(item, "status") ? FindMember(*FindMember(item, "status"), "history") : nullptr;
      if (!history || !history->is_array() || ItemsOf(*history).empty()) return "";
      const kube::JsonValue* conditions = FindMember(ItemsOf(*history)[0], "conditions");
      if (!conditions || !conditions->is_array()) return "";
      for (const auto& c : ItemsOf(*conditions)) {
        if (TextOf(*FindMember(c, "type")) == type) return TextOf(*FindMember(c, field));
      }
    }
    return "";
  }
  std::string ConditionStatus(const std::string& cluster, const std::string& type) {
    return ConditionField(cluster, type, "status");
  }
  std::string ConditionMessage(const std::string& cluster, const std::string& type) {
    return ConditionField(cluster, type, "message");
  }
  int CountPhase(const std::string& phase) {
    int n = 0;
    for (const auto& [name, p] : Phases()) n += p == phase;
    return n;
  }

  testing::TempDir dir_;
  std::map<std::string, InstantAgent*> agents_;
  std::unique_ptr<UpgradeOperator> operator_;
};

// Among 20 clusters, one's dependency probe hangs, one's capacity hook runs (as a 200 s
// hook would) and one's webhook hangs: the other clusters go all the way to Upgraded while
// the three are still held, and the three finish once their peers answer.
TEST_F(OperatorParallelTest, HangingPeersHoldOnlyTheirOwnCluster) {
  std::atomic<bool> dependency_held{false};
  HoldingPeer dependency([&](const http_server::Request&) { return !dependency_held.exchange(true); });  // the first probe
  HoldingPeer webhooks([](const http_server::Request& r) { return r.body.find("\"cluster\":\"c2\"") != std::string::npos; });
  const auto release = dir_.path() / "release-hook";
  const auto hook_started = dir_.path() / "hook-started";
  const std::string hook = "if [ \"$UPGRADE_CLUSTER\" = c3 ]; then : > '" + hook_started.string() + "'; while [ ! -e '" +
                           release.string() + "' ]; do sleep 0.05; done; fi";
  Start("extDependencyAvailabilityChecks: {http: {urls: [\"" + dependency.url() + "\"], timeout: 60}}\n"
        "notifications: {webhooks: [{url: \"" + webhooks.url() + "\"}]}\n"
        "hooks: {capacityReservation: " + kube::WriteJson(kube::JsonValue(hook)) + ", timeout: 300}\n",
        20, true, &env::RealClock());
  std::jthread run([&](std::stop_token stop) { operator_->Run(stop); });

  // Every cluster but those three is Upgraded while the peers are still held. The held
  // probe is whichever cluster asked first; c2 never gets that far (its first step waits
  // on the webhook), and when it is c3's, c3 never reaches its hook.
  auto c3_probe_held = [&] { return ConditionStatus("c3", "ExternalDependenciesAvailable") != "True"; };
  ASSERT_TRUE(testing::WaitFor([&] { return CountPhase("Upgraded") == (c3_probe_held() ? 18 : 17); }, 120s))
      << kube::WriteJson(operator_->List());
  EXPECT_EQ(dependency.Held(), 1u);
  EXPECT_GE(webhooks.Held(), 1u);
  EXPECT_FALSE(std::filesystem::exists(release));
  auto phases = Phases();
  EXPECT_NE(phases["c2"], "Upgraded");  // its started notification waits
  EXPECT_NE(phases["c3"], "Upgraded");  // its hook runs, or its probe is the held one
  if (!c3_probe_held()) {
    EXPECT_TRUE(testing::WaitFor([&] { return std::filesystem::exists(hook_started); }, 120s));
  }

  dependency.Release();
  webhooks.Release();
  testing::WriteFile(release, "");
  EXPECT_TRUE(testing::WaitFor([&] { return CountPhase("Upgraded") == 20; }, 120s)) << kube::WriteJson(operator_->List());
  for (const auto& [name, agent] : agents_) EXPECT_EQ(agent->commands(), 1) << name;
}

// 40 clusters due at once on 32 workers with fleet.maxParallel 3: exactly 3 are
// commanded, however the passes interleave (each is admitted under the operator's lock
// and counts as upgrading from that moment, before its pass ends).
TEST_F(OperatorParallelTest, MaxParallelIsExactWhenPassesRunAtOnce) {
  env::ManualClock clock;
  Start("fleet: {maxParallel: 3}\n", 40, false, &clock);
  for (int round = 0; round < 20; ++round) {
    operator_->RunOnce();
    clock.Advance(1s);
  }
  int commanded = 0;
  for (const auto& [name, agent] : agents_) commanded += agent->commands();
  EXPECT_EQ(commanded, 3);
  EXPECT_EQ(CountPhase("Upgrading"), 3);
  EXPECT_EQ(CountPhase("Pending"), 37);
  const std::string metrics = operator_->Metrics();
  EXPECT_EQ(testing::MetricValue(metrics, R"(upgradeoperator_clusters{phase="Upgrading"})"), 3) << metrics;
  EXPECT_EQ(testing::MetricValue(metrics, "upgradeoperator_passes_in_flight"), 0) << metrics;
  EXPECT_GT(testing::MetricValue(metrics, R"(upgradeoperator_last_reconcile_timestamp_seconds{upgradeconfig_name="c40"})"), 0) << metrics;
}

// Without Prometheus or Alertmanager the health checks and maintenance windows are
// completed, and their conditions say what was skipped instead of a bare "completed".
TEST_F(OperatorParallelTest, StepsWithNothingConfiguredSayWhatTheySkipped) {
  env::ManualClock clock;
  Start("", 1, true, &clock);
  for (int round = 0; round < 100 && CountPhase("Upgraded") == 0; ++round) {
    operator_->RunOnce();
    clock.Advance(10s);
  }
  ASSERT_EQ(CountPhase("Upgraded"), 1) << kube::WriteJson(operator_->List());
  for (const char* window : {"ControlPlaneMaintenanceWindowCreated", "ControlPlaneMaintenanceWindowRemoved",
                             "WorkersMaintenanceWindowCreated", "WorkersMaintenanceWindowRemoved"}) {
    EXPECT_EQ(ConditionMessage("c1", window),
              std::string(window) + " is completed: skipped, no Alertmanager is configured (alertmanager in --config)");
  }
  for (const char* health : {"ClusterHealthyBeforeUpgrade", "ClusterHealthyAfterUpgrade"}) {
    EXPECT_EQ(ConditionMessage("c1", health),
              std::string(health) + " is completed: the components only, no Prometheus is configured for the alerts "
                                    "(prometheus in --config)");
  }
  EXPECT_EQ(ConditionMessage("c1", "UpgradeCommenced"), "UpgradeCommenced is completed");
}

// The source reads a fleet's files every second but parses only those that changed; a
// file rewritten to the same size within one tick of the file system's clock is still
// seen (it is not trusted until its times are 2 s old).
TEST(LocalConfigSourceCacheTest, AFileRewrittenAtOnceWithTheSameSizeIsReadAgain) {
  testing::TempDir dir;
  auto config = [](const std::string& version) {
    return "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nmetadata:\n  name: x\n"
           "  labels: {cluster: prod-1}\nspec:\n  type: OSD\n  upgradeAt: \"2026-01-01T12:00:00Z\"\n"
           "  PDBForceDrainTimeout: 60\n  desired:\n    version: \"" + version + "\"\n    channel: stable-4.1\n";
  };
  testing::WriteFile(dir.path() / "prod-1.yaml", config("4.1.1"));
  LocalConfigSource source(dir.path().string());
  EXPECT_EQ(source.Read().specs.at("prod-1").desired.version, "4.1.1");
  EXPECT_EQ(source.Read().specs.at("prod-1").desired.version, "4.1.1");
  testing::WriteFile(dir.path() / "prod-1.yaml", config("4.1.2"));
  EXPECT_EQ(source.Read().specs.at("prod-1").desired.version, "4.1.2");
  testing::WriteFile(dir.path() / "prod-1.yaml", config("4.1.3"));
  EXPECT_EQ(source.Read().specs.at("prod-1").desired.version, "4.1.3");
}

// ---- PendingCalls, alone ----

TEST(PendingCallsTest, ACallRunsOnceOutsideAndItsResultLivesAsLongAsTheChainOfPasses) {
  CallRunner runner(2);
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::mutex mu;
  std::condition_variable ended;
  int finished = 0, started = 0;
  PendingCalls calls(&runner, [&] {
    std::lock_guard lock(mu);
    ++finished;
    ended.notify_all();
  });
  auto call = [&] {
    {
      std::lock_guard lock(mu);
      ++started;
    }
    gate.wait();
    return StepResult{StepOutcome::kDone, "answer"};
  };
  auto wait_finished = [&](int n) {
    std::unique_lock lock(mu);
    return ended.wait_for(lock, 60s, [&] { return finished == n; });
  };
  calls.BeginPass();
  EXPECT_FALSE(calls.Await("probe", call));
  EXPECT_FALSE(calls.Await("probe", call));  // running: not started twice
  EXPECT_TRUE(calls.Running("probe"));
  calls.EndPass();
  go.set_value();
  ASSERT_TRUE(wait_finished(1));
  // A pass that waits on another call keeps the result for the next pass...
  calls.BeginPass();
  auto got = calls.Await("probe", call);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->message, "answer");
  EXPECT_FALSE(calls.Await("window", call));
  calls.EndPass();
  ASSERT_TRUE(wait_finished(2));
  calls.BeginPass();
  EXPECT_TRUE(calls.Await("probe", call));
  EXPECT_TRUE(calls.Await("window", call));
  calls.EndPass();  // ...and one that waits on nothing drops every result:
  calls.BeginPass();
  EXPECT_FALSE(calls.Await("probe", call));  // asked afresh
  calls.EndPass();
  ASSERT_TRUE(wait_finished(3));
  std::lock_guard lock(mu);
  EXPECT_EQ(started, 3);
}

TEST(PendingCallsTest, AnErrorLastsUntilTheChainEndsAndAThrowingCallIsAnError) {
  CallRunner runner(1);
  std::mutex mu;
  std::condition_variable ended;
  int finished = 0;
  PendingCalls calls(&runner, [&] {
    std::lock_guard lock(mu);
    ++finished;
    ended.notify_all();
  });
  calls.BeginPass();
  EXPECT_FALSE(calls.Await("hook", [] { return StepResult::Error("exit 2"); }));
  EXPECT_FALSE(calls.Await("throws", []() -> StepResult { throw std::runtime_error("boom"); }));
  calls.EndPass();  // it waited: the results will be kept
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(ended.wait_for(lock, 60s, [&] { return finished == 2; }));
  }
  calls.BeginPass();
  auto error = calls.Await("hook", [] { return StepResult::Done(); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->outcome, StepOutcome::kError);
  auto thrown = calls.Await("throws", [] { return StepResult::Done(); });
  ASSERT_TRUE(thrown);
  EXPECT_EQ(thrown->outcome, StepOutcome::kError);
  EXPECT_NE(thrown->message.find("boom"), std::string::npos);
  EXPECT_TRUE(calls.Await("hook", [] { return StepResult::Done(); }));  // while passes chain: the same answer
  calls.EndPass();  // a pass that waited on nothing: results dropped
  calls.BeginPass();
  EXPECT_FALSE(calls.Await("hook", [] { return StepResult::Done(); }));  // a new call
  calls.EndPass();
  // It ends before `calls` goes: a call uses its PendingCalls to the end.
  std::unique_lock lock(mu);
  ASSERT_TRUE(ended.wait_for(lock, 60s, [&] { return finished == 3; }));
}

// One step that waits on two calls (AllWorkersUpgraded: Alertmanager and the drain
// hook) settles whatever order they end in: an answer read while the other call still
// runs is kept until the chain ends, not asked again (which would go on forever).
TEST(PendingCallsTest, TwoCallsOfOneStepSettleWhateverOrderTheyEndIn) {
  CallRunner runner(2);
  std::promise<void> release_w, release_d;
  std::shared_future<void> gate_w = release_w.get_future().share(), gate_d = release_d.get_future().share();
  std::mutex mu;
  std::condition_variable ended;
  int finished = 0, started_w = 0, started_d = 0;
  PendingCalls calls(&runner, [&] {
    std::lock_guard lock(mu);
    ++finished;
    ended.notify_all();
  });
  auto w = [&] {
    {
      std::lock_guard lock(mu);
      ++started_w;
    }
    gate_w.wait();
    return StepResult::Error("alertmanager: connection refused");
  };
  auto d = [&] {
    {
      std::lock_guard lock(mu);
      ++started_d;
    }
    gate_d.wait();
    return StepResult::NotDone("the drain hook is not done yet");
  };
  auto wait_finished = [&](int n) {
    std::unique_lock lock(mu);
    return ended.wait_for(lock, 60s, [&] { return finished == n; });
  };
  calls.BeginPass();
  EXPECT_FALSE(calls.Await("window active", w));
  EXPECT_FALSE(calls.Await("hook drain", d));
  calls.EndPass();
  release_w.set_value();
  ASSERT_TRUE(wait_finished(1));
  calls.BeginPass();  // the window's answer; the hook still runs
  EXPECT_TRUE(calls.Await("window active", w));
  EXPECT_FALSE(calls.Await("hook drain", d));
  calls.EndPass();
  release_d.set_value();
  ASSERT_TRUE(wait_finished(2));
  calls.BeginPass();  // both answers, no new call: this pass ends the chain
  EXPECT_TRUE(calls.Await("window active", w));
  EXPECT_TRUE(calls.Await("hook drain", d));
  calls.EndPass();
  std::lock_guard lock(mu);
  EXPECT_EQ(started_w, 1);
  EXPECT_EQ(started_d, 1);
}

TEST(PendingCallsTest, WithoutARunnerACallRunsInline) {
  PendingCalls calls;
  auto got = calls.Await("x", [] { return StepResult::NotDone("later"); });
  ASSERT_TRUE(got);
  EXPECT_EQ(got->outcome, StepOutcome::kNotDone);
  EXPECT_EQ(calls.RetryAfter("x", {}), 1);
  EXPECT_EQ(calls.RetryAfter("x", {}), 2);
  calls.Forget("x");
  EXPECT_EQ(calls.Failures("x"), 0);
  EXPECT_FALSE(calls.SoonestRetry({}));
}

}  // namespace
}  // namespace cincinnati::upgrade
