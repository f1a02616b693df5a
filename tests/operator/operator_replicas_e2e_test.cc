// Two replicas of the upgrade operator, real processes on one real PostgreSQL server,
// with real agents, Prometheus, Alertmanager and a webhook receiver (the fixture of
// operator_e2e_test.cc): the leader is killed with SIGKILL at random moments of a
// rollout of two clusters, the other replica leads within 15 s each time, both clusters
// end Upgraded, and no webhook, silence or command to an agent happens twice.
#include <array>

#include "operator_e2e_fixture.h"
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

}  // namespace
}  // namespace cincinnati::upgrade::e2e
