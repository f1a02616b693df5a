// A policy engine that checks its graph builder's signed graphs (signing/upstream_trust.h),
// over real HTTP: it takes a graph signed by a trusted key; a graph signed by another
// key (the same bytes or new ones), unsigned (by default, or once the upstream has
// signed), or replayed from before is a failed fetch, and the last good graph goes on
// being served; a trusted signature on the new graph is taken at once. A proxy on the
// path can neither take the graph away with a forged error nor make the engine sign
// with numbers of its own. A forwarding policy engine checks each forwarded answer for
// the query it asked, and a hotfix answer, made for one cluster, stays bound to it when
// the forwarding engine signs it again.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "http/client.h"
#include "service_util.h"
#include "core/error_document.h"
#include "env/key_files.h"
#include "example_clusters.h"
#include "signing_util.h"
#include "tampering_proxy.h"
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

int64_t UnixNow() { return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(); }

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
  // `serve` on the example, signing with the trusted key, once it serves its graph.
  std::unique_ptr<ServiceProcess> SignedServe(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--releases", (kExample / "releases").string(), "--graph-data", (kExample / "graph-data").string(),
                                     "--signing.keys", trusted_key_.private_key.string(), "--signing.state_dir", (dir_ / "serve").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto serve = std::make_unique<ServiceProcess>("serve", args);
    EXPECT_TRUE(WaitFor([&] { return Get(serve->url("/readyz", "status")).status == 200; }, 60s)) << serve->log();
    return serve;
  }
  // A policy engine forwarding to `serve`, trusting the keys in `trusted`, once it forwards.
  std::unique_ptr<ServiceProcess> Forwarding(const ServiceProcess& serve, const fs::path& trusted, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--upstream.cincinnati.url", serve.url("/api/upgrades_info/graph"), "--upstream.cincinnati.public_keys",
                                     trusted.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto engine = std::make_unique<ServiceProcess>("policy-engine", args);
    EXPECT_TRUE(WaitFor([&] { return Get(engine->url("/readyz", "status")).status == 200; }, 60s)) << engine->log();
    return engine;
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
  // Unsigned answers taken until the upstream signs one (trust on first use).
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", builder->url("/graph"), "--upstream.cincinnati.cache_ttl_secs",
                                          "1", "--upstream.cincinnati.public_keys", trusted_.path().string(),
                                          "--upstream.cincinnati.require_signature", "false"});
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; }, 60s)) << engine.log();
  const std::string good = Answer(engine);
  ASSERT_NE(good.find("\"4.13.2\""), std::string::npos) << good;
  EXPECT_GE(Checked(engine, "accepted"), 1);

  // The same graph, signed by a key the engine does not trust: the same bytes are checked too.
  EXPECT_EQ(builder->Stop(), 0);
  builder = Builder(kExample / "graph-data", &other_key_, port);
  ASSERT_TRUE(WaitFor([&] { return Checked(engine, "SignatureUnknownKey") >= 1; }, 30s)) << engine.log();

  // The next graph, signed by a key the engine does not trust: refused, the last good served.
  EXPECT_EQ(builder->Stop(), 0);
  const double refused_before = Checked(engine, "SignatureUnknownKey");
  builder = Builder(next_graph_data_, &other_key_, port);
  ASSERT_NE(Get(builder->url("/graph"), {"Accept: application/json"}).body, first_graph) << "a new graph";
  ASSERT_TRUE(WaitFor([&] { return Checked(engine, "SignatureUnknownKey") > refused_before; }, 30s)) << engine.log();
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

TEST_F(UpstreamSignaturesTest, WithKeysAnUnsignedGraphIsNeverTakenByDefault) {
  auto builder = Builder(kExample / "graph-data", nullptr);
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", builder->url("/graph"), "--upstream.cincinnati.cache_ttl_secs",
                                          "1", "--upstream.cincinnati.public_keys", trusted_.path().string()});
  ASSERT_TRUE(WaitFor([&] { return Checked(engine, "SignatureMissing") >= 2; }, 30s)) << engine.log();
  EXPECT_NE(Get(engine.url("/readyz", "status")).status, 200) << "no graph taken yet";
  const http::Result answer = Get(engine.url(kQuery), {"Accept: application/json"});
  EXPECT_GE(answer.status, 500);
  EXPECT_NE(answer.body.find("SignatureMissing"), std::string::npos) << answer.body;
}

// A proxy between graph builder and policy engine: a forged error document does not take
// the graph away (nor turn the engine into a forwarder), and rewritten plain headers do
// not change the generation or stretch the validity the engine signs with.
TEST_F(UpstreamSignaturesTest, ErrorsAndPlainHeadersOnThePathCannotOutweighWhatIsSigned) {
  auto builder = Builder(kExample / "graph-data", &trusted_key_);
  testing::TamperingProxy proxy(builder->url(""));
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", proxy.url("/graph"), "--upstream.cincinnati.cache_ttl_secs", "1",
                                          "--upstream.cincinnati.public_keys", trusted_.path().string(), "--signing.keys",
                                          trusted_key_.private_key.string(), "--signing.validity_secs", "7200"});
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; }, 60s)) << engine.log();
  auto keys = env::LoadTrustedKeys(trusted_.path().string());
  ASSERT_TRUE(keys.ok());
  const int64_t now = UnixNow();
  auto source_facts = [&] {  // the graph builder's own signature, as of now (it moves on with each refresh)
    const http::Result built = Get(builder->url("/graph"), {"Accept: application/json"});
    return CheckAnswerSignature(built.Header(kSignatureHeader), built.body, {}, *keys, now, 0);
  };
  auto engine_facts = [&] {
    const http::Result answer = Get(engine.url(kQuery), {"Accept: application/json"});
    return CheckAnswerSignature(answer.Header(kSignatureHeader), answer.body, {"stable-4.13", "amd64", "4.13.1", ""}, *keys, now, 0);
  };
  const std::string good = Answer(engine);

  // Plain headers rewritten, the signature left alone: the engine signs with what was signed.
  proxy.SetTamper([](http_server::Response& r) {
    r.headers["Cincinnati-Graph-Generation"] = "9000000000000000000";
    r.headers["Cincinnati-Graph-Fresh"] = "99999999999";
  });
  ASSERT_TRUE(WaitFor([&] { return proxy.tampered() >= 3; }, 30s)) << engine.log();
  // The engine's own validity (7,200 s) is longer than the graph builder's (3,600 s).
  const SignatureCheck signed_by_engine = engine_facts();
  const SignatureCheck source = source_facts();
  ASSERT_EQ(signed_by_engine.verdict, SignatureVerdict::kAccepted) << signed_by_engine.message;
  ASSERT_EQ(source.verdict, SignatureVerdict::kAccepted) << source.message;
  EXPECT_EQ(signed_by_engine.facts.generation, source.facts.generation);
  EXPECT_LE(signed_by_engine.facts.expires, source.facts.expires) << "never valid longer than the graph builder's signature";

  // A forged, unsigned error document: taken for a failure; the graph stays served.
  proxy.SetTamper([](http_server::Response& r) {
    r = http_server::Response::Text(400, ErrorDocument::Of("missing_params", "mandatory client parameters missing: channel").ToJson(),
                                    "application/json");
  });
  const int before = proxy.tampered();
  ASSERT_TRUE(WaitFor([&] { return proxy.tampered() >= before + 3; }, 30s)) << engine.log();
  EXPECT_EQ(Answer(engine), good);
  EXPECT_NE(engine.log().find("taken for a failure"), std::string::npos) << engine.log();
  EXPECT_EQ(engine.log().find("forwarding client queries"), std::string::npos) << engine.log();
  proxy.SetTamper(nullptr);
}

// A graph builder's older answer, replayed after a newer graph was taken, is refused.
TEST_F(UpstreamSignaturesTest, AReplayedOlderGraphIsRefused) {
  const fs::path live = dir_ / "live-graph-data";
  fs::copy(kExample / "graph-data", live, fs::copy_options::recursive);
  auto builder = Builder(live, &trusted_key_);
  testing::TamperingProxy proxy(builder->url(""));
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", proxy.url("/graph"), "--upstream.cincinnati.cache_ttl_secs", "1",
                                          "--upstream.cincinnati.public_keys", trusted_.path().string()});
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; }, 60s)) << engine.log();
  ASSERT_NE(Answer(engine).find("\"4.13.2\""), std::string::npos);
  proxy.Record(false);  // the proxy keeps this graph's answer
  fs::copy_file(next_graph_data_ / "channels" / "stable-4.13.yaml", live / "channels" / "stable-4.13.yaml",
                fs::copy_options::overwrite_existing);
  ASSERT_TRUE(WaitFor([&] { return Answer(engine).find("\"4.13.2\"") == std::string::npos; }, 30s)) << engine.log();
  proxy.Freeze(true);  // and replays it
  ASSERT_TRUE(WaitFor([&] { return Checked(engine, "SignatureRolledBack") >= 1; }, 30s)) << engine.log();
  EXPECT_GT(proxy.replayed(), 0);
  EXPECT_EQ(Answer(engine).find("\"4.13.2\""), std::string::npos) << "the newer graph stays served";
}

TEST_F(UpstreamSignaturesTest, AForwardingPolicyEngineChecksEachAnswerForItsQuery) {
  auto serve = SignedServe();
  auto forwarding = Forwarding(*serve, trusted_.path());
  http::Result answer;
  ASSERT_TRUE(WaitFor([&] { return (answer = Get(forwarding->url(kQuery), {"Accept: application/json"})).status == 200; }, 30s))
      << forwarding->log();
  EXPECT_EQ(answer.body, Get(serve->url(std::string("/api/upgrades_info") + kQuery), {"Accept: application/json"}).body);
  EXPECT_GE(Checked(*forwarding, "accepted"), 1);
  EXPECT_EQ(Checked(*forwarding, "SignatureInvalid") + Checked(*forwarding, "SignatureUnknownKey"), 0);

  // One that trusts another key refuses every answer, and says why.
  auto distrusting = Forwarding(*serve, others_.path());
  const http::Result refused = Get(distrusting->url(kQuery), {"Accept: application/json"});
  EXPECT_GE(refused.status, 500);
  EXPECT_NE(refused.body.find("failed_upstream_fetch"), std::string::npos) << refused.body;
  EXPECT_NE(refused.body.find("SignatureUnknownKey"), std::string::npos) << refused.body;
  EXPECT_GE(Checked(*distrusting, "SignatureUnknownKey"), 1);
}

// A hotfix answer is one cluster's: checked for that cluster's id on the way in, and
// signed again by the forwarding engine for that id alone.
TEST_F(UpstreamSignaturesTest, AForwardedHotfixAnswerStaysBoundToItsCluster) {
  auto serve = SignedServe({"--cluster_directory.path", testing::ImportExampleClusters(dir_.path())});
  auto forwarding = Forwarding(*serve, trusted_.path(), {"--signing.keys", other_key_.private_key.string()});
  const std::string query = "/graph?channel=stable-4.13&arch=amd64&version=4.12.3&id=";
  http::Result acme;
  ASSERT_TRUE(WaitFor([&] { return (acme = Get(forwarding->url(query + testing::kAcmeCluster), {"Accept: application/json"})).status == 200; },
                      30s))
      << forwarding->log();
  ASSERT_NE(acme.body.find("4.13.1-hotfix.1"), std::string::npos) << acme.body;
  const std::string* signature = acme.Header(kSignatureHeader);
  ASSERT_NE(signature, nullptr);
  EXPECT_NE(signature->find("scope=cluster"), std::string::npos) << *signature;
  EXPECT_EQ(Checked(*forwarding, "SignatureInvalid"), 0) << "the upstream's signature was checked for acme's id";

  auto keys = env::LoadTrustedKeys(others_.path().string());  // the forwarding engine's key
  ASSERT_TRUE(keys.ok());
  const int64_t now = UnixNow();
  auto check = [&](const http::Result& r, const std::string& id) {
    return CheckAnswerSignature(r.Header(kSignatureHeader), r.body, {"stable-4.13", "amd64", "4.12.3", id}, *keys, now, 0);
  };
  const SignatureCheck for_acme = check(acme, testing::kAcmeCluster);
  EXPECT_EQ(for_acme.verdict, SignatureVerdict::kAccepted) << for_acme.message;
  EXPECT_TRUE(for_acme.facts.per_cluster);
  EXPECT_NE(check(acme, testing::kGlobexCluster).verdict, SignatureVerdict::kAccepted) << "acme's answer does not pass for globex's";

  // Globex's answer is everyone's: no hotfix, not bound to an id.
  const http::Result globex = Get(forwarding->url(query + testing::kGlobexCluster), {"Accept: application/json"});
  ASSERT_EQ(globex.status, 200) << globex.body;
  EXPECT_EQ(globex.body.find("hotfix"), std::string::npos) << globex.body;
  const SignatureCheck for_globex = check(globex, testing::kGlobexCluster);
  EXPECT_EQ(for_globex.verdict, SignatureVerdict::kAccepted) << for_globex.message;
  EXPECT_FALSE(for_globex.facts.per_cluster);
}

}  // namespace
}  // namespace cincinnati
