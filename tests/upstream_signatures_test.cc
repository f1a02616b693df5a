// A policy engine that checks its graph builder's signed graphs (server/upstream_trust.h),
// over real HTTP: it takes a graph signed by a trusted key; a graph signed by another
// key, or unsigned once the upstream has signed, is a failed fetch, and the last good
// graph goes on being served; a trusted signature on the new graph is taken at once. A
// forwarding policy engine checks each forwarded answer for the query it asked.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "http/client.h"
#include "service_util.h"
#include "signing_util.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::Get;
using testing::MetricValue;
using testing::ServiceProcess;
using testing::WaitFor;

const fs::path kExample = testing::Examples() / "ocp-4x";
constexpr char kQuery[] = "/graph?channel=stable-4.13&arch=amd64&version=4.13.1";

double Checked(const ServiceProcess& engine, const std::string& result) {
  return MetricValue(engine, "cincinnati_pe_upstream_answer_signatures_total{result=\"" + result + "\"}");
}

class UpstreamSignaturesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    trusted_key_ = testing::WriteKeyPair(dir_.path(), trusted_.path(), "trusted");
    other_key_ = testing::WriteKeyPair(dir_.path(), others_.path(), "other");  // not in the trusted directory
    // The next graph: 4.13.2 leaves stable-4.13.
    fs::copy(kExample / "graph-data", next_graph_data_, fs::copy_options::recursive);
    testing::WriteFile(next_graph_data_ / "channels" / "stable-4.13.yaml", "name: stable-4.13\nversions:\n- 4.12.3\n- 4.12.4\n- 4.13.0\n- 4.13.1\n");
  }
  // A graph builder on `port` (0: any) serving `graph_data`, signed by `key` (none: unsigned).
  std::unique_ptr<ServiceProcess> Builder(const fs::path& graph_data, const testing::KeyFiles* key, int port = 0) {
    std::vector<std::string> args = {"--releases", (kExample / "releases").string(), "--graph-data", graph_data.string(),
                                     "--service.pause_secs", "1", "--signing.state_dir", (dir_ / "gb").string()};
    if (key) args.insert(args.end(), {"--signing.keys", key->private_key.string()});
    if (port) args.insert(args.end(), {"--service.port", std::to_string(port)});
    auto builder = std::make_unique<ServiceProcess>("graph-builder", args);
    EXPECT_TRUE(WaitFor([&] { return Get(builder->url("/readiness", "status")).status == 200; }, 60s)) << builder->log();
    return builder;
  }
  std::string Answer(const ServiceProcess& engine) { return Get(engine.url(kQuery), {"Accept: application/json"}).body; }

  testing::TempDir dir_, trusted_, others_;
  testing::KeyFiles trusted_key_, other_key_;
  fs::path next_graph_data_ = dir_ / "next-graph-data";
};

TEST_F(UpstreamSignaturesTest, APolicyEngineTakesOnlyTrustedSignedGraphsAndKeepsServingTheLastGoodOne) {
  auto builder = Builder(kExample / "graph-data", &trusted_key_);
  const int port = builder->port("main");
  const std::string first_graph = Get(builder->url("/graph"), {"Accept: application/json"}).body;
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", builder->url("/graph"), "--upstream.cincinnati.cache_ttl_secs",
                                          "1", "--upstream.cincinnati.public_keys", trusted_.path().string()});
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; }, 60s)) << engine.log();
  const std::string good = Answer(engine);
  ASSERT_NE(good.find("\"4.13.2\""), std::string::npos) << good;
  EXPECT_GE(Checked(engine, "accepted"), 1);

  // The next graph, signed by a key the engine does not trust: refused, the last good served.
  EXPECT_EQ(builder->Stop(), 0);
  builder = Builder(next_graph_data_, &other_key_, port);
  ASSERT_NE(Get(builder->url("/graph"), {"Accept: application/json"}).body, first_graph) << "a new graph";
  ASSERT_TRUE(WaitFor([&] { return Checked(engine, "SignatureUnknownKey") >= 1; }, 30s)) << engine.log();
  EXPECT_EQ(Answer(engine), good);
  EXPECT_NE(engine.log().find("SignatureUnknownKey"), std::string::npos) << engine.log();

  // Unsigned, after the upstream has signed: refused without require_signature too.
  EXPECT_EQ(builder->Stop(), 0);
  builder = Builder(next_graph_data_, nullptr, port);
  ASSERT_TRUE(WaitFor([&] { return Checked(engine, "SignatureMissing") >= 1; }, 30s)) << engine.log();
  EXPECT_EQ(Answer(engine), good);
  EXPECT_EQ(Checked(engine, "unsigned"), 0);

  // Signed by the trusted key again: the new graph is taken.
  EXPECT_EQ(builder->Stop(), 0);
  builder = Builder(next_graph_data_, &trusted_key_, port);
  ASSERT_TRUE(WaitFor([&] { return Answer(engine).find("\"4.13.2\"") == std::string::npos; }, 30s)) << engine.log();
}

TEST_F(UpstreamSignaturesTest, WithRequireSignatureAnUnsignedGraphIsNeverTaken) {
  auto builder = Builder(kExample / "graph-data", nullptr);
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", builder->url("/graph"), "--upstream.cincinnati.cache_ttl_secs",
                                          "1", "--upstream.cincinnati.public_keys", trusted_.path().string(),
                                          "--upstream.cincinnati.require_signature", "true"});
  ASSERT_TRUE(WaitFor([&] { return Checked(engine, "SignatureMissing") >= 2; }, 30s)) << engine.log();
  EXPECT_NE(Get(engine.url("/readyz", "status")).status, 200) << "no graph taken yet";
  const http::Result answer = Get(engine.url(kQuery), {"Accept: application/json"});
  EXPECT_GE(answer.status, 500);
  EXPECT_NE(answer.body.find("SignatureMissing"), std::string::npos) << answer.body;
}

TEST_F(UpstreamSignaturesTest, AForwardingPolicyEngineChecksEachAnswerForItsQuery) {
  ServiceProcess serve("serve", {"--releases", (kExample / "releases").string(), "--graph-data", (kExample / "graph-data").string(),
                                 "--signing.keys", trusted_key_.private_key.string(), "--signing.state_dir", (dir_ / "serve").string()});
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readyz", "status")).status == 200; }, 60s)) << serve.log();
  ServiceProcess forwarding("policy-engine", {"--upstream.cincinnati.url", serve.url("/api/upgrades_info/graph"),
                                              "--upstream.cincinnati.public_keys", trusted_.path().string()});
  ASSERT_TRUE(WaitFor([&] { return Get(forwarding.url("/readyz", "status")).status == 200; }, 60s)) << forwarding.log();
  http::Result answer;
  ASSERT_TRUE(WaitFor([&] { return (answer = Get(forwarding.url(kQuery), {"Accept: application/json"})).status == 200; }, 30s))
      << forwarding.log();
  EXPECT_EQ(answer.body, Get(serve.url(std::string("/api/upgrades_info") + kQuery), {"Accept: application/json"}).body);
  EXPECT_GE(Checked(forwarding, "accepted"), 1);
  EXPECT_EQ(Checked(forwarding, "SignatureInvalid") + Checked(forwarding, "SignatureUnknownKey"), 0);

  // One that trusts another key refuses every answer, and says why.
  ServiceProcess distrusting("policy-engine", {"--upstream.cincinnati.url", serve.url("/api/upgrades_info/graph"),
                                               "--upstream.cincinnati.public_keys", others_.path().string()});
  ASSERT_TRUE(WaitFor([&] { return Get(distrusting.url("/readyz", "status")).status == 200; }, 60s)) << distrusting.log();
  const http::Result refused = Get(distrusting.url(kQuery), {"Accept: application/json"});
  EXPECT_GE(refused.status, 500);
  EXPECT_NE(refused.body.find("failed_upstream_fetch"), std::string::npos) << refused.body;
  EXPECT_NE(refused.body.find("SignatureUnknownKey"), std::string::npos) << refused.body;
  EXPECT_GE(Checked(distrusting, "SignatureUnknownKey"), 1);
}

}  // namespace
}  // namespace cincinnati
