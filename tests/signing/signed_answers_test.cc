// Signed graph answers from the services, over real HTTP: `serve` and a
// policy engine on a graph builder sign every answer with a fresh Ed25519 key; the
// signature verifies over the exact bytes (plain or gzip), for the channel and arch
// asked; the graph's generation survives a restart and grows with a new graph; a policy
// engine's answers stop being fresh once its graph builder is gone.
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

int64_t Now() { return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(); }

struct Signed {
  http::Result answer;
  SignatureCheck check;
  std::string header;
};

class SignedAnswersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = testing::WriteKeyPair(dir_.path(), trusted_.path(), "service");
    auto keys = env::LoadTrustedKeys(trusted_.path().string());
    ASSERT_TRUE(keys.ok()) << keys.status().message();
    keys_ = *keys;
  }
  std::vector<std::string> ServeArgs(const fs::path& graph_data = kExample / "graph-data") {
    return {"--releases", (kExample / "releases").string(), "--graph-data", graph_data.string(), "--signing.keys",
            key_.private_key.string(), "--signing.state_dir", (dir_ / "signing").string()};
  }
  // The answer for (channel, arch) from `base`, and its check as an agent makes it.
  Signed Fetch(const std::string& base, const std::string& channel = "stable-4.13", bool gzip = false, uint64_t newest = 0) {
    http::GetOptions o{.headers = {"Accept: application/json"}, .accept_gzip = gzip};
    Signed s;
    s.answer = http::Get(base + "/graph?channel=" + channel + "&arch=amd64&version=4.13.1", o);
    const std::string* header = s.answer.Header(kSignatureHeader);
    if (header) s.header = *header;
    s.check = CheckAnswerSignature(header, s.answer.body, {channel, "amd64", "4.13.1", ""}, keys_, Now(), newest);
    return s;
  }
  testing::TempDir dir_, trusted_;
  testing::KeyFiles key_;
  TrustedKeys keys_;
};

TEST_F(SignedAnswersTest, ServeSignsEveryAnswerOverItsExactBytesAndKeepsTheGenerationAcrossARestart) {
  auto serve = std::make_unique<ServiceProcess>("serve", ServeArgs());
  ASSERT_TRUE(WaitFor([&] { return Get(serve->url("/readyz", "status")).status == 200; }, 60s)) << serve->log();
  const std::string base = serve->url("/api/upgrades_info");
  const Signed plain = Fetch(base);
  ASSERT_EQ(plain.answer.status, 200);
  EXPECT_EQ(plain.check.verdict, SignatureVerdict::kAccepted) << plain.check.message << "\n" << plain.header;
  EXPECT_EQ(plain.check.key_id, key_.id);
  EXPECT_EQ(*plain.answer.Header("Cincinnati-Graph-Generation"), std::to_string(plain.check.facts.generation));
  EXPECT_GT(plain.check.facts.expires, Now()) << "valid for four refresh periods";
  // The same signature whether the bytes travel compressed or not: it is over the JSON.
  const Signed gzip = Fetch(base, "stable-4.13", true);
  EXPECT_EQ(gzip.check.verdict, SignatureVerdict::kAccepted) << gzip.check.message;
  EXPECT_EQ(gzip.answer.body, plain.answer.body);
  EXPECT_EQ(gzip.header, plain.header) << "signed once per answer, not per request";
  // Another channel's answer is signed for that channel: it does not pass for this one.
  EXPECT_EQ(CheckAnswerSignature(&plain.header, plain.answer.body, {"stable-4.13", "amd64", "4.13.0", ""}, keys_, Now(), 0).verdict,
            SignatureVerdict::kInvalid)
      << "the version asked is bound";
  const Signed fast = Fetch(base, "fast-4.13");
  EXPECT_EQ(fast.check.verdict, SignatureVerdict::kAccepted) << fast.check.message;
  EXPECT_EQ(CheckAnswerSignature(&fast.header, fast.answer.body, {"stable-4.13", "amd64", "4.13.1", ""}, keys_, Now(), 0).verdict,
            SignatureVerdict::kInvalid);
  // Restarted on the same graph: the same generation.
  EXPECT_EQ(serve->Stop(), 0) << serve->log();
  serve = std::make_unique<ServiceProcess>("serve", ServeArgs());
  ASSERT_TRUE(WaitFor([&] { return Get(serve->url("/readyz", "status")).status == 200; }, 60s)) << serve->log();
  const Signed again = Fetch(serve->url("/api/upgrades_info"));
  EXPECT_EQ(again.check.verdict, SignatureVerdict::kAccepted) << again.check.message;
  EXPECT_EQ(again.check.facts.generation, plain.check.facts.generation);
  EXPECT_EQ(serve->Stop(), 0);

  // A changed graph (a release left out of the channel) gets a higher one, even with the clock
  // stepped back two minutes (less than a checker's lead): the state file keeps it from going back.
  testing::TempDir changed;
  fs::copy(kExample / "graph-data", changed.path(), fs::copy_options::recursive);
  std::string channel = testing::ReadFile(changed / "channels" / "stable-4.13.yaml");
  channel.replace(channel.find("- 4.13.2"), 8, "");
  testing::WriteFile(changed / "channels" / "stable-4.13.yaml", channel);
  std::vector<std::string> args = ServeArgs(changed.path());
  args.insert(args.end(), {"--testing.now", FormatUnixSeconds(static_cast<int64_t>(plain.check.facts.generation / 1000) - 120)});
  serve = std::make_unique<ServiceProcess>("serve", args);
  ASSERT_TRUE(WaitFor([&] { return Get(serve->url("/readyz", "status")).status == 200; }, 60s)) << serve->log();
  const Signed newer = Fetch(serve->url("/api/upgrades_info"), "stable-4.13", false, 0);
  EXPECT_EQ(newer.check.facts.generation, plain.check.facts.generation + 1) << newer.header;
  EXPECT_EQ(serve->Stop(), 0);
}

// What a client that knows nothing of signatures (the CVO) reads: the same bytes, the
// same ETags and content type, signed or not; only the signature header is added.
TEST_F(SignedAnswersTest, ASignedAnswerIsTheUnsignedAnswerByteForByte) {
  ServiceProcess signed_serve("serve", ServeArgs());
  ServiceProcess plain_serve("serve", {"--releases", (kExample / "releases").string(), "--graph-data", (kExample / "graph-data").string()});
  ASSERT_TRUE(WaitFor([&] { return Get(signed_serve.url("/readyz", "status")).status == 200; }, 60s)) << signed_serve.log();
  ASSERT_TRUE(WaitFor([&] { return Get(plain_serve.url("/readyz", "status")).status == 200; }, 60s)) << plain_serve.log();
  for (const char* channel : {"stable-4.13", "fast-4.12"}) {
    for (bool gzip : {false, true}) {
      const std::string query = std::string("/api/upgrades_info/graph?channel=") + channel + "&arch=amd64&version=4.12.3";
      http::GetOptions o{.headers = {"Accept: application/json"}, .accept_gzip = gzip};
      const http::Result with = http::Get(signed_serve.url(query), o);
      const http::Result without = http::Get(plain_serve.url(query), o);
      ASSERT_EQ(with.status, 200);
      ASSERT_EQ(without.status, 200);
      EXPECT_EQ(with.body, without.body) << channel << (gzip ? " gzip" : "");
      for (const char* name : {"ETag", "Content-Type", "Content-Encoding", "Vary"}) {
        const std::string* a = with.Header(name);
        const std::string* b = without.Header(name);
        EXPECT_EQ(a ? *a : "-", b ? *b : "-") << name;
      }
      EXPECT_NE(with.Header(kSignatureHeader), nullptr);
      EXPECT_EQ(without.Header(kSignatureHeader), nullptr);
    }
  }
}

TEST_F(SignedAnswersTest, APolicyEngineSignsWithItsGraphBuildersGenerationAndGoesStaleWithoutIt) {
  auto builder = std::make_unique<ServiceProcess>(
      "graph-builder", std::vector<std::string>{"--releases", (kExample / "releases").string(), "--graph-data",
                                                (kExample / "graph-data").string(), "--signing.state_dir", (dir_ / "gb").string(),
                                                "--signing.keys", key_.private_key.string(), "--service.pause_secs", "1"});
  ASSERT_TRUE(WaitFor([&] { return Get(builder->url("/readiness", "status")).status == 200; }, 60s)) << builder->log();
  const http::Result built = Get(builder->url("/graph"), {"Accept: application/json"});
  ASSERT_NE(built.Header("Cincinnati-Graph-Generation"), nullptr);
  // The graph builder signs the whole graph: channel and arch empty.
  const SignatureCheck whole = CheckAnswerSignature(built.Header(kSignatureHeader), built.body, {}, keys_, Now(), 0);
  EXPECT_EQ(whole.verdict, SignatureVerdict::kAccepted) << whole.message;
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", builder->url("/graph"), "--upstream.cincinnati.cache_ttl_secs", "1",
                                          "--signing.keys", key_.private_key.string(), "--signing.validity_secs", "10"});
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; }, 60s)) << engine.log();
  const Signed fresh = Fetch(engine.url(""));
  EXPECT_EQ(fresh.check.verdict, SignatureVerdict::kAccepted) << fresh.check.message << engine.log();
  EXPECT_EQ(std::to_string(fresh.check.facts.generation), *built.Header("Cincinnati-Graph-Generation"));
  EXPECT_LE(fresh.check.facts.expires, Now() + 10) << "valid 10 s after the graph builder's last refresh";

  // The graph builder is gone: the policy engine keeps serving its last graph, but its
  // signatures no longer move forward. Once one would have expired, it is withheld (an
  // expired answer is never signed), and the answer says why for a checking agent.
  builder->Kill();
  Signed stale;
  ASSERT_TRUE(WaitFor([&] {
    stale = Fetch(engine.url(""));
    return stale.answer.Header(kSignatureWithheldHeader) != nullptr;
  }, 60s)) << stale.check.message;
  EXPECT_EQ(stale.answer.status, 200);
  EXPECT_EQ(stale.answer.body, fresh.answer.body);
  EXPECT_EQ(stale.answer.Header(kSignatureHeader), nullptr) << stale.header;
  const std::string withheld = *stale.answer.Header(kSignatureWithheldHeader);
  const int64_t expired = std::stoll(withheld.substr(withheld.find("expired=") + 8));
  EXPECT_LE(expired, Now()) << withheld;
  EXPECT_GE(testing::MetricValue(Get(engine.url("/metrics", "status")).body, "cincinnati_pe_answer_signatures_withheld"), 1);
}

// A graph builder restarted without its state numbers the same graph higher; the policy
// engines on it take the larger number, so that several behind one address agree.
TEST_F(SignedAnswersTest, PolicyEnginesTakeTheHigherNumberOfTheSameGraph) {
  const std::vector<std::string> gb_args = {"--releases", (kExample / "releases").string(), "--graph-data", (kExample / "graph-data").string()};
  auto builder = std::make_unique<ServiceProcess>("graph-builder", gb_args);
  ASSERT_TRUE(WaitFor([&] { return Get(builder->url("/readiness", "status")).status == 200; }, 60s)) << builder->log();
  const int port = builder->port("main");
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", builder->url("/graph"), "--upstream.cincinnati.cache_ttl_secs", "1",
                                          "--signing.keys", key_.private_key.string()});
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; }, 60s)) << engine.log();
  const Signed before = Fetch(engine.url(""));
  ASSERT_EQ(before.check.verdict, SignatureVerdict::kAccepted) << before.check.message;
  EXPECT_EQ(before.answer.Header("Cincinnati-Graph-Fresh") != nullptr, true);
  EXPECT_EQ(builder->Stop(), 0);
  std::vector<std::string> again = gb_args;
  again.insert(again.end(), {"--service.port", std::to_string(port)});
  builder = std::make_unique<ServiceProcess>("graph-builder", again);
  ASSERT_TRUE(WaitFor([&] { return Get(builder->url("/readiness", "status")).status == 200; }, 60s)) << builder->log();
  const std::string renumbered = *Get(builder->url("/graph"), {"Accept: application/json"}).Header("Cincinnati-Graph-Generation");
  ASSERT_GT(std::stoull(renumbered), before.check.facts.generation);
  Signed after;
  ASSERT_TRUE(WaitFor([&] { return (after = Fetch(engine.url(""))).check.facts.generation == std::stoull(renumbered); }, 30s))
      << after.header;
  EXPECT_EQ(after.answer.body, before.answer.body);
  EXPECT_EQ(after.check.verdict, SignatureVerdict::kAccepted) << after.check.message;
}

// A policy engine that forwards queries to another signs what it computes, with the
// other's generation; its answers verify as the first one's do, and each is signed once.
TEST_F(SignedAnswersTest, APolicyEngineForwardingToAnotherSignsWithItsGeneration) {
  ServiceProcess serve("serve", ServeArgs());
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readyz", "status")).status == 200; }, 60s)) << serve.log();
  ServiceProcess forwarding("policy-engine", {"--upstream.cincinnati.url", serve.url("/api/upgrades_info/graph"), "--signing.keys",
                                              key_.private_key.string()});
  ASSERT_TRUE(WaitFor([&] { return Get(forwarding.url("/readyz", "status")).status == 200; }, 60s)) << forwarding.log();
  const Signed upstream = Fetch(serve.url("/api/upgrades_info"));
  Signed forwarded;
  ASSERT_TRUE(WaitFor([&] { return (forwarded = Fetch(forwarding.url(""))).answer.status == 200; }, 30s)) << forwarding.log();
  EXPECT_EQ(forwarded.check.verdict, SignatureVerdict::kAccepted) << forwarded.check.message << "\n" << forwarded.header;
  EXPECT_EQ(forwarded.check.facts.generation, upstream.check.facts.generation);
  EXPECT_EQ(forwarded.answer.body, upstream.answer.body);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(Fetch(forwarding.url("")).check.verdict, SignatureVerdict::kAccepted);
  EXPECT_EQ(testing::MetricValue(forwarding, "cincinnati_pe_answer_signatures_made"), 1) << "signed once, then kept";
}

}  // namespace
}  // namespace cincinnati
