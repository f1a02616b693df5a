// The upgrade operator's prompt progress and its lock: a freed slot of fleet.maxParallel
// starts the next cluster without waiting an interval (on a manual clock: the clock is
// never advanced), the API answers while a state store call hangs, a pass's write that
// failed is written later (nothing is done meanwhile) or steps the replica down, and an
// agent down for a moment keeps the cluster's last note and is heard of when back. The
// store is the real SQLite store behind a wrapper that blocks or fails on demand.
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
#include "operator/upgrade_operator.h"
#include "operator_fakes.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati::upgrade {
namespace {
using kube::FindMember;
using kube::ItemsOf;
using kube::TextOf;
using namespace std::chrono_literals;

constexpr auto kPatience = 60s;  // a safety net only: every wait ends at its event

// An agent at 4.1.0 offering 4.1.1 that watches as the real one does: Watch keeps the
// operator's callback, and Complete() finishes the update and tells the watch.
class WatchedAgent : public UpdateAgent {
 public:
  WatchedAgent() {
    snapshot_.cluster_id = "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a";
    snapshot_.channel = "stable-4.1";
    snapshot_.resource_version = 1;
    snapshot_.status_desired = {"4.1.0", "quay.io/ocp/release@sha256:410"};
    snapshot_.history = {{"Completed", "4.1.0", "quay.io/ocp/release@sha256:410", "2026-01-01T00:00:00Z", "2026-01-01T00:30:00Z"}};
    snapshot_.available_updates = {{"4.1.1", "quay.io/ocp/release@sha256:411"}};
    snapshot_.components = {{"ingress", true, false}};
  }
  Result<AgentSnapshot> Snapshot() override {
    std::lock_guard lock(mu_);
    ++snapshots_;
    if (!reachable_) return Status::IoError("GET http://c1.invalid/apis/config.openshift.io/v1/clusterversions/version: Connection reset by peer");
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
    snapshot_.history.insert(snapshot_.history.begin(), {"Partial", "4.1.1", "quay.io/ocp/release@sha256:411", "2026-01-01T12:00:00Z", ""});
    ++snapshot_.resource_version;
    return Status::OK();
  }
  bool Watch(int64_t seen, std::chrono::seconds, std::function<void(bool changed)> done) override {
    std::unique_lock lock(mu_);
    watch_seen_ = seen;
    if (reachable_ && seen != snapshot_.resource_version) {  // moved already: the real agent answers at once
      lock.unlock();
      done(true);
      return true;
    }
    watch_ = std::move(done);
    return true;
  }
  // The control plane is done; true when a watch was open and was told.
  bool Complete() {
    std::function<void(bool)> watch;
    {
      std::lock_guard lock(mu_);
      snapshot_.history.front().state = "Completed";
      snapshot_.history.front().completion_time = "2026-01-01T12:40:00Z";
      ++snapshot_.resource_version;
      watch.swap(watch_);
    }
    if (watch) watch(true);
    return static_cast<bool>(watch);
  }
  // Down (it restarts), or back: a watch kept meanwhile (reconnecting) answers then.
  void SetReachable(bool reachable) {
    std::function<void(bool)> watch;
    {
      std::lock_guard lock(mu_);
      reachable_ = reachable;
      if (reachable && watch_ && watch_seen_ != snapshot_.resource_version) watch.swap(watch_);
    }
    if (watch) watch(true);
  }
  // Its ClusterVersion moves (a condition changes): an open watch is told.
  void Touch() {
    std::function<void(bool)> watch;
    {
      std::lock_guard lock(mu_);
      ++snapshot_.resource_version;
      if (reachable_) watch.swap(watch_);
    }
    if (watch) watch(true);
  }
  int commands() {
    std::lock_guard lock(mu_);
    return commands_;
  }
  bool watched() {
    std::lock_guard lock(mu_);
    return static_cast<bool>(watch_);
  }
  int snapshots() {
    std::lock_guard lock(mu_);
    return snapshots_;
  }

 private:
  std::mutex mu_;
  AgentSnapshot snapshot_;
  std::function<void(bool)> watch_;
  int64_t watch_seen_ = -1;
  bool reachable_ = true;
  int commands_ = 0;
  int snapshots_ = 0;
};

// What the store wrapper does: config writes block until released, or fail.
struct StoreFaults {
  std::mutex mu;
  std::condition_variable changed;
  bool block_config_writes = false;
  bool fail_config_writes = false;  // a pass's writes (a config with a history), not the sync's
  int blocked = 0;  // config writes waiting now
  StateStore* inner = nullptr;

  Status Enter(bool from_pass) {
    std::unique_lock lock(mu);
    if (fail_config_writes && from_pass) return Status::IoError("state.db: disk I/O error");
    ++blocked;
    changed.notify_all();
    changed.wait(lock, [&] { return !block_config_writes; });
    --blocked;
    changed.notify_all();
    return Status::OK();
  }
  bool WaitBlocked() {
    std::unique_lock lock(mu);
    return changed.wait_for(lock, kPatience, [&] { return blocked > 0; });
  }
  void Set(bool block, bool fail) {
    std::lock_guard lock(mu);
    block_config_writes = block;
    fail_config_writes = fail;
    changed.notify_all();
  }
};

class FaultyStore : public StateStore {
 public:
  FaultyStore(std::unique_ptr<StateStore> inner, StoreFaults& faults) : inner_(std::move(inner)), faults_(faults) {
    faults_.inner = inner_.get();
  }
  Result<std::optional<std::string>> GetFlag(const std::string& key) override { return inner_->GetFlag(key); }
  Status SetFlag(const std::string& key, const std::string& value) override { return inner_->SetFlag(key, value); }
  Status ClearFlag(const std::string& key) override { return inner_->ClearFlag(key); }
  Result<std::vector<UpgradeConfig>> LoadConfigs() override { return inner_->LoadConfigs(); }
  Result<std::optional<UpgradeConfig>> GetConfig(const std::string& cluster) override { return inner_->GetConfig(cluster); }
  Status PutConfig(const UpgradeConfig& config) override {
    CINCINNATI_RETURN_IF_ERROR(faults_.Enter(!config.history.empty()));
    return inner_->PutConfig(config);
  }
  Status DeleteConfig(const std::string& cluster) override {
    CINCINNATI_RETURN_IF_ERROR(faults_.Enter(false));
    return inner_->DeleteConfig(cluster);
  }
  Result<bool> Claim(const std::string& cluster, const std::string& version, const std::string& event, const std::string& now) override {
    return inner_->Claim(cluster, version, event, now);
  }
  Status Unclaim(const std::string& cluster, const std::string& version, const std::string& event) override {
    return inner_->Unclaim(cluster, version, event);
  }
  Result<bool> Claimed(const std::string& cluster, const std::string& version, const std::string& event) override {
    return inner_->Claimed(cluster, version, event);
  }
  Result<std::vector<LedgerEntry>> Ledger(const std::string& cluster) override { return inner_->Ledger(cluster); }
  Result<std::vector<std::pair<std::string, std::string>>> Flags(const std::string& prefix) override { return inner_->Flags(prefix); }

 private:
  std::unique_ptr<StateStore> inner_;
  StoreFaults& faults_;
};

class OperatorPromptTest : public ::testing::Test {
 protected:
  ~OperatorPromptTest() override {
    faults_.Set(false, false);  // nothing stays blocked when a test failed
    if (runner_.joinable()) runner_.join();
    operator_.reset();
  }
  void Start(const std::string& settings, int clusters) {
    std::string fleet = "clusters:\n";
    for (int i = 1; i <= clusters; ++i) {
      const std::string name = "c" + std::to_string(i);
      fleet += "- name: " + name + "\n  agent: \"http://" + name + ".invalid\"\n";
      testing::WriteFile(dir_.path() / "configs" / (name + ".yaml"),
                         "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nmetadata:\n"
                         "  name: managed-upgrade-config\n  labels: {cluster: " + name + "}\nspec:\n  type: OSD\n"
                         "  upgradeAt: \"" + FormatTime(clock_.Now() - 1min) + "\"\n  PDBForceDrainTimeout: 60\n"
                         "  desired:\n    version: \"4.1.1\"\n    channel: stable-4.1\n");
    }
    testing::WriteFile(dir_.path() / "fleet.yaml", fleet);
    testing::WriteFile(dir_.path() / "operator.yaml", settings);
    OperatorOptions options;
    options.config_path = (dir_.path() / "operator.yaml").string();
    options.fleet_path = (dir_.path() / "fleet.yaml").string();
    options.state_dir = (dir_.path() / "state").string();
    options.configs_dir = (dir_.path() / "configs").string();
    options.clock = &clock_;  // the default interval: 60 s
    options.make_ports = [this](const FleetCluster& cluster, const OperatorConfig&) {
      ClusterPortSet ports;
      auto agent = std::make_unique<WatchedAgent>();
      agents_[cluster.name] = agent.get();
      ports.agent = std::move(agent);
      return ports;
    };
    options.wrap_store = [this](std::unique_ptr<StateStore> store) -> std::unique_ptr<StateStore> {
      return std::make_unique<FaultyStore>(std::move(store), faults_);
    };
    auto op = UpgradeOperator::Open(options);
    ASSERT_TRUE(op.ok()) << op.status().message();
    operator_ = std::move(*op);
  }
  std::map<std::string, std::string> Phases() { return fakes::PhasesOf(operator_->List()); }
  int CountPhase(const std::string& phase) {
    int n = 0;
    for (const auto& [name, p] : Phases()) n += p == phase;
    return n;
  }
  int Commanded() {
    int n = 0;
    for (const auto& [name, agent] : agents_) n += agent->commands();
    return n;
  }
  std::string WaitingFor(const std::string& cluster) {
    auto config = operator_->Get(cluster);
    if (!config) return "";
    const kube::JsonValue* metadata = FindMember(*config, "metadata");
    const kube::JsonValue* annotations = metadata ? FindMember(*metadata, "annotations") : nullptr;
    const kube::JsonValue* note = annotations ? FindMember(*annotations, "upgrade.cincinnati.openshift.io/waiting-for") : nullptr;
    return note && note->is_string() ? TextOf(*note) : "";
  }
  std::string StoredPhase(const std::string& cluster) {
    auto stored = faults_.inner->GetConfig(cluster);
    if (!stored.ok() || !*stored || (*stored)->history.empty()) return "";
    return std::string(PhaseName((*stored)->history.front().phase));
  }
  // Runs `call` on another thread: true when it returned within kPatience.
  template <typename Call>
  static bool Returns(Call call) {
    auto done = std::async(std::launch::async, std::move(call));
    const bool returned = done.wait_for(kPatience) == std::future_status::ready;
    return returned;
  }

  env::ManualClock clock_;
  testing::TempDir dir_;
  StoreFaults faults_;
  std::map<std::string, WatchedAgent*> agents_;
  std::unique_ptr<UpgradeOperator> operator_;
  std::thread runner_;
};

// 100 clusters due at once, 40 at a time: when the first one's update completes (its
// watch says so), the 41st is commanded at once, the clock never advanced by an interval.
TEST_F(OperatorPromptTest, AFreedSlotStartsTheNextClusterWithoutWaitingAnInterval) {
  Start("fleet: {maxParallel: 40}\n", 100);
  for (int round = 0; round < 10 && Commanded() < 40; ++round) operator_->RunOnce();
  ASSERT_EQ(Commanded(), 40);
  ASSERT_EQ(CountPhase("Upgrading"), 40);
  // The pass after the command watches the agent from what it reads then.
  auto watched = [&] {
    int n = 0;
    for (const auto& [name, agent] : agents_) n += agent->watched();
    return n;
  };
  for (int round = 0; round < 10 && watched() < 40; ++round) operator_->RunOnce();
  ASSERT_EQ(watched(), 40);
  const auto before = clock_.Steady();
  WatchedAgent* first = nullptr;
  for (const auto& [name, agent] : agents_) {
    if (agent->commands() > 0 && !first) first = agent;
  }
  const auto completed = std::chrono::steady_clock::now();
  ASSERT_TRUE(first->Complete()) << "no watch was open on a commanded cluster's agent";
  EXPECT_TRUE(testing::WaitFor([&] {
    operator_->RunOnce();  // the clock stands still: only what is due now runs
    return Commanded() == 41;
  }, kPatience)) << "commanded " << Commanded();
  std::printf("the 41st cluster was commanded %lld ms after the first completed\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - completed).count()));
  EXPECT_EQ(clock_.Steady(), before);
  EXPECT_EQ(CountPhase("Upgraded"), 1);
  EXPECT_EQ(CountPhase("Upgrading"), 40);
  for (int round = 0; round < 5; ++round) operator_->RunOnce();
  EXPECT_EQ(Commanded(), 41);  // exactly one more: the cap holds
}

// An agent that restarts during its update (it hands over to its successor) is not the
// cluster's news: the last good note stays while it is down, the error shows only once it
// stayed down 3 x --agent-timeout (30 s), and when it is back its watch reports the
// change it missed, so the next pass runs at once, not an interval later.
TEST_F(OperatorPromptTest, AnAgentDownForAMomentKeepsTheLastNoteAndIsHeardOfWhenBack) {
  Start("", 1);
  WatchedAgent& agent = *agents_.at("c1");
  for (int round = 0; round < 10 && !agent.watched(); ++round) operator_->RunOnce();
  ASSERT_TRUE(agent.watched());
  const std::string note = WaitingFor("c1");
  ASSERT_FALSE(note.empty());
  agent.Touch();  // its last change before it goes down: the watch asks for a pass...
  agent.SetReachable(false);  // ...which cannot read it
  const int snapshots = agent.snapshots();
  operator_->RunOnce();
  ASSERT_GT(agent.snapshots(), snapshots);
  EXPECT_EQ(WaitingFor("c1"), note);
  clock_.Advance(60s);  // the next pass (the back-off after an error), past 30 s
  operator_->RunOnce();
  EXPECT_NE(WaitingFor("c1").find("Connection reset by peer"), std::string::npos) << WaitingFor("c1");
  const auto before = clock_.Steady();
  agent.Complete();        // done while it was down...
  agent.SetReachable(true);  // ...and heard of when it is back
  EXPECT_TRUE(testing::WaitFor([&] {
    operator_->RunOnce();
    return Phases()["c1"] == "Upgraded";
  }, kPatience)) << kube::WriteJson(operator_->List());
  EXPECT_EQ(clock_.Steady(), before);
}

// While the store hangs on a config write (the source's sync, then a pass's), the API
// answers, and a pause is taken and shown from memory.
TEST_F(OperatorPromptTest, TheApiAnswersWhileAStoreCallHangs) {
  Start("", 2);
  faults_.Set(true, false);
  runner_ = std::thread([&] { operator_->RunOnce(); });  // its sync writes the two new configs
  ASSERT_TRUE(faults_.WaitBlocked());
  auto api_answers = [&](const std::string& reason) {
    EXPECT_TRUE(Returns([&] { operator_->List(); })) << "List";
    EXPECT_TRUE(Returns([&] { operator_->Get("c1"); })) << "Get";
    EXPECT_TRUE(Returns([&] { operator_->Metrics(); })) << "Metrics";
    EXPECT_TRUE(Returns([&] { operator_->ClustersPerPhase(); })) << "ClustersPerPhase";
    EXPECT_TRUE(Returns([&] { EXPECT_TRUE(operator_->Pause(reason).ok()); })) << "Pause";
    EXPECT_TRUE(Returns([&] {
      kube::JsonValue status = operator_->FleetStatus();
      EXPECT_EQ(TextOf(*FindMember(status, "reason")), reason) << kube::WriteJson(status);
    })) << "FleetStatus";
  };
  api_answers("held while the sync writes");
  faults_.Set(false, false);
  runner_.join();
  ASSERT_TRUE(operator_->Resume().ok());
  // The next round's passes (New -> Pending) write their configs: that write hangs now.
  faults_.Set(true, false);
  runner_ = std::thread([&] { operator_->RunOnce(); });
  ASSERT_TRUE(faults_.WaitBlocked());
  api_answers("held while a pass writes");
  faults_.Set(false, false);
  runner_.join();
  EXPECT_EQ(StoredPhase("c1"), "Upgrading");
}

// A pass's write that failed is not forgotten: the cluster does nothing while its state
// is unsaved, the next pass writes it first, then goes on.
TEST_F(OperatorPromptTest, AWriteThatFailedIsWrittenLaterAndNothingIsDoneMeanwhile) {
  Start("", 1);
  faults_.Set(false, true);
  operator_->RunOnce();  // the sync saves the new config; c1's first pass (New -> Pending) cannot
  ASSERT_EQ(Phases()["c1"], "Pending");  // in memory...
  EXPECT_EQ(StoredPhase("c1"), "");      // ...not in the store
  const int snapshots = agents_.at("c1")->snapshots();
  clock_.Advance(1s);
  operator_->RunOnce();  // written again, in vain: the pass does nothing
  EXPECT_EQ(agents_.at("c1")->snapshots(), snapshots);
  EXPECT_EQ(agents_.at("c1")->commands(), 0);
  EXPECT_NE(kube::WriteJson(operator_->List()).find("cannot be saved"), std::string::npos) << kube::WriteJson(operator_->List());
  faults_.Set(false, false);
  clock_.Advance(1s);
  operator_->RunOnce();
  EXPECT_NE(StoredPhase("c1"), "");  // written at last, and the pass went on
  EXPECT_GT(agents_.at("c1")->snapshots(), snapshots);
  EXPECT_TRUE(operator_->Acting());
}

// A store that stays unwritable past the limit (10 s without a lease) steps the replica
// down rather than go on with state it could not save.
TEST_F(OperatorPromptTest, AStoreUnwritablePastTheLimitStepsTheReplicaDown) {
  Start("", 1);
  faults_.Set(false, true);
  operator_->RunOnce();  // New -> Pending, not saved
  ASSERT_EQ(StoredPhase("c1"), "");
  for (int second = 1; second < 10; ++second) {
    clock_.Advance(1s);
    operator_->RunOnce();
    ASSERT_TRUE(operator_->Acting()) << "stepped down after " << second << " s";
  }
  clock_.Advance(1s);
  operator_->RunOnce();
  EXPECT_EQ(operator_->Role(), ReplicaRole::kStandby);
  EXPECT_EQ(agents_.at("c1")->commands(), 0);
}

}  // namespace
}  // namespace cincinnati::upgrade
