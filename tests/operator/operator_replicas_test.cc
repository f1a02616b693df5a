// Replicas of the upgrade operator: the state in a real PostgreSQL server (started by
// the test on a temporary directory), leadership by a session lock with fencing, and two
// operators in this process that hand over without repeating a command. The clusters'
// agents are in-process stand-ins shared by both replicas; the operators run on a manual
// clock, one RunOnce at a time. Tests wait for events, never for durations.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "env/clock.h"
#include "operator/leadership.h"
#include "operator/postgres_state.h"
#include "operator/upgrade_operator.h"
#include "operator_fakes.h"
#include "postgres_server.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati::upgrade {
namespace {
using kube::FindMember;
using kube::TextOf;
using kube::ItemsOf;

using namespace std::chrono_literals;

bool Or(const Result<bool>& r, bool otherwise) { return r.ok() ? *r : otherwise; }

// Ends every session that holds an advisory lock (the leader's), as a DBA or a network
// cut would, behind the replica's back.
bool EndLockSessions(testing::PostgresServer& pg) {
  return pg.Exec("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted").ok();
}

UpgradeConfig Config(const std::string& cluster, const std::string& version) {
  UpgradeConfig c;
  c.cluster = cluster;
  c.spec.type = UpgradeType::kOSD;
  c.spec.upgrade_at = "2026-01-01T00:00:00Z";
  c.spec.desired.version = version;
  return c;
}

class PostgresStateTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(pg_.ready()) << pg_.log(); }
  PostgresState Open(const std::string& holder, std::chrono::seconds lease = 10s) {
    auto state = OpenPostgresState(pg_.url(), holder, lease);
    EXPECT_TRUE(state.ok()) << state.status().message();
    return state.ok() ? std::move(*state) : PostgresState{};
  }
  testing::PostgresServer pg_;
};

// The leader writes; a standby's writes are refused and name the leader; when the
// leader's session is ended behind its back (a DBA, a network cut), the standby takes
// over and the old leader's next write is refused before it has noticed anything.
TEST_F(PostgresStateTest, OnlyTheLeaderWritesAndALeaderThatLostIsFencedAtOnce) {
  PostgresState a = Open("replica-a");
  PostgresState b = Open("replica-b");
  ASSERT_TRUE(a.store && b.store);
  ASSERT_EQ(Or(a.leadership->TryAcquire(), false), true);
  ASSERT_EQ(Or(b.leadership->TryAcquire(), true), false);
  EXPECT_EQ(b.leadership->Leader(), "replica-a");
  ASSERT_TRUE(a.store->PutConfig(Config("prod-1", "4.1.1")).ok());
  Status refused = b.store->PutConfig(Config("prod-1", "4.1.2"));
  EXPECT_EQ(refused.code(), Status::Code::kConflict) << refused.message();
  EXPECT_NE(refused.message().find("replica-a"), std::string::npos) << refused.message();
  EXPECT_EQ(b.store->SetFlag("pause.reason", "x").code(), Status::Code::kConflict);
  ASSERT_TRUE(Or(a.store->Claim("prod-1", "4.1.1", "started", "2026-01-01T00:00:00Z"), false));

  // The lock session of replica-a goes; replica-b leads under a new epoch.
  ASSERT_TRUE(EndLockSessions(pg_));
  ASSERT_TRUE(testing::WaitFor([&] { return Or(b.leadership->TryAcquire(), false); }));
  // replica-a has not renewed yet: its writes are refused all the same.
  EXPECT_EQ(a.store->PutConfig(Config("prod-1", "4.1.3")).code(), Status::Code::kConflict);
  EXPECT_EQ(a.store->Claim("prod-1", "4.1.1", "completed", "2026-01-01T01:00:00Z").status().code(), Status::Code::kConflict);
  EXPECT_FALSE(a.leadership->Renew().ok());
  EXPECT_EQ(Or(a.leadership->TryAcquire(), true), false);
  EXPECT_EQ(a.leadership->Leader(), "replica-b");

  // The new leader sees everything the old one committed, and the ledger holds.
  auto saved = b.store->GetConfig("prod-1");
  ASSERT_TRUE(saved.ok() && saved->has_value());
  EXPECT_EQ((*saved)->spec.desired.version, "4.1.1");
  EXPECT_EQ(Or(b.store->Claim("prod-1", "4.1.1", "started", "2026-01-01T02:00:00Z"), true), false);
  EXPECT_EQ(Or(b.store->Claim("prod-1", "4.1.1", "completed", "2026-01-01T02:00:00Z"), false), true);
  auto ledger = a.store->Ledger("prod-1");  // reads need no leadership
  ASSERT_TRUE(ledger.ok());
  EXPECT_EQ(ledger->size(), 2u);
}

// A leader that stops renewing (a hung process, a host gone without closing its
// connection) loses the lock once the database ends its idle session, after the lease.
TEST_F(PostgresStateTest, ALeaderThatStopsRenewingLosesTheLockAfterTheLease) {
  PostgresState a = Open("replica-a", 3s);
  PostgresState b = Open("replica-b", 3s);
  ASSERT_TRUE(a.leadership && b.leadership);
  const auto start = std::chrono::steady_clock::now();  // before a's session goes idle
  ASSERT_EQ(Or(a.leadership->TryAcquire(), false), true);
  ASSERT_TRUE(testing::WaitFor([&] { return Or(b.leadership->TryAcquire(), false); }, 30s));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 3s);  // not before the lease
  EXPECT_FALSE(a.leadership->Renew().ok());
}

TEST_F(PostgresStateTest, APasswordNeverReachesALog) {
  EXPECT_EQ(postgres::RedactedConninfo("postgresql://op:s3cret@db.example/fleet"), "postgresql://op:***@db.example/fleet");
  EXPECT_EQ(postgres::RedactedConninfo("host=db password=s3cret dbname=fleet"), "host=db password=*** dbname=fleet");
  EXPECT_EQ(postgres::RedactedConninfo("postgresql:///fleet?host=/run&password=s3cret"), "postgresql:///fleet?host=/run&password=***");
  auto unreachable = OpenPostgresState("postgresql://op:s3cret@127.0.0.1:1/fleet?connect_timeout=2", "replica-a");
  ASSERT_FALSE(unreachable.ok());
  EXPECT_EQ(unreachable.status().message().find("s3cret"), std::string::npos) << unreachable.status().message();
}

TEST(LockFileLeadershipTest, ASecondOperatorOnOneStateDirectoryStandsBy) {
  testing::TempDir dir;
  const std::string lock = (dir / "operator.lock").string();
  auto first = LockFileLeadership(lock, "host:1");
  auto second = LockFileLeadership(lock, "host:2");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(Or((*first)->TryAcquire(), false), true);
  EXPECT_EQ(Or((*second)->TryAcquire(), true), false);
  EXPECT_EQ((*second)->Leader(), "host:1");
  EXPECT_FALSE((*second)->Renew().ok());
  first->reset();  // the process is gone: the kernel drops its lock
  EXPECT_EQ(Or((*second)->TryAcquire(), false), true);
}

// A replica's role moves only as its table says; the moves time makes (the grace ends,
// the lease lapses, a late renewal) are made when the role is read.
TEST(ReplicaRoleTest, TheRoleMovesOnlyAsTheTableSaysAndTimeMovesItWhenRead) {
  using R = ReplicaRole;
  const std::vector<R> all = {R::kStandby, R::kWaitingOut, R::kActing, R::kLapsed};
  const std::map<R, std::set<R>> to_from = {
      {R::kStandby, {R::kWaitingOut, R::kActing, R::kLapsed}},
      {R::kWaitingOut, {R::kStandby, R::kLapsed}},
      {R::kActing, {R::kWaitingOut, R::kLapsed}},
      {R::kLapsed, {R::kWaitingOut, R::kActing}},
  };
  for (R from : all) {
    for (R to : all) {
      EXPECT_EQ(ReplicaRoleMoveAllowed(from, to), to_from.at(to).count(from) == 1)
          << ReplicaRoleName(from) << " -> " << ReplicaRoleName(to);
    }
  }
  const auto t0 = std::chrono::steady_clock::time_point(100s);
  ReplicaRoleState role;
  EXPECT_EQ(role.At(t0), R::kStandby);
  EXPECT_FALSE(role.StepDown()) << "nothing to give up";
  role.TookOver(t0, t0 + 3s, 5s);  // a grace of 3 s, a lease of 5 s (acting until 3 s after a renewal)
  EXPECT_TRUE(role.Holds());
  EXPECT_EQ(role.At(t0 + 1s), R::kWaitingOut);
  EXPECT_EQ(role.At(t0 + 3s), R::kLapsed) << "the lease less its margin is over as well";
  role.Renewed(t0 + 2s);
  EXPECT_EQ(role.At(t0 + 3s), R::kActing);
  EXPECT_EQ(role.At(t0 + 5s), R::kLapsed);
  EXPECT_TRUE(role.Holds()) << "lapsed, it still holds the leadership";
  EXPECT_TRUE(role.StepDown());
  EXPECT_EQ(role.At(t0 + 5s), R::kStandby);
  EXPECT_FALSE(role.Holds());

  ReplicaRoleState lock;  // a lease of zero: a lock nobody takes away never lapses
  lock.TookOver(t0, t0, 0s);
  EXPECT_EQ(lock.At(t0 + 1h), R::kActing);
}

// One cluster's agent, shared by both replicas: told to update, it has updated.
class SharedAgent : public UpdateAgent {
 public:
  explicit SharedAgent(fakes::FakeAgent& agent) : agent_(agent) {}
  Result<AgentSnapshot> Snapshot() override { return agent_.Snapshot(); }
  Status SetChannel(const std::string& channel) override { return agent_.SetChannel(channel); }
  Status SetDesiredUpdate(const std::string& version, const std::string& image) override {
    CINCINNATI_RETURN_IF_ERROR(agent_.SetDesiredUpdate(version, image));
    if (agent_.snapshot.history.front().version != version) {
      agent_.Progress();
      agent_.Complete();
    }
    return Status::OK();
  }

 private:
  fakes::FakeAgent& agent_;
};

class OperatorReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pg_.ready()) << pg_.log();
    std::string fleet = "clusters:\n";
    for (const char* name : {"c1", "c2", "c3"}) {
      fleet += std::string("- name: ") + name + "\n  agent: \"http://" + name + ".invalid\"\n";
      testing::WriteFile(dir_.path() / "configs" / (std::string(name) + ".yaml"),
                         "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nmetadata:\n"
                         "  name: managed-upgrade-config\nspec:\n  type: OSD\n  upgradeAt: \"" +
                             FormatTime(clock_.Now() - 1min) +
                             "\"\n  PDBForceDrainTimeout: 60\n  desired:\n    version: \"4.1.1\"\n    channel: stable-4.1\n");
    }
    testing::WriteFile(dir_.path() / "fleet.yaml", fleet);
  }
  // A replica on the manual clock whose agents are agents_ (or, with `agent`, on the
  // real clock with the agents it makes).
  std::unique_ptr<UpgradeOperator> Replica(const std::string& name,
                                           std::function<std::unique_ptr<UpdateAgent>(const std::string& replica)> agent = {}) {
    OperatorOptions options;
    options.fleet_path = (dir_.path() / "fleet.yaml").string();
    options.postgres_url = pg_.url();
    options.replica_name = name;
    options.configs_dir = (dir_.path() / "configs").string();
    options.interval = 1s;
    if (!agent) options.clock = &clock_;
    options.make_ports = [this, name, agent](const FleetCluster& cluster, const OperatorConfig&) {
      ClusterPortSet ports;
      ports.agent = agent ? agent(name) : std::make_unique<SharedAgent>(agents_[cluster.name]);
      return ports;
    };
    auto op = UpgradeOperator::Open(options);
    EXPECT_TRUE(op.ok()) << op.status().message();
    return op.ok() ? std::move(*op) : nullptr;
  }
  static std::map<std::string, std::string> Phases(UpgradeOperator& op) {
    std::map<std::string, std::string> phases;
    for (const auto& [name, config] : std::map<std::string, std::string>{{"c1", ""}, {"c2", ""}, {"c3", ""}}) {
      auto item = op.Get(name);
      const kube::JsonValue* status = item ? FindMember(*item, "status") : nullptr;
      const kube::JsonValue* history = status ? FindMember(*status, "history") : nullptr;
      phases[name] = history && history->is_array() && !ItemsOf(*history).empty() ? TextOf(*FindMember(ItemsOf(*history)[0], "phase")) : "";
    }
    return phases;
  }
  void Round(UpgradeOperator& op) {
    op.RunOnce();
    clock_.Advance(1s);
  }

  testing::PostgresServer pg_;
  testing::TempDir dir_;
  env::ManualClock clock_;
  std::map<std::string, fakes::FakeAgent> agents_;
};

// Replica a leads and starts the upgrades; b stands by, shows the same state and refuses
// a pause; a goes; b takes over and finishes every upgrade, commanding no agent twice.
TEST_F(OperatorReplicasTest, AStandbyShowsTheLeadersStateAndTakesOverWithoutRepeatingACommand) {
  auto a = Replica("replica-a");
  auto b = Replica("replica-b");
  ASSERT_TRUE(a && b);
  Round(*a);
  ASSERT_TRUE(a->Leading());
  Round(*a);
  Round(*b);
  EXPECT_FALSE(b->Leading());
  EXPECT_EQ(Phases(*b), Phases(*a));
  EXPECT_NE(Phases(*a)["c1"], "");
  Status refused = b->Pause("maintenance");
  EXPECT_EQ(refused.code(), Status::Code::kConflict);
  EXPECT_NE(refused.message().find("replica-a"), std::string::npos) << refused.message();
  EXPECT_NE(b->Metrics().find("leader_election_master_status{name=\"upgrade-operator\"} 0"), std::string::npos);
  EXPECT_NE(a->Metrics().find("leader_election_master_status{name=\"upgrade-operator\"} 1"), std::string::npos);
  int commanded_by_a = 0;
  for (auto& [name, agent] : agents_) commanded_by_a += agent.commands;

  a.reset();  // its sessions end with it
  ASSERT_TRUE(testing::WaitFor([&] {
    Round(*b);
    return b->Leading();
  }));
  for (int i = 0; i < 60 && Phases(*b) != std::map<std::string, std::string>{{"c1", "Upgraded"}, {"c2", "Upgraded"}, {"c3", "Upgraded"}}; ++i) {
    Round(*b);
  }
  EXPECT_EQ(Phases(*b), (std::map<std::string, std::string>{{"c1", "Upgraded"}, {"c2", "Upgraded"}, {"c3", "Upgraded"}}));
  for (auto& [name, agent] : agents_) {
    EXPECT_EQ(agent.commands, 1) << name;
    EXPECT_EQ(agent.snapshot.history.size(), 2u) << name;
  }
  RecordProperty("commanded_before_the_hand_over", commanded_by_a);
}

// A leader whose session the database ended steps down at its next renewal and starts
// no pass more; the standby leads.
TEST_F(OperatorReplicasTest, ALeaderThatLostItsSessionStopsActing) {
  auto a = Replica("replica-a");
  auto b = Replica("replica-b");
  ASSERT_TRUE(a && b);
  Round(*a);
  ASSERT_TRUE(a->Leading());
  ASSERT_TRUE(EndLockSessions(pg_));
  ASSERT_TRUE(testing::WaitFor([&] {
    Round(*b);
    return b->Leading();
  }));
  Round(*a);
  EXPECT_FALSE(a->Leading());
  EXPECT_EQ(a->Pause("x").code(), Status::Code::kConflict);
  b->RunOnce();  // renews: a leader that did not renew for the lease less its margin does not act
  EXPECT_TRUE(b->Leading());
  EXPECT_TRUE(b->Pause("x").ok());
}

// One agent that both replicas command, which records whether two commands ever ran at
// once; replica-a's command is held (a slow agent, within the HTTP ports' 10 s limit)
// until the test lets it end.
struct Contested {
  std::mutex mu;
  std::condition_variable cv;
  fakes::FakeAgent agent;
  int running = 0, most_at_once = 0;
  bool a_in_command = false, a_may_end = false;
  std::vector<std::string> commands;  // who commanded, in order
};

class ContestedAgent : public UpdateAgent {
 public:
  ContestedAgent(Contested& shared, std::string replica) : s_(shared), replica_(std::move(replica)) {}
  Result<AgentSnapshot> Snapshot() override {
    std::lock_guard lock(s_.mu);
    return s_.agent.Snapshot();
  }
  Status SetChannel(const std::string& channel) override {
    std::lock_guard lock(s_.mu);
    return s_.agent.SetChannel(channel);
  }
  Status SetDesiredUpdate(const std::string& version, const std::string& image) override {
    std::unique_lock lock(s_.mu);
    s_.most_at_once = std::max(s_.most_at_once, ++s_.running);
    s_.commands.push_back(replica_);
    if (replica_ == "replica-a") {
      s_.a_in_command = true;
      s_.cv.notify_all();
      s_.cv.wait(lock, [&] { return s_.a_may_end; });
    }
    Status s = s_.agent.SetDesiredUpdate(version, image);
    --s_.running;
    return s;
  }

 private:
  Contested& s_;
  std::string replica_;
};

// replica-a loses its lock session while its command to an agent is still under way;
// replica-b leads at once but acts only after a's lease and longest call, so the two
// never command at once, and b carries the upgrade on.
TEST_F(OperatorReplicasTest, ANewLeaderWaitsOutTheCommandsOfTheOneBefore) {
  testing::WriteFile(dir_.path() / "fleet.yaml", "clusters:\n- name: c1\n  agent: \"http://c1.invalid\"\n");
  testing::WriteFile(dir_.path() / "configs" / "c1.yaml",  // on the real clock, as both replicas run
                     "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nmetadata:\n"
                     "  name: managed-upgrade-config\nspec:\n  type: OSD\n  upgradeAt: \"" +
                         FormatTime(std::chrono::system_clock::now() - 1min) +
                         "\"\n  PDBForceDrainTimeout: 60\n  desired:\n    version: \"4.1.1\"\n    channel: stable-4.1\n");
  Contested shared;
  auto open = [&](const std::string& name) {
    return Replica(name, [&shared](const std::string& replica) { return std::make_unique<ContestedAgent>(shared, replica); });
  };
  auto a = open("replica-a");
  ASSERT_TRUE(a);
  std::jthread run_a([&](std::stop_token stop) { a->Run(stop); });
  {
    std::unique_lock lock(shared.mu);
    ASSERT_TRUE(shared.cv.wait_for(lock, 60s, [&] { return shared.a_in_command; }));
  }
  auto b = open("replica-b");
  ASSERT_TRUE(b);
  std::jthread run_b([&](std::stop_token stop) { b->Run(stop); });
  ASSERT_TRUE(EndLockSessions(pg_));
  ASSERT_TRUE(testing::WaitFor([&] { return b->Leading(); }, 30s));
  ASSERT_TRUE(testing::WaitFor([&] { return !a->Leading(); }, 30s));
  // a's command is still under way, as a slow agent's would be: b leads but may not act
  // (no pass, command or call) until a's lease and longest call are over.
  EXPECT_FALSE(b->Acting());
  {
    std::lock_guard lock(shared.mu);
    EXPECT_EQ(shared.commands, std::vector<std::string>{"replica-a"});
    shared.a_may_end = true;
    shared.cv.notify_all();
  }
  // b acts once its wait is over: its passes run, and take the upgrade on (the agent
  // has the update a commanded, so b's command step counts it as commenced).
  ASSERT_TRUE(testing::WaitFor([&] {
    return testing::MetricValue(b->Metrics(), R"(upgradeoperator_reconciles_total{upgradeconfig_name="c1"})") >= 2;
  }, 60s));
  auto item = b->Get("c1");
  ASSERT_TRUE(item.has_value());
  const kube::JsonValue* history = FindMember(*item, "status") ? FindMember(*FindMember(*item, "status"), "history") : nullptr;
  ASSERT_TRUE(history && history->is_array() && !ItemsOf(*history).empty()) << kube::WriteJson(*item);
  EXPECT_EQ(TextOf(*FindMember(ItemsOf(*history)[0], "phase")), "Upgrading");
  std::lock_guard lock(shared.mu);
  EXPECT_EQ(shared.most_at_once, 1);
  EXPECT_EQ(shared.commands.front(), "replica-a");
}

}  // namespace
}  // namespace cincinnati::upgrade
