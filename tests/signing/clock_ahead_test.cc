// A service whose clock was once ahead (an NTP mis-step, a VM restored with a bad clock)
// does not lock checking agents out once its clock is right again
// (signing/graph_generation.h, docs/clocks-ahead.md), and refuses a signature validity
// that would expire every answer; over real `serve` processes and agents' checks.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "core/answer_signature.h"
#include "core/date_time.h"
#include "env/key_files.h"
#include "http/client.h"
#include "service_util.h"
#include "signing_util.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

const fs::path kExample = testing::Examples() / "ocp-4x";
constexpr int64_t kYear = 365 * 86400;

int64_t Now() { return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(); }

class ClockAheadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = testing::WriteKeyPair(dir_.path(), trusted_.path(), "service");
    auto keys = env::LoadTrustedKeys(trusted_.path().string());
    ASSERT_TRUE(keys.ok()) << keys.status().message();
    keys_ = *keys;
  }
  std::unique_ptr<ServiceProcess> Serve(std::vector<std::string> extra = {}, const fs::path& graph_data = kExample / "graph-data") {
    std::vector<std::string> args = {"--releases", (kExample / "releases").string(), "--graph-data", graph_data.string(),
                                     "--signing.keys", key_.private_key.string(), "--signing.state_dir", (dir_ / "signing").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto serve = std::make_unique<ServiceProcess>("serve", args);
    EXPECT_TRUE(WaitFor([&] { return Get(serve->url("/readyz", "status")).status == 200; }, 60s)) << serve->log();
    return serve;
  }
  struct Fetched {
    std::string body, header;
    uint64_t generation = 0;
  };
  static Fetched Fetch(ServiceProcess& serve) {
    http::Result r = http::Get(serve.url("/api/upgrades_info/graph?channel=stable-4.13&arch=amd64&version=4.13.1"),
                               {.headers = {"Accept: application/json"}});
    EXPECT_EQ(r.status, 200);
    Fetched f{r.body, r.Header(kSignatureHeader) ? *r.Header(kSignatureHeader) : ""};
    if (const std::string* g = r.Header("Cincinnati-Graph-Generation")) f.generation = std::stoull(*g);
    return f;
  }
  // An agent's check of `f` at `now`, having taken `newest` before.
  SignatureCheck Check(const Fetched& f, int64_t now, uint64_t newest) const {
    return CheckAnswerSignature(&f.header, f.body, {"stable-4.13", "amd64", "4.13.1", ""}, keys_, now, newest);
  }

  testing::TempDir dir_, trusted_;
  testing::KeyFiles key_;
  TrustedKeys keys_;
};

TEST_F(ClockAheadTest, AgentsTakeAnswersAgainAtOnceWhenTheServiceIsBackOnARightClock) {
  // A cluster with a right clock takes an answer of the service's first graph (4.13.2 not
  // yet in the channel).
  testing::TempDir earlier;
  fs::copy(kExample / "graph-data", earlier.path(), fs::copy_options::recursive);
  std::string channel = testing::ReadFile(earlier / "channels" / "stable-4.13.yaml");
  channel.replace(channel.find("- 4.13.2"), 8, "");
  testing::WriteFile(earlier / "channels" / "stable-4.13.yaml", channel);
  auto serve = Serve({}, earlier.path());
  const Fetched before = Fetch(*serve);
  ASSERT_EQ(Check(before, Now(), 0).verdict, SignatureVerdict::kAccepted) << Check(before, Now(), 0).message;
  const uint64_t right_clock_agent = before.generation;
  ASSERT_EQ(serve->Stop(), 0);

  // The service runs on a clock a year ahead and publishes a new graph. A cluster with a
  // right clock refuses its answers; one whose clock was ahead too takes them.
  serve = Serve({"--testing.now", FormatUnixSeconds(Now() + kYear)});
  const Fetched ahead = Fetch(*serve);
  EXPECT_GT(ahead.generation / 1000, static_cast<uint64_t>(Now() + kYear - 3600));
  EXPECT_NE(Check(ahead, Now(), right_clock_agent).verdict, SignatureVerdict::kAccepted);
  ASSERT_EQ(Check(ahead, Now() + kYear, right_clock_agent).verdict, SignatureVerdict::kAccepted);
  const uint64_t ahead_clock_agent = ahead.generation;
  ASSERT_EQ(serve->Stop(), 0);

  // Its clock is corrected and it starts again with the same state directory.
  serve = Serve();
  const Fetched after = Fetch(*serve);
  EXPECT_LE(after.generation / 1000, static_cast<uint64_t>(Now()) + kMaxGenerationLead) << "never ahead of the clock by more than the lead";
  EXPECT_GT(after.generation, right_clock_agent);
  const SignatureCheck right = Check(after, Now(), right_clock_agent);
  EXPECT_EQ(right.verdict, SignatureVerdict::kAccepted) << "the agent that never saw the future number: " << right.message;
  EXPECT_EQ(Check(after, Now(), 0).verdict, SignatureVerdict::kAccepted) << "a new agent";
  EXPECT_EQ(Check(after, Now(), ahead_clock_agent).verdict, SignatureVerdict::kRolledBack)
      << "the agent that took the future number refuses until the service's clock passes it (its message: answer_trust_test)";
  EXPECT_NE(serve->log().find("ahead of this clock"), std::string::npos) << serve->log();
  const std::string metrics = Get(serve->url("/metrics", "status")).body;
  EXPECT_EQ(testing::MetricValue(metrics, "cincinnati_gb_graph_generations_given_up_total"), 1) << metrics;
  EXPECT_LE(testing::MetricValue(metrics, "cincinnati_gb_graph_generation_ahead_seconds"), static_cast<double>(kMaxGenerationLead));
  EXPECT_LE(testing::MetricValue(metrics, "cincinnati_pe_graph_generation_ahead_seconds"), static_cast<double>(kMaxGenerationLead));
  ASSERT_EQ(serve->Stop(), 0);

  // Restarted again: the same number, nothing given up twice.
  serve = Serve();
  EXPECT_EQ(Fetch(*serve).generation, after.generation);
  EXPECT_EQ(testing::MetricValue(Get(serve->url("/metrics", "status")).body, "cincinnati_gb_graph_generations_given_up_total"), 0);
}

TEST_F(ClockAheadTest, AValidityNoLongerThanTheRefreshIntervalIsRefusedAtStart) {
  testing::ChildProcess serve({CINCINNATI_BINARY, "serve", "--releases", (kExample / "releases").string(), "--graph-data",
                               (kExample / "graph-data").string(), "--signing.keys", key_.private_key.string(),
                               "--signing.state_dir", (dir_ / "signing").string(), "--signing.validity_secs", "300",
                               "--service.port", "0", "--status.port", "0"});
  ASSERT_TRUE(WaitFor([&] { return !serve.running(); }, 30s));
  EXPECT_NE(serve.Stop(), 0);
  EXPECT_NE(serve.log().find("signing.validity_secs (300) must be at least twice service.pause_secs (300)"), std::string::npos)
      << serve.log();
}

}  // namespace
}  // namespace cincinnati
