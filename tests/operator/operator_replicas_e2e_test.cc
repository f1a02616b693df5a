// Two replicas of the upgrade operator, real processes on one real PostgreSQL server,
// with real agents, Prometheus, Alertmanager and a webhook receiver (the fixture of
// operator_e2e_test.cc): the leader is killed with SIGKILL at random moments of a
// rollout of two clusters, the other replica leads within 15 s each time, both clusters
// end Upgraded, and no webhook, silence or command to an agent happens twice. A leader
// stopped cleanly (SIGTERM) hands over without a grace; a stalled database stops no
// answer of either replica; hooks end with the term, or the process, that ran them.
#include <signal.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "operator_e2e_fixture.h"
#include "operator/operator_api.h"
#include "postgres_server.h"

namespace cincinnati::upgrade::e2e {
namespace {
using kube::TextOf;
using kube::ItemsOf;

double MetricOf(ServiceProcess& p, const std::string& series) { return testing::MetricValue(Get(p.url("/metrics")).body, series); }

TEST_F(OperatorE2ETest, TwoReplicasOnPostgresHandOverAtAnyMomentAndRepeatNoSideEffect) {
  testing::PostgresServer pg;
  ASSERT_TRUE(pg.ready()) << pg.log();
  const std::vector<std::string> names = {"prod-1", "prod-2"};
  for (const auto& name : names) WaitUntilOffered(AddCluster(name));
  for (const auto& name : names) WriteUpgradeConfig(name, "4.1.1", std::chrono::system_clock::now());
  alertmanager_extra_ = ", clusterLabel: cluster";  // one Alertmanager stands in for each cluster's

  std::array<std::unique_ptr<ServiceProcess>, 2> replicas;
  int started = 0;
  auto start = [&](size_t i) {
    replicas[i] = std::make_unique<ServiceProcess>(
        "upgrade-operator", OperatorArgs("", {}, {"--state.postgres", pg.url(), "--replica-name", "replica-" + std::to_string(++started)}));
    ASSERT_TRUE(replicas[i]->running()) << replicas[i]->log();
  };
  auto leader = [&]() -> int {
    for (size_t i = 0; i < replicas.size(); ++i) {
      if (replicas[i] && MetricOf(*replicas[i], R"(leader_election_master_status{name="upgrade-operator"})") == 1) return static_cast<int>(i);
    }
    return -1;
  };
  // The newest history entry of a cluster, from either replica (a standby answers from
  // the database, so what it shows is committed).
  auto newest = [&](const std::string& cluster) {
    for (auto& r : replicas) {
      if (!r) continue;
      const JsonValue config = Json(Get(r->url(std::string(kConfigs) + "/" + cluster)).body);
      const JsonValue& history = At(config, {"status", "history"});
      if (history.is_array() && !ItemsOf(history).empty()) return ItemsOf(history)[0];
    }
    return JsonValue();
  };
  auto phase = [&](const std::string& cluster) { return TextOf(At(newest(cluster), {"phase"})); };
  auto condition = [&](const std::string& cluster, const std::string& type) {
    const JsonValue entry = newest(cluster);
    for (const auto& c : ItemsOf(At(entry, {"conditions"}))) {
      if (TextOf(At(c, {"type"})) == type) return TextOf(At(c, {"status"}));
    }
    return std::string();
  };
  auto all_upgraded = [&] { return phase("prod-1") == "Upgraded" && phase("prod-2") == "Upgraded"; };
  start(0);
  start(1);

  // The leader is killed as soon as each of prod-1's steps below is seen recorded: the
  // kill lands wherever the leader is by then, before, between or after the side effects
  // and records of the steps that follow, of prod-1 and of prod-2.
  int kills = 0;
  for (const char* point : {"StartedNotificationSent", "UpgradeCommenced", "ControlPlaneUpgraded", "WorkerNodesUpgraded"}) {
    ASSERT_TRUE(testing::WaitFor([&] { return condition("prod-1", point) == "True"; }, 90s)) << point;
    int leading = -1;
    ASSERT_TRUE(testing::WaitFor([&] { return (leading = leader()) >= 0; }, 30s)) << replicas[0]->log() << replicas[1]->log();
    replicas[leading]->Kill();
    ++kills;
    const auto killed = std::chrono::steady_clock::now();
    const int other = 1 - leading;
    ASSERT_TRUE(testing::WaitFor([&] { return leader() == other; }, 30s)) << replicas[other]->log();
    const auto leads = std::chrono::steady_clock::now() - killed;
    // It acts once the last leader's lease and longest call are surely over: its first
    // pass (a fresh process, or one that stood by since it started: it counts from 0).
    auto passes = [&](ServiceProcess& r) {
      double sum = 0;
      for (const auto& name : names) sum += std::max(0.0, MetricOf(r, R"(upgradeoperator_reconciles_total{upgradeconfig_name=")" + name + "\"}"));
      return sum;
    };
    ASSERT_TRUE(testing::WaitFor([&] { return passes(*replicas[other]) > 0; }, 30s))
        << replicas[other]->log();
    const auto acts = std::chrono::steady_clock::now() - killed;
    std::cerr << "after " << point << ": replica " << other << " leads " << std::chrono::duration<double>(leads).count()
              << " s and acts " << std::chrono::duration<double>(acts).count() << " s after the kill\n";
    EXPECT_LE(leads, 15s);
    EXPECT_LE(acts, 20s);  // the grace is 12 s from the last renewal (leadership.h)
    start(leading);  // back, as a standby
  }
  ASSERT_TRUE(testing::WaitFor(all_upgraded, 120s)) << replicas[0]->log() << replicas[1]->log();
  EXPECT_EQ(kills, 4);

  for (const auto& name : names) {
    // At most once each; a kill between a claim and its sending loses that one (the
    // ledger's rule), so each kill may cost one per cluster.
    int received = 0;
    for (const char* event : kOnceEach) {
      EXPECT_LE(receiver_.Count(name, event), 1) << name << " " << event;
      received += receiver_.Count(name, event);
    }
    EXPECT_GE(received, static_cast<int>(std::size(kOnceEach)) - kills) << name;
    int control_plane = 0;
    for (const auto& s : Silences()) {
      control_plane += TextOf(At(s, {"comment"})) == "Silence for OSD control plane upgrade to version 4.1.1 on cluster " + name;
    }
    EXPECT_EQ(control_plane, 1) << name;
  }
  for (auto& c : clusters_) {
    JsonValue cv = Json(Get(c->agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
    EXPECT_EQ(ItemsOf(At(cv, {"status", "history"})).size(), 2u) << c->name << kube::WriteJson(cv, 2);
  }
}

// The state of a replica's first cluster as its agent says: the version it was told to
// update to ("" none).
std::string Commanded(Cluster& c) {
  const JsonValue cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  return TextOf(At(cv, {"spec", "desiredUpdate", "version"}));
}

double LeaderMetric(ServiceProcess& p) { return MetricOf(p, R"(leader_election_master_status{name="upgrade-operator"})"); }

http::Result PostPause(ServiceProcess& p) {
  http::RequestOptions options;
  options.method = "POST";
  options.headers = {"Content-Type: application/json"};
  options.body = R"({"reason": "maintenance"})";
  options.timeout = std::chrono::seconds(10);
  return http::Request(p.url(std::string(kFleetPath) + "/pause"), options);
}

// A leader stopped with SIGTERM finishes its passes and calls, records that its term
// ended cleanly, and lets go: the standby acts at once instead of waiting out the grace
// a kill -9 costs (11-12 s). A standby names the leader from its first answer.
TEST_F(OperatorE2ETest, ALeaderStoppedCleanlyHandsOverWithoutAGraceAndAStandbyNamesItAtOnce) {
  testing::PostgresServer pg;
  ASSERT_TRUE(pg.ready()) << pg.log();
  Cluster& cluster = AddCluster("prod-1");
  WaitUntilOffered(cluster);
  auto replica = [&](const std::string& name) {
    return std::make_unique<ServiceProcess>("upgrade-operator", OperatorArgs("", {}, {"--state.postgres", pg.url(), "--replica-name", name}));
  };
  auto first = replica("replica-1");
  ASSERT_TRUE(first->running()) << first->log();
  ASSERT_TRUE(testing::WaitFor([&] { return LeaderMetric(*first) == 1; }, 60s)) << first->log();
  auto second = replica("replica-2");
  ASSERT_TRUE(second->running()) << second->log();
  // Its first answer, before any election round of its own may have run.
  const http::Result refused = PostPause(*second);
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(refused.body.find("the leader is replica-1"), std::string::npos) << refused.body;

  const auto stopped = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(first->pid(), SIGTERM), 0);
  // Once the stopped leader has ended its term, a cluster is due: only the successor
  // can command it.
  ASSERT_TRUE(testing::WaitFor([&] { return first->log().find("ended cleanly") != std::string::npos; }, 60s)) << first->log();
  WriteUpgradeConfig("prod-1", "4.1.1", std::chrono::system_clock::now() - 1min);
  ASSERT_TRUE(testing::WaitFor([&] { return Commanded(cluster) == "4.1.1"; }, 60s)) << second->log();
  const auto commanded = std::chrono::steady_clock::now() - stopped;
  std::cerr << "the successor commanded its first cluster " << std::chrono::duration<double>(commanded).count()
            << " s after the leader's SIGTERM\n";
  EXPECT_LT(commanded, 3s);
  EXPECT_EQ(first->Stop(), 0) << first->log();
  EXPECT_EQ(LeaderMetric(*second), 1);
}

// PostgreSQL stops answering (SIGSTOP: its connections stay open, over a Unix socket no
// keepalive notices): neither replica's /healthz nor /metrics waits on it; the leader's
// renewal times out and it steps down; once the database runs again, one leads.
TEST_F(OperatorE2ETest, AStalledDatabaseStopsNoAnswerOfEitherReplica) {
  testing::PostgresServer pg;
  ASSERT_TRUE(pg.ready()) << pg.log();
  WaitUntilOffered(AddCluster("prod-1"));
  WriteUpgradeConfig("prod-1", "4.1.1", std::chrono::system_clock::now() + 1h);  // passes, and their writes, go on
  std::array<std::unique_ptr<ServiceProcess>, 2> replicas;
  for (size_t i = 0; i < replicas.size(); ++i) {
    replicas[i] = std::make_unique<ServiceProcess>(
        "upgrade-operator", OperatorArgs("", {}, {"--state.postgres", pg.url(), "--replica-name", "replica-" + std::to_string(i + 1)}));
    ASSERT_TRUE(replicas[i]->running()) << replicas[i]->log();
  }
  int leading = -1;
  ASSERT_TRUE(testing::WaitFor([&] {
    for (int i = 0; i < 2; ++i) {
      if (LeaderMetric(*replicas[i]) == 1) leading = i;
    }
    return leading >= 0;
  }, 60s));
  ASSERT_GT(pg.Freeze(), 2);
  std::chrono::steady_clock::duration slowest{};
  std::string slowest_what;
  auto timed = [&](ServiceProcess& r, const std::string& path) {
    const auto start = std::chrono::steady_clock::now();
    const http::Result answer = Get(r.url(path));
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(answer.status, 200) << path << " " << answer.body;
    if (took > slowest) {
      slowest = took;
      slowest_what = path;
    }
    return answer;
  };
  // Until the leader has stepped down (its renewal timed out) and a few rounds after.
  int rounds_after = 0;
  const auto frozen = std::chrono::steady_clock::now();
  while (rounds_after < 5 && std::chrono::steady_clock::now() - frozen < 60s) {
    double leader_metric = 1;
    for (int i = 0; i < 2; ++i) {
      timed(*replicas[i], "/healthz");
      const http::Result metrics = timed(*replicas[i], "/metrics");
      if (i == leading) leader_metric = testing::MetricValue(metrics.body, R"(leader_election_master_status{name="upgrade-operator"})");
    }
    if (leader_metric == 0) ++rounds_after;
  }
  const auto stepped_down = std::chrono::steady_clock::now() - frozen;
  std::cerr << "while PostgreSQL was stopped, the slowest answer took " << std::chrono::duration<double>(slowest).count() << " s ("
            << slowest_what << "); the leader stepped down within " << std::chrono::duration<double>(stepped_down).count() << " s\n";
  EXPECT_EQ(rounds_after, 5) << "the leader never stepped down: " << replicas[leading]->log();
  EXPECT_LT(slowest, 1s) << slowest_what;
  ASSERT_GT(pg.Thaw(), 2);
  ASSERT_TRUE(testing::WaitFor([&] { return LeaderMetric(*replicas[0]) == 1 || LeaderMetric(*replicas[1]) == 1; }, 60s))
      << replicas[0]->log() << replicas[1]->log();
}

// The processes of a hook: the shell's pid and its child's, as the hook wrote them.
std::vector<pid_t> HookPids(const std::filesystem::path& file) {
  std::vector<pid_t> pids;
  std::ifstream in(file);
  for (pid_t pid; in >> pid;) pids.push_back(pid);
  return pids;
}
bool Alive(pid_t pid) {
  const std::string stat = testing::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';  // a zombie has ended
}
// A capacity hook that sleeps 300 s in a child of its shell, and writes both pids.
std::string SleepingHook(const std::filesystem::path& pids) {
  return "hooks: {capacityReservation: \"echo $$ >> " + pids.string() + "; sleep 300 & echo $! >> " + pids.string() +
         "; wait\", timeout: 600}\n";
}

// prod-1's UpgradeConfig, due now, with a capacity reservation (so its hook runs).
void WriteReservingConfig(const std::filesystem::path& configs) {
  testing::WriteFile(configs / "prod-1.yaml",
                     "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nmetadata:\n  name: managed-upgrade-config\n"
                     "spec:\n  type: OSD\n  upgradeAt: \"" + Rfc3339(std::chrono::system_clock::now() - 1min) +
                         "\"\n  PDBForceDrainTimeout: 60\n  capacityReservation: true\n  desired:\n    version: \"4.1.1\"\n"
                         "    channel: stable-4.1\n");
}

// kill -9 of the operator while its hook runs: the hook's shell and its child go too.
TEST_F(OperatorE2ETest, AHookDiesWithItsOperatorEvenOnKillDashNine) {
  const std::filesystem::path pids = dir_ / "hook.pids";
  WaitUntilOffered(AddCluster("prod-1"));
  WriteReservingConfig(configs_.path());
  StartOperator(SleepingHook(pids));
  ASSERT_TRUE(testing::WaitFor([&] { return HookPids(pids).size() == 2; }, 90s)) << operator_->log();
  const std::vector<pid_t> hook = HookPids(pids);
  ASSERT_TRUE(Alive(hook[0]) && Alive(hook[1]));
  const auto killed = std::chrono::steady_clock::now();
  operator_->Kill();
  ASSERT_TRUE(testing::WaitFor([&] { return !Alive(hook[0]) && !Alive(hook[1]); }, 60s));
  const auto gone = std::chrono::steady_clock::now() - killed;
  std::cerr << "the hook's processes were gone " << std::chrono::duration<double>(gone).count() << " s after the kill -9\n";
  EXPECT_LT(gone, 5s);
}

// A leader that loses its lock session steps down, and kills the hook it runs then: a
// new leader never runs the same hook beside it.
TEST_F(OperatorE2ETest, ALeaderThatStepsDownKillsItsRunningHook) {
  testing::PostgresServer pg;
  ASSERT_TRUE(pg.ready()) << pg.log();
  const std::filesystem::path pids = dir_ / "hook.pids";
  WaitUntilOffered(AddCluster("prod-1"));
  WriteReservingConfig(configs_.path());
  ServiceProcess leader("upgrade-operator", OperatorArgs(SleepingHook(pids), {}, {"--state.postgres", pg.url(), "--replica-name", "replica-1"}));
  ASSERT_TRUE(leader.running()) << leader.log();
  ASSERT_TRUE(testing::WaitFor([&] { return HookPids(pids).size() == 2; }, 90s)) << leader.log();
  const std::vector<pid_t> hook = HookPids(pids);
  ASSERT_TRUE(pg.Exec("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted").ok());
  ASSERT_TRUE(testing::WaitFor([&] { return !Alive(hook[0]) && !Alive(hook[1]); }, 60s)) << leader.log();
  EXPECT_TRUE(leader.running());  // it stood down; it did not stop
  EXPECT_NE(leader.log().find("running hooks killed"), std::string::npos) << leader.log();
}

}  // namespace
}  // namespace cincinnati::upgrade::e2e
