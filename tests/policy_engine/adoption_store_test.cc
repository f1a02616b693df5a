// Policy engines side by side share their adoption samples through PostgreSQL
// (policy_engine/adoption_store.h, adoption_history.h): three engines behind a
// round-robin balancer each record the whole fleet, counted once; engines that stop
// drop out; with the database gone, an engine records its own counts, and no poll
// waits for a database that does not answer.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <fmt/format.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "env/clock.h"
#include "policy_engine/adoption_history.h"
#include "policy_engine/adoption_store.h"
#include "postgres_server.h"
#include "reports/poll_sightings.h"

namespace cincinnati::server {
namespace {

std::string Id(int n) { return fmt::format("00000000-0000-4000-8000-{:012x}", n); }

// One policy engine's adoption parts.
struct Engine {
  Engine(const std::string& url, const std::string& name)
      : store(std::make_shared<AdoptionStore>(AdoptionStoreOptions{.conninfo = url, .engine = name})),
        history(AdoptionOptions{.period = 600, .window = 86400, .capacity = 100, .store = store}) {}
  // A poll answered: as PolicyEngineService::Sighting::Saw records it.
  void Poll(const std::string& id, const std::string& version, int64_t now) {
    seen.Record(id, version, now);
    history.MaybeSample(seen, now);
  }
  PollSightings seen{1 << 14};
  std::shared_ptr<AdoptionStore> store;
  AdoptionHistory history;
};

// The newest sample's clusters by version (as the page reads them), with its time.
struct Sample {
  std::string time;
  std::map<std::string, uint64_t> clusters;
  uint64_t total = 0;
};
Sample Newest(const AdoptionHistory& history) {
  const boost::json::value json = boost::json::parse(history.Json());
  const boost::json::array& samples = json.as_object().at("samples").as_array();
  if (samples.empty()) return {};
  const boost::json::object& last = samples.back().as_object();
  Sample out{std::string(last.at("time").as_string()), {}, 0};
  for (const auto& entry : last.at("clusters").as_object()) {
    out.clusters[std::string(entry.key())] = entry.value().to_number<uint64_t>();
    out.total += entry.value().to_number<uint64_t>();
  }
  return out;
}

// Every engine samples at `now`, one after the other; returns once each recorded it.
void SampleAll(std::vector<std::unique_ptr<Engine>>& engines, int64_t now) {
  for (auto& e : engines) {
    e->history.MaybeSample(e->seen, now);
    e->history.Flush();
  }
}

class AdoptionStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(pg_.ready()) << pg_.log(); }
  testing::PostgresServer pg_;
};

TEST_F(AdoptionStoreTest, EnginesBehindARoundRobinBalancerEachCountTheWholeFleetOnce) {
  env::ManualClock clock;
  std::vector<std::unique_ptr<Engine>> engines;
  for (const char* name : {"engine-a", "engine-b", "engine-c"}) engines.push_back(std::make_unique<Engine>(pg_.url(), name));
  // 3,000 clusters, 2,000 at 4.13.1 and 1,000 at 4.13.2, each polling twice, its polls
  // going to two different engines: each engine sees 2,000 of them, the three 6,000.
  for (int round = 0; round < 2; ++round) {
    for (int n = 0; n < 3000; ++n) {
      engines[(n + round) % 3]->Poll(Id(n), n < 2000 ? "4.13.1" : "4.13.2", env::UnixSeconds(clock));
    }
    clock.Advance(std::chrono::seconds(180));
  }
  for (auto& e : engines) {
    e->history.Flush();  // the first polls' samples
    EXPECT_EQ(e->seen.CountByVersion(env::UnixSeconds(clock), 86400).size(), 2u);
  }
  // Rows that are not sketches are skipped; rows older than a day are deleted.
  const int64_t now = env::UnixSeconds(clock);
  ASSERT_TRUE(pg_.Exec(fmt::format("INSERT INTO adoption_sketches VALUES ('broken', '4.13.1', {}, '\\x00'), "
                                   "('gone', '4.12.0', {}, '\\x00')",
                                   now + 1200, now - 2 * 86400)).ok());

  // The first due sample of each reads the others' previous rows; by the second, every
  // engine's full sketch is there.
  clock.Advance(std::chrono::seconds(600));
  SampleAll(engines, env::UnixSeconds(clock));
  clock.Advance(std::chrono::seconds(600));
  SampleAll(engines, env::UnixSeconds(clock));
  for (auto& e : engines) {
    Sample s = Newest(e->history);
    EXPECT_NEAR(double(s.total), 3000, 150) << e->store->engine() << ": not 2,000 (its own) nor 6,000 (a sum)";
    EXPECT_NEAR(double(s.clusters["4.13.1"]), 2000, 100) << e->store->engine();
    EXPECT_NEAR(double(s.clusters["4.13.2"]), 1000, 50) << e->store->engine();
    EXPECT_EQ(s.clusters.count("4.12.0"), 0u);
  }
  Result<postgres::PgResult> rows = pg_.Exec("SELECT engine, version FROM adoption_sketches ORDER BY engine, version");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(rows->rows.size(), 7u) << "two versions of three engines, and the broken row";

  // Engines that stopped drop out once their rows are two periods old.
  clock.Advance(std::chrono::seconds(1200));
  engines[0]->history.MaybeSample(engines[0]->seen, env::UnixSeconds(clock));
  engines[0]->history.Flush();
  EXPECT_NEAR(double(Newest(engines[0]->history).total), 3000, 150) << "the others' rows are two periods old";
  clock.Advance(std::chrono::seconds(600));
  engines[0]->history.MaybeSample(engines[0]->seen, env::UnixSeconds(clock));
  engines[0]->history.Flush();
  EXPECT_NEAR(double(Newest(engines[0]->history).total), 2000, 100) << "only its own rows are recent";

  // The database gone, a sample still comes: this engine's own counts.
  pg_.Stop();
  clock.Advance(std::chrono::seconds(600));
  engines[0]->history.MaybeSample(engines[0]->seen, env::UnixSeconds(clock));
  engines[0]->history.Flush();
  const Sample own = Newest(engines[0]->history);
  EXPECT_EQ(own.total, 2000u);
  EXPECT_EQ(own.clusters.at("4.13.1"), 1333u);
  EXPECT_EQ(own.clusters.at("4.13.2"), 667u);
}

TEST(AdoptionStoreOutageTest, WithNoDatabaseEverySampleCountsThisEnginesPolls) {
  testing::TempDir dir;  // no server's socket there
  env::ManualClock clock;
  Engine engine("postgresql:///postgres?host=" + dir.path().string() + "&port=5432&user=postgres", "alone");
  for (int n = 0; n < 40; ++n) engine.Poll(Id(n), n < 30 ? "4.13.1" : "4.13.2", env::UnixSeconds(clock));
  engine.history.Flush();
  clock.Advance(std::chrono::seconds(600));
  engine.Poll(Id(0), "4.13.1", env::UnixSeconds(clock));
  engine.history.Flush();
  const Sample s = Newest(engine.history);
  EXPECT_EQ(s.clusters, (std::map<std::string, uint64_t>{{"4.13.1", 30}, {"4.13.2", 10}}));
  EXPECT_EQ(s.time, "2026-01-01T00:10:00Z");
}

// A database that takes the connection and never answers: the poll that finds the
// sample due returns at once, and the sample comes once the connection times out.
TEST(AdoptionStoreOutageTest, NoPollWaitsForTheDatabase) {
  testing::TempDir dir;
  const std::string socket_path = (dir / ".s.PGSQL.5432").string();
  const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socket_path.size(), sizeof address.sun_path);
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size());
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 8), 0);  // connections wait in the backlog, unanswered

  env::ManualClock clock;
  Engine engine("postgresql:///postgres?host=" + dir.path().string() + "&port=5432&user=postgres&connect_timeout=4", "stuck");
  for (int n = 0; n < 10; ++n) engine.seen.Record(Id(n), "4.13.1", env::UnixSeconds(clock));
  engine.history.MaybeSample(engine.seen, env::UnixSeconds(clock));
  EXPECT_EQ(Newest(engine.history).total, 0u) << "the sample is being taken on the history's thread";
  engine.history.Flush();
  EXPECT_EQ(Newest(engine.history).clusters, (std::map<std::string, uint64_t>{{"4.13.1", 10}}));
  ::close(listener);
}

}  // namespace
}  // namespace cincinnati::server
