// Release signature verification, as the CVO does it, with fresh GnuPG keys, our own signer,
// the upstream fixture signature, and signature stores over real HTTP on 127.0.0.1 and
// file:// directories.
#include <gtest/gtest.h>

#include <cstdlib>

#include <atomic>
#include <mutex>

#include "agent/release_verifier.h"
#include "agent/signature_store.h"
#include "core/json_writer.h"
#include "gpg_util.h"
#include "registry/keyring.h"
#include "registry/signature.h"
#include "registry_util.h"
#include "http_server/http_server.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati::agent {

using kube::ParseJson;
using kube::JsonObject;
using kube::SetMember;
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using registry::AtomicSignature;
using registry::Keyring;
using registry::ParseAtomicSignature;
using testing::Signer;
using testing::TempDir;

const std::string kDigest = "sha256:" + std::string(64, 'a');
const std::string kOther = "sha256:" + std::string(64, 'b');

std::string Payload(const std::string& digest) {
  return registry::WriteAtomicSignature({digest, "quay.io/ocp/release:4.1.1", "cincinnati test", 1700000000});
}

std::string Sign(const Signer& signer, const std::string& payload) {
  auto signed_message = registry::SignMessage(payload, signer.home(), "");
  EXPECT_TRUE(signed_message.ok()) << signed_message.status().message();
  return signed_message.ok() ? *signed_message : "";
}

// A signature store on real HTTP: files under a directory, or a status the test sets.
class HttpStore {
 public:
  HttpStore() {
    server_ = std::make_unique<http_server::HttpServer>(http_server::ServerLimits{.threads = 2});
    port_ = *server_->Listen("127.0.0.1", 0, [this](const http_server::Request& r) {
      std::string path = r.target.substr(0, r.target.find('?'));
      {
        std::lock_guard lock(mu_);
        seen_.push_back(path);
      }
      if (fail_status_ != 0 && path.find("signature-" + std::to_string(fail_index_.load())) != std::string::npos) {
        return http_server::Response::Text(fail_status_, "broken\n");
      }
      fs::path file = dir_.path() / path.substr(1);
      if (!fs::is_regular_file(file)) return http_server::Response::Text(404, "not found\n");
      return http_server::Response::Text(200, testing::ReadFile(file), "application/octet-stream");
    });
    server_->Start();
  }
  ~HttpStore() { server_->Shutdown(1s); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/sigs"; }
  void Put(const std::string& digest, int index, const std::string& body) {
    std::string segment = digest;
    segment[segment.find(':')] = '=';
    testing::WriteFile(dir_ / "sigs" / segment / ("signature-" + std::to_string(index)), body);
  }
  std::vector<std::string> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  std::atomic<int> fail_status_{0}, fail_index_{0};

 private:
  TempDir dir_;
  std::unique_ptr<http_server::HttpServer> server_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<std::string> seen_;
};

VerificationConfig Config(std::vector<const Signer*> signers, std::vector<std::string> stores) {
  VerificationConfig config;
  int n = 0;
  for (const Signer* s : signers) {
    auto keyring = Keyring::Open("key" + std::to_string(++n), {s->public_key()});
    EXPECT_TRUE(keyring.ok()) << keyring.status().message();
    config.keyrings.push_back(std::move(keyring).value());
  }
  config.stores = std::move(stores);
  return config;
}

auto Soon() { return std::chrono::steady_clock::now() + 20s; }

TEST(AtomicSignatureTest, DecodesStrictly) {
  auto fixture = Keyring::FromDirectory("fixture", (testing::Fixtures() / "signatures").string());
  ASSERT_TRUE(fixture.ok()) << fixture.status().message();
  auto message = (*fixture)->Verify(testing::ReadFile(testing::Fixtures() / "signatures/signature-3"));
  ASSERT_TRUE(message.ok()) << message.status().message();
  auto upstream = ParseAtomicSignature(message->payload);
  ASSERT_TRUE(upstream.ok()) << upstream.status().message();
  EXPECT_EQ(upstream->digest, "sha256:d33abd703ea76813f8dbd9518ff46d3f95ac23f364f5b6417d9fa2593aa72a1a");
  EXPECT_EQ(upstream->creator, "Red Hat OpenShift Signing Authority 0.0.1");
  EXPECT_FALSE(upstream->timestamp.has_value());

  auto ours = ParseAtomicSignature(Payload(kDigest));
  ASSERT_TRUE(ours.ok()) << ours.status().message();
  EXPECT_EQ(ours->digest, kDigest);
  EXPECT_EQ(ours->reference, "quay.io/ocp/release:4.1.1");
  EXPECT_EQ(ours->timestamp, 1700000000);

  struct Case {
    std::string json, error;
  };
  const std::string image = R"("image":{"docker-manifest-digest":"sha256:aa"})";
  const std::string identity = R"("identity":{"docker-reference":"r"})";
  const std::string type = R"("type":"atomic container signature")";
  std::vector<Case> cases = {
      {"[]", "the signed payload: must be an object"},
      {"{\"critical\":{" + type + "," + image + "," + identity + "},\"extra\":1}", "extra: unknown member"},
      {"{\"critical\":{" + type + "," + image + "," + identity + ",\"x\":1}}", "critical.x: unknown member"},
      {"{\"critical\":{" + type + "," + image + "," + identity + "},\"optional\":{\"creator\":\"c\",\"note\":\"n\"}}",
       "optional.note: unknown member"},
      {"{\"critical\":{" + type + ",\"image\":{\"docker-manifest-digest\":\"d\",\"size\":1}," + identity + "}}",
       "critical.image.size: unknown member"},
      {"{\"critical\":{\"type\":\"atomic\"," + image + "," + identity + "}}", "critical.type: \"atomic\" is not"},
      {"{\"critical\":{" + type + "," + image + ",\"identity\":{\"docker-reference\":\"\"}}}",
       "critical.identity.docker-reference: must not be empty"},
      {"{\"critical\":{" + type + "," + identity + "}}", "critical.image: required"},
      {"{\"critical\":{" + type + "," + image + "," + identity + "},\"optional\":{\"timestamp\":1.5}}",
       "optional.timestamp: must be an integer"},
      {"not json", "the signed payload is not JSON"},
  };
  for (const auto& c : cases) {
    auto got = ParseAtomicSignature(c.json);
    ASSERT_FALSE(got.ok()) << c.json;
    EXPECT_NE(got.status().message().find(c.error), std::string::npos) << got.status().message();
  }
}

TEST(KeyringTest, VerifiesOnlySignedMessagesOfItsKeys) {
  Signer signer("release"), stranger("stranger");
  ASSERT_TRUE(signer.ok() && stranger.ok());
  auto keyring = Keyring::Open("release", {signer.public_key()});
  ASSERT_TRUE(keyring.ok()) << keyring.status().message();
  ASSERT_EQ((*keyring)->fingerprints().size(), 1u);

  auto good = (*keyring)->Verify(Sign(signer, "hello"));
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good->payload, "hello");
  EXPECT_EQ(good->fingerprint, (*keyring)->fingerprints()[0]);

  auto foreign = (*keyring)->Verify(Sign(stranger, "hello"));
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("not in the keyring"), std::string::npos) << foreign.status().message();
  EXPECT_FALSE((*keyring)->Verify("hello").ok());
  EXPECT_FALSE((*keyring)->Verify("").ok());
  std::string flipped = Sign(signer, std::string(200, 'x'));
  flipped[flipped.size() - 20] ^= 0x01;
  EXPECT_FALSE((*keyring)->Verify(flipped).ok());
  EXPECT_FALSE((*keyring)->Verify("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\nhello\n").ok());
  // No gpg-agent was started for it (one would outlive a process killed -9).
  EXPECT_NE(std::system("pgrep -f 'gpg-agent --homedir .*cincinnati-keyrin[g]-' >/dev/null"), 0);

  auto empty = Keyring::Open("empty", {"not a key"});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("keyring empty: no OpenPGP public key"), std::string::npos);
  EXPECT_FALSE(registry::SignMessage("x", signer.home(), "nobody@example.com").ok());
}

TEST(ReleaseVerifierTest, EveryKeyringMustBeSatisfied) {
  Signer a("a"), b("b"), stranger("stranger");
  ASSERT_TRUE(a.ok() && b.ok() && stranger.ok());
  HttpStore store;
  ReleaseVerifier verifier(Config({&a, &b}, {store.url()}));
  const std::string pullspec = "quay.io/ocp/release@" + kDigest;

  store.Put(kDigest, 1, Sign(a, Payload(kDigest)));
  auto half = verifier.Verify(pullspec, std::nullopt, Soon());
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("unable to verify " + kDigest + " against keyrings: key2"), std::string::npos)
      << half.status().message();

  store.Put(kDigest, 2, Sign(stranger, Payload(kDigest)));
  store.Put(kDigest, 3, Sign(b, Payload(kDigest)));
  auto both = verifier.Verify(pullspec, std::nullopt, Soon());
  ASSERT_TRUE(both.ok()) << both.status().message();
  EXPECT_FALSE(both->from_cache);
  ASSERT_EQ(both->signed_by.size(), 2u);
  EXPECT_NE(both->signed_by[1].find("signature-3"), std::string::npos) << both->signed_by[1];

  // Verified once: the digest passes without a store (the success cache).
  const size_t fetched = store.seen().size();
  auto again = verifier.Verify("elsewhere.example.com/mirror@" + kDigest, std::nullopt, Soon());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->from_cache);
  EXPECT_EQ(store.seen().size(), fetched);
}

TEST(ReleaseVerifierTest, RefusesWhatDoesNotProveTheDigest) {
  Signer key("release"), stranger("stranger");
  ASSERT_TRUE(key.ok() && stranger.ok());
  struct Case {
    std::string name, body, error;
  };
  std::vector<Case> cases = {
      {"unknown key", Sign(stranger, Payload(kDigest)), "not in the keyring"},
      {"another digest", Sign(key, Payload(kOther)), "the signature is for " + kOther},
      {"unknown member", Sign(key, R"({"critical":{"type":"atomic container signature","image":{"docker-manifest-digest":")" +
                                        kDigest + R"("},"identity":{"docker-reference":"r"}},"optional":{"x":1}})"),
       "optional.x: unknown member"},
      {"not signed", Payload(kDigest), "not an OpenPGP signed message"},
  };
  for (const auto& c : cases) {
    HttpStore store;
    store.Put(kDigest, 1, c.body);
    ReleaseVerifier verifier(Config({&key}, {store.url()}));
    auto got = verifier.Verify("quay.io/ocp/release@" + kDigest, std::nullopt, Soon());
    ASSERT_FALSE(got.ok()) << c.name;
    EXPECT_NE(got.status().message().find(c.error), std::string::npos) << c.name << ": " << got.status().message();
    EXPECT_NE(got.status().message().find("/sigs signature-1"), std::string::npos) << "names where: " << got.status().message();
  }
  HttpStore empty;
  ReleaseVerifier verifier(Config({&key}, {empty.url()}));
  auto none = verifier.Verify("quay.io/ocp/release@" + kDigest, std::nullopt, Soon());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no signature was found in any store"), std::string::npos);
  auto tag = verifier.Verify("quay.io/ocp/release:4.1.1", std::nullopt, Soon());
  ASSERT_FALSE(tag.ok());
  EXPECT_NE(tag.status().message().find("is not accessed by digest"), std::string::npos);
  EXPECT_FALSE(verifier.Verify("quay.io/ocp/release@sha256:", std::nullopt, Soon()).ok());
}

TEST(ReleaseVerifierTest, StoresFailIndependently) {
  Signer key("release");
  ASSERT_TRUE(key.ok());
  const std::string pullspec = "quay.io/ocp/release@" + kDigest;

  // An error at signature-1 moves on to signature-2; a 404 ends that store's search.
  HttpStore flaky;
  flaky.fail_status_ = 500, flaky.fail_index_ = 1;
  flaky.Put(kDigest, 2, Sign(key, Payload(kDigest)));
  ASSERT_TRUE(ReleaseVerifier(Config({&key}, {flaky.url()})).Verify(pullspec, std::nullopt, Soon()).ok());
  HttpStore gap;
  gap.Put(kDigest, 2, Sign(key, Payload(kDigest)));
  auto stopped = ReleaseVerifier(Config({&key}, {gap.url()})).Verify(pullspec, std::nullopt, Soon());
  EXPECT_FALSE(stopped.ok());
  for (const auto& path : gap.seen()) EXPECT_EQ(path.find("signature-2"), std::string::npos) << "read past a 404";

  // One store is down, another still verifies; a file:// store reads the same layout.
  HttpStore good;
  good.Put(kDigest, 1, Sign(key, Payload(kDigest)));
  auto two = ReleaseVerifier(Config({&key}, {"http://127.0.0.1:1/sigs", good.url()})).Verify(pullspec, std::nullopt, Soon());
  ASSERT_TRUE(two.ok()) << two.status().message();
  TempDir dir;
  testing::WriteFile(dir / ("sha256=" + std::string(64, 'a')) / "signature-1", Sign(key, Payload(kDigest)));
  auto file = ReleaseVerifier(Config({&key}, {"file://" + dir.path().string()})).Verify(pullspec, std::nullopt, Soon());
  ASSERT_TRUE(file.ok()) << file.status().message();

  // spec.signatureStores replaces the configured stores; an empty list is an error.
  ReleaseVerifier overridden(Config({&key}, {good.url()}));
  auto elsewhere = overridden.Verify(pullspec, std::vector<std::string>{gap.url()}, Soon());
  EXPECT_FALSE(elsewhere.ok()) << "the configured store must not be consulted";
  auto empty = overridden.Verify(pullspec, std::vector<std::string>{}, Soon());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("spec.signatureStores is set to an empty list"), std::string::npos);
  EXPECT_FALSE(overridden.Verify(pullspec, std::vector<std::string>{"ftp://x/"}, Soon()).ok());
  // Out of time: nothing is fetched.
  auto late = overridden.Verify(pullspec, std::nullopt, std::chrono::steady_clock::now());
  ASSERT_FALSE(late.ok());
  EXPECT_NE(late.status().message().find("out of time"), std::string::npos) << late.status().message();
}

TEST(ReleaseVerifierTest, ReadsTheVerificationConfigMap) {
  Signer key("release");
  ASSERT_TRUE(key.ok());
  auto configmap = [&](const std::string& data) {
    auto v = ParseJson(R"({"apiVersion":"v1","kind":"ConfigMap",
      "metadata":{"name":"release-verification","namespace":"openshift-config-managed",
                  "annotations":{"release.openshift.io/verification-config-map":""}},"data":{)" + data + "}}");
    EXPECT_TRUE(v.ok());
    return v.ok() ? *v : JsonValue();
  };
  const std::string key_entry = "\"verifier-public-key-redhat\":" + JsonString(key.public_key());
  JsonValue good = configmap(key_entry + R"(,"store-mirror":"https://mirror.example.com/signatures",
                                           "release-repository-default":"quay.io/ocp")");
  ASSERT_TRUE(IsVerificationConfigMap(good));
  auto config = ReadVerificationConfigMap(good);
  ASSERT_TRUE(config.ok()) << config.status().message();
  ASSERT_EQ(config->keyrings.size(), 1u);
  EXPECT_EQ(config->keyrings[0]->name(), "redhat");
  EXPECT_EQ(config->stores, std::vector<std::string>{"https://mirror.example.com/signatures"});
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_NE(config->warnings[0].find("release-repository-default"), std::string::npos);

  auto no_store = ReadVerificationConfigMap(configmap(key_entry));
  ASSERT_FALSE(no_store.ok());
  EXPECT_NE(no_store.status().message().find("openshift-config-managed/release-verification: no store-<id>"),
            std::string::npos)
      << no_store.status().message();
  EXPECT_FALSE(ReadVerificationConfigMap(configmap(R"("store-a":"https://x/")")).ok());
  EXPECT_FALSE(ReadVerificationConfigMap(configmap(key_entry + R"(,"store-a":"ftp://x/")")).ok());
  EXPECT_FALSE(ReadVerificationConfigMap(configmap(R"("verifier-public-key-x":"garbage","store-a":"https://x/")")).ok());
  JsonValue plain = good;
  SetMember(plain, "metadata", JsonValue(JsonObject({{"name", JsonValue("other")}})));
  EXPECT_FALSE(IsVerificationConfigMap(plain));
}

// `cincinnati release sign` on a release pushed to a real registry (by tag: the digest is
// read from the registry), then verified from the store it wrote, as file:// and over HTTP.
TEST(ReleaseSignTest, SignsWhatTheRegistryHoldsAndTheVerifierAcceptsIt) {
  Signer key("release");
  ASSERT_TRUE(key.ok());
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready()) << registry.log();
  auto pushed = testing::RunCincinnati("release new --version 4.1.1 --to " + registry.url() + "/ocp/release:4.1.1");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  const std::string pullspec = pushed.out.substr(0, pushed.out.find('\n'));
  const std::string digest = pullspec.substr(pullspec.find('@') + 1);

  TempDir store;
  const std::string sign = "release sign --store " + store.path().string() + " --gnupg-home " + key.home();
  auto first = testing::RunCincinnati(sign + " " + registry.url() + "/ocp/release:4.1.1");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::string segment = digest;
  segment[segment.find(':')] = '=';
  EXPECT_EQ(first.out, (store / segment / "signature-1").string() + "\n");
  auto second = testing::RunCincinnati(sign + " " + pullspec);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.out, (store / segment / "signature-2").string() + "\n");

  auto message = Keyring::Open("release", {key.public_key()}).value()->Verify(testing::ReadFile(store / segment / "signature-1"));
  ASSERT_TRUE(message.ok()) << message.status().message();
  auto content = ParseAtomicSignature(message->payload);
  ASSERT_TRUE(content.ok()) << content.status().message();
  EXPECT_EQ(content->digest, digest);
  EXPECT_EQ(content->reference, registry.host_port() + "/ocp/release:4.1.1");
  EXPECT_EQ(content->creator, "cincinnati");

  ReleaseVerifier verifier(Config({&key}, {"file://" + store.path().string()}));
  auto verified = verifier.Verify(pullspec, std::nullopt, Soon());
  ASSERT_TRUE(verified.ok()) << verified.status().message();

  auto missing_key = testing::RunCincinnati(sign + " --key nobody@example.com " + pullspec);
  EXPECT_NE(missing_key.exit_code, 0);
  EXPECT_NE(missing_key.err.find("no secret key 'nobody@example.com'"), std::string::npos) << missing_key.err;
}

// `serve` (main listener) and `graph-builder` (public listener) with --signatures.dir act
// as the metadata-helper: a signature store the verifier reads over HTTP.
TEST(SignatureFilesTest, OurServicesAreSignatureStores) {
  Signer key("release");
  ASSERT_TRUE(key.ok());
  TempDir signatures;
  const std::string pullspec = "quay.io/ocp/release@" + kDigest;
  auto signed_ = testing::RunCincinnati("release sign " + pullspec + " --layout graph-data --store " +
                                        signatures.path().string() + " --gnupg-home " + key.home());
  ASSERT_EQ(signed_.exit_code, 0) << signed_.err;
  const std::string file = (signatures / "sha256" / std::string(64, 'a') / "signature-1").string();
  ASSERT_EQ(signed_.out, file + "\n");

  const auto example = testing::Examples() / "ocp-4x";
  const std::vector<std::string> common = {"--releases", (example / "releases").string(), "--graph-data",
                                           (example / "graph-data").string(), "--signatures.dir", signatures.path().string()};
  testing::ServiceProcess serve("serve", common);
  ASSERT_TRUE(serve.running()) << serve.log();
  std::vector<std::string> gb_args = common;
  gb_args.insert(gb_args.end(), {"--service.public_port", "0"});
  testing::ServiceProcess gb("graph-builder", gb_args);
  ASSERT_TRUE(gb.running()) << gb.log();

  for (const std::string& base : {serve.url("/api/upgrades_info/signatures"), gb.url("/signatures", "public")}) {
    auto got = testing::Get(base + "/sha256=" + std::string(64, 'a') + "/signature-1");
    EXPECT_EQ(got.status, 200) << base;
    EXPECT_EQ(got.body, testing::ReadFile(file));
    auto algo = testing::Get(base + "/md5=" + std::string(32, 'a') + "/signature-1");
    EXPECT_EQ(algo.status, 400);
    EXPECT_NE(algo.body.find(R"("kind":"invalid_params")"), std::string::npos) << algo.body;
    EXPECT_NE(algo.body.find("algo not supported: md5"), std::string::npos) << algo.body;
    EXPECT_EQ(testing::Get(base + "/sha256" + std::string(64, 'a') + "/signature-1").status, 400);
    auto missing = testing::Get(base + "/sha256=" + std::string(64, 'a') + "/signature-2");
    EXPECT_EQ(missing.status, 404);
    EXPECT_NE(missing.body.find(R"("kind":"does_not_exist")"), std::string::npos) << missing.body;
    EXPECT_EQ(testing::Get(base + "/sha256=../signature-1").status, 404);

    ReleaseVerifier verifier(Config({&key}, {base}));
    auto verified = verifier.Verify(pullspec, std::nullopt, Soon());
    EXPECT_TRUE(verified.ok()) << base << ": " << verified.status().message();
  }
  auto bad = testing::RunCincinnati("serve --signatures.dir /nonexistent/dir --releases " + (example / "releases").string());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("signatures.dir /nonexistent/dir: not a directory"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace cincinnati::agent
