// Two `serve` processes on one PostgreSQL (--reports.postgres), as replicas behind a
// balancer: each saw some of the clusters, some clusters polled both, and each one's
// adoption panel counts every cluster once (policy_engine/adoption_store.h).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "postgres_server.h"
#include "service_util.h"
#include "test_util.h"
#include "update_report_util.h"

namespace cincinnati {
namespace {

using namespace std::chrono_literals;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

const std::filesystem::path kExample = testing::Examples() / "ocp-4x";

void Poll(const std::string& base, int n) {
  ASSERT_EQ(Get(base + "/graph?channel=stable-4.13&version=4.13.1&id=" + testing::TestClusterId(n), {"Accept: application/json"})
                .status,
            200);
}

// The newest sample's count at 4.13.1 on the adoption panel's data; -1 when none.
int64_t Newest(const std::string& base) {
  const http::Result r = Get(base + "/v1/ui/adoption");
  if (r.status != 200) return -1;
  const boost::json::value json = boost::json::parse(r.body);
  const boost::json::array& samples = json.as_object().at("samples").as_array();
  if (samples.empty()) return -1;
  const boost::json::object& clusters = samples.back().as_object().at("clusters").as_object();
  return clusters.contains("4.13.1") ? clusters.at("4.13.1").to_number<int64_t>() : 0;
}

TEST(AdoptionReplicasTest, TwoServesOnOneDatabaseEachCountEveryClusterOnce) {
  testing::PostgresServer pg;
  ASSERT_TRUE(pg.ready()) << pg.log();
  testing::TempDir dir;
  auto args = [&](const std::string& name) {
    // Ten simulated minutes (a sample period) a second: samples come as polls do.
    return std::vector<std::string>{"--releases", (kExample / "releases").string(), "--graph-data",
                                    (kExample / "graph-data").string(), "--reports.state_dir", (dir / name).string(),
                                    "--reports.postgres", pg.url(), "--testing.now", "2030-01-01T00:00:00Z",
                                    "--testing.time_scale", "600", "--brakes.enabled", "false"};
  };
  ServiceProcess a("serve", args("a")), b("serve", args("b"));
  ASSERT_TRUE(a.running()) << a.log();
  ASSERT_TRUE(b.running()) << b.log();
  for (ServiceProcess* s : {&a, &b}) {
    ASSERT_TRUE(WaitFor([&] { return Get(s->url("/readiness", "status")).status == 200; }, 60s)) << s->log();
  }
  const std::string base_a = a.url("/api/upgrades_info"), base_b = b.url("/api/upgrades_info");
  // Clusters 1..20 through a, 11..30 through b: 30 clusters, 20 seen by each, 40 sightings.
  for (int n = 1; n <= 20; ++n) ASSERT_NO_FATAL_FAILURE(Poll(base_a, n));
  for (int n = 11; n <= 30; ++n) ASSERT_NO_FATAL_FAILURE(Poll(base_b, n));
  // A sample is taken by a poll that finds it due, and reads the other's latest sketch.
  // 30 within the sketch's error (two of these ids share a register: 29), not 20 or 40.
  auto about_thirty = [](int64_t n) { return n >= 28 && n <= 32; };
  int64_t seen_a = -1, seen_b = -1;
  EXPECT_TRUE(WaitFor([&] {
    Poll(base_a, 1);
    Poll(base_b, 11);
    seen_a = Newest(base_a);
    seen_b = Newest(base_b);
    return about_thirty(seen_a) && about_thirty(seen_b);
  }, 60s)) << "a: " << seen_a << ", b: " << seen_b << "\n" << a.log() << b.log();
  const Result<postgres::PgResult> engines = pg.Exec("SELECT DISTINCT engine FROM adoption_sketches");
  ASSERT_TRUE(engines.ok()) << engines.status().message();
  EXPECT_EQ(engines->rows.size(), 2u);
}

}  // namespace
}  // namespace cincinnati
