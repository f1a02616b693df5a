// Signed graph answers (issue 32), the agent's half: real `cincinnati agent` processes
// with --upstream.public-keys against a graph server on 127.0.0.1 that serves what the
// test says, with a Cincinnati-Signature header made by SignAnswer (gzip-encoded when
// asked, so the signature is checked on the bytes after content decoding). Every refusal
// says its reason in RetrievedUpdates and leaves the lists the agent shows as they were,
// unless the channel or upstream changed since they were retrieved: then none are shown.
// The agent's clock is the real one: validity periods are set around real now, so that
// nothing waits for one to pass. Every wait is for an event: the upstream served the
// new answer, then a retrieval pass finished. What 24 hours do is shown on the
// retriever itself, in this process, on a manual clock.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <optional>

#include "agent/update_retriever.h"
#include "cluster_version_util.h"
#include "env/clock.h"
#include "env/key_files.h"
#include "http_server/content_negotiation.h"
#include "http_server/gzip.h"
#include "http_server/http_server.h"
#include "kube/json_value.h"
#include "http/client.h"
#include "service_util.h"
#include "signing_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using kube::JsonValue;
using testing::ChildProcess;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

constexpr char kCv[] = "/apis/config.openshift.io/v1/clusterversions/version";
constexpr char kChannel[] = "stable-4.13";

// What a cluster at 4.12.3 is offered: 4.13.0 and 4.12.4, and 4.13.2 with a risk that
// always applies (no Prometheus needed). kGraphB offers 4.12.5 as well.
constexpr char kGraphA[] = R"({"version":1,"nodes":[
  {"version":"4.12.3","payload":"r@sha256:3","metadata":{"io.openshift.upgrades.graph.release.channels":"stable-4.13"}},
  {"version":"4.12.4","payload":"r@sha256:4","metadata":{}},
  {"version":"4.13.0","payload":"r@sha256:130","metadata":{}},
  {"version":"4.13.2","payload":"r@sha256:132","metadata":{}}],
  "edges":[[0,1],[0,2]],
  "conditionalEdges":[{"edges":[{"from":"4.12.3","to":"4.13.2"}],
    "risks":[{"url":"https://example.com/risk","name":"AlwaysRisk","message":"Always applies.",
              "matchingRules":[{"type":"Always"}]}]}]})";
constexpr char kGraphB[] = R"({"version":1,"nodes":[
  {"version":"4.12.3","payload":"r@sha256:3","metadata":{"io.openshift.upgrades.graph.release.channels":"stable-4.13"}},
  {"version":"4.12.4","payload":"r@sha256:4","metadata":{}},
  {"version":"4.13.0","payload":"r@sha256:130","metadata":{}},
  {"version":"4.13.2","payload":"r@sha256:132","metadata":{}},
  {"version":"4.12.5","payload":"r@sha256:5","metadata":{}}],
  "edges":[[0,1],[0,2],[0,4]],
  "conditionalEdges":[{"edges":[{"from":"4.12.3","to":"4.13.2"}],
    "risks":[{"url":"https://example.com/risk","name":"AlwaysRisk","message":"Always applies.",
              "matchingRules":[{"type":"Always"}]}]}]})";

int64_t RealNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct Answer {
  std::string body;
  std::optional<std::string> signature;  // nullopt: unsigned
};

// A graph server whose answer the test sets. It counts the requests served the current
// answer, so that a test knows when the agent has fetched it.
class GraphUpstream {
 public:
  GraphUpstream() : server_(http_server::ServerLimits{.threads = 1}) {
    port_ = *server_.Listen("127.0.0.1", 0, [this](const http_server::Request& r) {
      std::lock_guard lock(mu_);
      ++served_current_;
      last_query_ = r.query;
      gzipped_ = false;
      http_server::Response response = http_server::Response::Text(200, answer_.body, "application/json");
      if (http_server::AcceptsGzip(r.Header("Accept-Encoding"))) {
        response.body = std::make_shared<const std::string>(http_server::GzipCompress(answer_.body));
        response.headers["Content-Encoding"] = "gzip";
        gzipped_ = true;
      }
      if (answer_.signature) response.headers[kSignatureHeader] = *answer_.signature;
      return response;
    });
    server_.Start();
  }
  ~GraphUpstream() { server_.Shutdown(1s); }
  void Serve(Answer answer) {
    std::lock_guard lock(mu_);
    answer_ = std::move(answer);
    served_current_ = 0;
  }
  int served_current() { std::lock_guard lock(mu_); return served_current_; }
  std::string last_query() { std::lock_guard lock(mu_); return last_query_; }
  bool gzipped() { std::lock_guard lock(mu_); return gzipped_; }  // the last answer
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/api/upgrades_info/graph"; }

 private:
  http_server::HttpServer server_;
  int port_ = 0;
  std::mutex mu_;
  Answer answer_;
  int served_current_ = 0;
  std::string last_query_;
  bool gzipped_ = false;
};

const JsonValue& At(const JsonValue& v, std::initializer_list<const char*> path) {
  static const JsonValue kNull;
  const JsonValue* at = &v;
  for (const char* key : path) {
    at = at->Find(key);
    if (!at) return kNull;
  }
  return *at;
}

const JsonValue& Retrieved(const JsonValue& cv) {
  static const JsonValue kNull;
  const JsonValue& conditions = At(cv, {"status", "conditions"});
  if (!conditions.is_array()) return kNull;
  for (const auto& c : conditions.items()) {
    if (At(c, {"type"}).text() == "RetrievedUpdates") return c;
  }
  return kNull;
}

// The lists the agent shows, as one text to compare.
std::string Lists(const JsonValue& cv) {
  return kube::WriteJson(At(cv, {"status", "availableUpdates"})) + "\n" + kube::WriteJson(At(cv, {"status", "conditionalUpdates"}));
}

std::vector<std::string> AvailableVersions(const JsonValue& cv) {
  std::vector<std::string> out;
  const JsonValue& list = At(cv, {"status", "availableUpdates"});
  if (list.is_array()) {
    for (const auto& r : list.items()) out.push_back(At(r, {"version"}).text());
  }
  return out;
}

class AgentSignatureTest : public ::testing::Test {
 protected:
  void SetUp() override { first_ = MakeKey(trusted_.path(), "first"); }

  // A key pair whose public half goes to `trusted` (the agent's directory, or not).
  std::shared_ptr<const SigningKey> MakeKey(const fs::path& trusted, const std::string& name) {
    const testing::KeyFiles files = testing::WriteKeyPair(keys_.path(), trusted, name);
    auto key = env::LoadSigningKey(files.private_key.string());
    EXPECT_TRUE(key.ok()) << key.status().message();
    return key.ok() ? *key : nullptr;
  }

  static Answer Signed(const std::string& body, uint64_t generation, std::vector<std::shared_ptr<const SigningKey>> keys,
                       int64_t signed_at = RealNow() - 60, int64_t expires = RealNow() + 3600,
                       const std::string& channel = kChannel) {
    auto header = SignAnswer(keys, {.generation = generation, .signed_at = signed_at, .expires = expires}, {channel, "amd64", "4.12.3", ""}, body);
    EXPECT_TRUE(header.ok()) << header.status().message();
    return {body, header.ok() ? *header : ""};
  }

  std::unique_ptr<ServiceProcess> StartAgent(std::vector<std::string> extra = {}, bool with_keys = true) {
    std::vector<std::string> args = {"--state-dir", (state_ / "agent").string(),
                                     "--release-document", (testing::Examples() / "ocp-4x/releases/4.12.3-amd64.json").string(),
                                     "--channel", kChannel, "--arch", "amd64", "--upstream", upstream_.url(),
                                     "--poll-interval", "0.2", "--port", "0"};
    if (with_keys) args.insert(args.end(), {"--upstream.public-keys", trusted_.path().string()});
    args.insert(args.end(), extra.begin(), extra.end());
    auto agent = std::make_unique<ServiceProcess>("agent", args);
    EXPECT_TRUE(agent->running()) << agent->log();
    EXPECT_TRUE(WaitFor([&] { return Get(agent->url("/readyz")).status == 200; })) << agent->log();
    return agent;
  }

  static double Metric(ServiceProcess& agent, const std::string& series) {
    return testing::MetricValue(Get(agent.url("/metrics")).body, series);
  }
  static double Signatures(ServiceProcess& agent, const std::string& result) {
    return Metric(agent, "cincinnati_agent_answer_signatures_total{result=\"" + result + "\"}");
  }
  static JsonValue Cv(ServiceProcess& agent) {
    auto v = kube::ParseJson(Get(agent.url(kCv)).body);
    return v.ok() ? *v : JsonValue();
  }

  // Serves `answer` and returns the ClusterVersion once the agent has fetched it and
  // finished the retrieval pass that did (the pass ends after the state is saved).
  JsonValue Fetched(ServiceProcess& agent, Answer answer) {
    upstream_.Serve(std::move(answer));
    EXPECT_TRUE(WaitFor([&] { return upstream_.served_current() >= 1; }, 20s)) << agent.log();
    return AfterAPass(agent);
  }
  // The ClusterVersion after a retrieval pass that began after this call.
  JsonValue AfterAPass(ServiceProcess& agent) {
    const std::string retrievals = "cincinnati_agent_passes_total{loop=\"retrieval\"}";
    const double passes = Metric(agent, retrievals);
    EXPECT_TRUE(WaitFor([&] { return Metric(agent, retrievals) > passes; }, 20s)) << agent.log();
    return Cv(agent);
  }
  // Waits for the first answer to be taken (the agent's first fetch).
  JsonValue Accepted(ServiceProcess& agent) {
    JsonValue cv;
    EXPECT_TRUE(WaitFor([&] { return At(Retrieved(cv = Cv(agent)), {"status"}).text() == "True"; }, 20s))
        << kube::WriteJson(cv, 2) << agent.log();
    return cv;
  }
  // `answer` is refused with `reason`, and the lists stay `lists`.
  void ExpectRefused(ServiceProcess& agent, Answer answer, const std::string& reason, const std::string& lists,
                     const std::string& says) {
    const double before = Signatures(agent, reason);
    const JsonValue cv = Fetched(agent, std::move(answer));
    const JsonValue& retrieved = Retrieved(cv);
    EXPECT_EQ(At(retrieved, {"status"}).text(), "False") << reason;
    EXPECT_EQ(At(retrieved, {"reason"}).text(), reason);
    const std::string message = At(retrieved, {"message"}).text();
    EXPECT_TRUE(message.starts_with("Unable to retrieve available updates: ")) << message;
    EXPECT_NE(message.find(says), std::string::npos) << reason << ": " << message;
    EXPECT_EQ(Lists(cv), lists) << reason << ": the lists changed";
    EXPECT_GT(Signatures(agent, reason), before) << reason;
  }
  // The newest generation of `upstream` (by default upstream_) recorded in the agent's
  // state directory (-1: none that reads, or that upstream is not recorded).
  int64_t RecordedGeneration(std::string upstream = {}) {
    if (upstream.empty()) upstream = upstream_.url();
    auto record = kube::ParseJson(testing::ReadFile(RecordPath()));
    const JsonValue& list = record.ok() ? At(*record, {"upstreams"}) : JsonValue();
    for (const auto& entry : list.is_array() ? list.items() : std::vector<JsonValue>{}) {
      const JsonValue& generation = At(entry, {"newestGeneration"});
      if (At(entry, {"upstream"}).text() == upstream && generation.integer()) return *generation.integer();
    }
    return -1;
  }
  fs::path RecordPath() const { return state_ / "agent" / "agentstate" / "answer-signatures.json"; }
  // Lets `upstream` serve `answer`, changes the agent's spec by `spec` (a merge patch),
  // and returns the ClusterVersion after the pass that fetched `answer` with `query` in
  // the request (the old channel's polls do not count).
  JsonValue Patched(ServiceProcess& agent, const std::string& spec, GraphUpstream& upstream, Answer answer,
                    const std::string& query) {
    upstream.Serve(std::move(answer));
    http::RequestOptions patch;
    patch.method = "PATCH";
    patch.headers = {"Content-Type: application/merge-patch+json"};
    patch.body = R"({"spec":)" + spec + "}";
    EXPECT_EQ(http::Request(agent.url(kCv), patch).status, 200);
    EXPECT_TRUE(WaitFor([&] { return upstream.served_current() >= 1 && upstream.last_query().find(query) != std::string::npos; },
                        20s))
        << agent.log();
    return AfterAPass(agent);
  }

  testing::TempDir state_, keys_, trusted_;
  GraphUpstream upstream_;
  std::shared_ptr<const SigningKey> first_;
};

TEST_F(AgentSignatureTest, ASignedAnswerIsTakenAndItsGenerationKept) {
  upstream_.Serve(Signed(kGraphA, 5, {first_}));
  auto agent = StartAgent();
  const JsonValue cv = Accepted(*agent);
  EXPECT_EQ(AvailableVersions(cv), (std::vector<std::string>{"4.13.0", "4.12.4"}));
  EXPECT_EQ(At(At(cv, {"status", "conditionalUpdates"}).items().at(0), {"release", "version"}).text(), "4.13.2");
  EXPECT_EQ(upstream_.last_query().find("arch=amd64&channel=stable-4.13"), 0u) << upstream_.last_query();
  EXPECT_TRUE(upstream_.gzipped()) << "checked on the bytes after content decoding";
  EXPECT_GE(Signatures(*agent, "accepted"), 1);
  EXPECT_EQ(Signatures(*agent, "SignatureInvalid"), 0);
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_answer_generation"), 5);
  EXPECT_EQ(RecordedGeneration(), 5);
}

TEST_F(AgentSignatureTest, ForgedStaleAndUnknownAnswersAreRefusedAndChangeNothing) {
  upstream_.Serve(Signed(kGraphA, 5, {first_}));
  auto agent = StartAgent();
  const std::string lists = Lists(Accepted(*agent));
  const auto stranger = MakeKey(keys_ / "untrusted", "stranger");
  Answer tampered = Signed(kGraphA, 5, {first_});
  tampered.body = kGraphB;  // another answer under A's signature
  ExpectRefused(*agent, tampered, "SignatureInvalid", lists, "does not match this answer to channel stable-4.13");
  ExpectRefused(*agent, Signed(kGraphB, 6, {first_}, RealNow() - 60, RealNow() + 3600, "fast-4.13"), "SignatureInvalid",
                lists, "to channel stable-4.13, arch amd64, version 4.12.3");
  ExpectRefused(*agent, Signed(kGraphB, 6, {stranger}), "SignatureUnknownKey", lists, "none of them a trusted key");
  ExpectRefused(*agent, Signed(kGraphB, 6, {first_}, RealNow() - 7200, RealNow() - 3600), "SignatureExpired", lists,
                "expired");
  ExpectRefused(*agent, {kGraphB, "v=1; generation=6; nonsense"}, "SignatureMalformed", lists, "signature header");
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_answer_generation"), 5) << "no refusal raises it";

  const JsonValue cv = Fetched(*agent, Signed(kGraphB, 6, {first_}));
  EXPECT_EQ(At(Retrieved(cv), {"status"}).text(), "True");
  EXPECT_EQ(AvailableVersions(cv), (std::vector<std::string>{"4.13.0", "4.12.5", "4.12.4"}));
}

// Without --upstream.public-keys nothing is checked, whatever an answer carries.
TEST_F(AgentSignatureTest, WithoutTrustedKeysNothingIsChecked) {
  upstream_.Serve({kGraphA, "v=1; generation=6; nonsense"});
  auto agent = StartAgent({}, /*with_keys=*/false);
  EXPECT_EQ(AvailableVersions(Accepted(*agent)).size(), 2u);
  const JsonValue cv = Fetched(*agent, Signed(kGraphB, 1, {first_}, RealNow() - 7200, RealNow() - 3600));
  EXPECT_EQ(At(Retrieved(cv), {"status"}).text(), "True") << "an expired signature is not even read";
  EXPECT_EQ(AvailableVersions(cv).size(), 3u);
  EXPECT_EQ(Get(agent->url("/metrics")).body.find("cincinnati_agent_answer_signatures_total"), std::string::npos);
  EXPECT_FALSE(fs::exists(state_ / "agent" / "agentstate" / "answer-signatures.json"));
}

// A genuine but older answer (a replay from before the service moved on) is refused,
// also by an agent killed (-9) and started again.
TEST_F(AgentSignatureTest, ARolledBackGenerationIsRefusedAlsoAfterARestart) {
  const Answer older = Signed(kGraphA, 5, {first_});
  upstream_.Serve(Signed(kGraphB, 6, {first_}));
  auto agent = StartAgent();
  const std::string lists = Lists(Accepted(*agent));
  ASSERT_EQ(AvailableVersions(Cv(*agent)).size(), 3u);
  ExpectRefused(*agent, older, "SignatureRolledBack", lists, "older than generation 6");

  agent->Kill();
  agent = StartAgent();
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_answer_generation"), 6) << "read back from the state directory";
  // Fetched anew by this process, and refused: the lists of the last answer taken stay.
  ExpectRefused(*agent, older, "SignatureRolledBack", lists, "older than generation 6");

  // The same generation again is fine (a service that has not moved on), and so is a newer one.
  JsonValue cv = Fetched(*agent, Signed(kGraphA, 6, {first_}));
  EXPECT_EQ(At(Retrieved(cv), {"status"}).text(), "True");
  EXPECT_EQ(AvailableVersions(cv).size(), 2u);
  cv = Fetched(*agent, Signed(kGraphB, 7, {first_}));
  EXPECT_EQ(At(Retrieved(cv), {"status"}).text(), "True");
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_answer_generation"), 7);
  EXPECT_EQ(RecordedGeneration(), 7);

  // Pointed at another update service, which numbers its graphs its own way: counting
  // starts again there, and the first one's count is kept.
  GraphUpstream other;
  cv = Patched(*agent, R"({"upstream":")" + other.url() + R"("})", other, Signed(kGraphA, 2, {first_}), "channel=");
  EXPECT_EQ(At(Retrieved(cv), {"status"}).text(), "True") << kube::WriteJson(cv, 2);
  EXPECT_EQ(AvailableVersions(cv).size(), 2u);
  EXPECT_EQ(RecordedGeneration(other.url()), 2);
  EXPECT_EQ(RecordedGeneration(), 7);
}

// From an update service that never signed, an unsigned answer is used unless
// signatures are required.
TEST_F(AgentSignatureTest, AnUnsignedAnswerIsUsedUnlessSignaturesAreRequired) {
  upstream_.Serve({kGraphA, std::nullopt});
  auto agent = StartAgent();
  Accepted(*agent);
  JsonValue cv = Fetched(*agent, {kGraphB, std::nullopt});
  EXPECT_EQ(At(Retrieved(cv), {"status"}).text(), "True");
  EXPECT_EQ(AvailableVersions(cv).size(), 3u);
  AfterAPass(*agent);
  AfterAPass(*agent);
  EXPECT_GE(Signatures(*agent, "unsigned"), 2);
  EXPECT_EQ(testing::Count(agent->log(), "answer is not signed"), 1u) << "logged once, not at every poll";
  const std::string lists = Lists(cv);

  EXPECT_EQ(agent->Stop(), 0);
  agent = StartAgent({"--upstream.require-signature"});
  ExpectRefused(*agent, {kGraphA, std::nullopt}, "SignatureMissing", lists, "--upstream.require-signature requires one");
  cv = Fetched(*agent, Signed(kGraphA, 6, {first_}));
  EXPECT_EQ(At(Retrieved(cv), {"status"}).text(), "True");
  EXPECT_EQ(AvailableVersions(cv).size(), 2u);
}

// Trust on first use: once an update service's signed answer was taken, an unsigned
// one from it is a stripped signature and refused, also by an agent killed (-9) and
// started again, while another update service that never signed is used as before.
// Deleting the record (the agent stopped) forgets it, as the message says.
TEST_F(AgentSignatureTest, AnUpstreamThatSignedMustKeepSigning) {
  upstream_.Serve(Signed(kGraphA, 5, {first_}));
  auto agent = StartAgent();
  const std::string lists = Lists(Accepted(*agent));
  ASSERT_EQ(RecordedGeneration(), 5);
  const Answer unsigned_b{kGraphB, std::nullopt};
  ExpectRefused(*agent, unsigned_b, "SignatureMissing", lists, "signed the answers taken from it before (generation 5)");
  EXPECT_NE(At(Retrieved(Cv(*agent)), {"message"}).text().find(RecordPath().string()), std::string::npos)
      << "says which file to delete";
  EXPECT_EQ(Signatures(*agent, "unsigned"), 0);

  agent->Kill();
  agent = StartAgent();
  ExpectRefused(*agent, unsigned_b, "SignatureMissing", lists, "signed the answers taken from it before");

  // Another upstream that never signed: its unsigned answers are used.
  GraphUpstream other;
  JsonValue cv = Patched(*agent, R"({"upstream":")" + other.url() + R"("})", other, unsigned_b, "channel=");
  EXPECT_EQ(At(Retrieved(cv), {"status"}).text(), "True") << kube::WriteJson(Retrieved(cv));
  EXPECT_EQ(AvailableVersions(cv).size(), 3u);
  EXPECT_EQ(RecordedGeneration(other.url()), -1) << "an unsigned answer records nothing";
  // Back to the first: still refused, and since the upstream changed, the other's
  // updates are not shown.
  cv = Patched(*agent, R"({"upstream":")" + upstream_.url() + R"("})", upstream_, unsigned_b, "channel=");
  EXPECT_EQ(At(Retrieved(cv), {"reason"}).text(), "SignatureMissing") << kube::WriteJson(Retrieved(cv));
  EXPECT_EQ(AvailableVersions(cv).size(), 0u) << Lists(cv);
  EXPECT_FALSE(testing::ListsVersion(cv, "conditionalUpdates", "4.13.2")) << Lists(cv);

  // The way back the message names: the agent stopped, the record deleted.
  EXPECT_EQ(agent->Stop(), 0);
  ASSERT_TRUE(fs::remove(RecordPath()));
  agent = StartAgent();
  cv = Accepted(*agent);
  EXPECT_EQ(AvailableVersions(cv).size(), 3u);
  EXPECT_GE(Signatures(*agent, "unsigned"), 1);
}

// As the CVO drops its cached lists when a fetch after a change of channel fails, a
// refused answer after a channel change leaves none shown, not the old channel's.
TEST_F(AgentSignatureTest, AfterAChannelChangeARefusedAnswerShowsNoUpdates) {
  upstream_.Serve(Signed(kGraphA, 5, {first_}));
  auto agent = StartAgent();
  const std::string lists = Lists(Accepted(*agent));
  // Unsigned from an upstream that signed: refused in the old channel too, the lists kept.
  const Answer stripped{kGraphB, std::nullopt};
  ExpectRefused(*agent, stripped, "SignatureMissing", lists, "signed the answers taken from it before");

  JsonValue cv = Patched(*agent, R"({"channel":"fast-4.13"})", upstream_, stripped, "channel=fast-4.13");
  const JsonValue& retrieved = Retrieved(cv);
  EXPECT_EQ(At(retrieved, {"status"}).text(), "False");
  EXPECT_EQ(At(retrieved, {"reason"}).text(), "SignatureMissing");
  EXPECT_TRUE(AvailableVersions(cv).empty()) << Lists(cv);
  EXPECT_FALSE(testing::ListsVersion(cv, "conditionalUpdates", "4.13.2")) << Lists(cv);
  // Nor after a restart.
  agent->Kill();
  agent = StartAgent();
  cv = Fetched(*agent, stripped);
  EXPECT_EQ(At(Retrieved(cv), {"reason"}).text(), "SignatureMissing");
  EXPECT_TRUE(AvailableVersions(cv).empty()) << Lists(cv);

  cv = Fetched(*agent, Signed(kGraphA, 7, {first_}, RealNow() - 60, RealNow() + 3600, "fast-4.13"));
  EXPECT_EQ(At(Retrieved(cv), {"status"}).text(), "True");
  EXPECT_EQ(AvailableVersions(cv), (std::vector<std::string>{"4.13.0", "4.12.4"}));
}

// The retriever's policy for refusals, on a manual clock (the agent's is injected):
// within a day of the last answer taken and for the same query the lists stay, also at
// the first fetch after a restart; past a day, after a change, or for lists of an
// unknown or another query, they go. Any other failure of the first fetch drops them.
TEST_F(AgentSignatureTest, RefusalsFollowTheCachePolicy) {
  env::ManualClock clock{std::chrono::system_clock::now()};
  auto clock_now = [&] { return std::chrono::duration_cast<std::chrono::seconds>(clock.Now().time_since_epoch()).count(); };
  agent::FileObjectStore store(state_ / "unit");
  auto keys = env::LoadTrustedKeys(trusted_.path().string());
  ASSERT_TRUE(keys.ok()) << keys.status().message();
  agent::AnswerTrust trust(store, *keys, /*require=*/false);
  agent::HttpGraphFetcher fetcher({}, 10s);
  auto retriever = [&] {
    return std::make_unique<agent::UpdateRetriever>(
        fetcher, [](const std::vector<agent::MatchingRule>&) -> Result<bool> { return true; }, clock,
        agent::RetrieverSettings{.poll_interval = 3min, .max_age = 24h, .kept = {}, .trust = &trust});
  };
  const agent::GraphRequestInputs inputs{upstream_.url(), "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a", "amd64", "4.12.3", kChannel};
  agent::GraphRequestInputs fast = inputs;
  fast.channel = "fast-4.13";
  const Answer unsigned_a{kGraphA, std::nullopt};  // refused: this upstream signed before
  auto taken = [&](agent::UpdateRetriever& r) {
    upstream_.Serve(Signed(kGraphA, 5, {first_}, clock_now() - 60, clock_now() + 3600));
    const agent::RetrievedUpdates got = r.Run(inputs);
    EXPECT_EQ(got.retrieved.status, "True") << got.retrieved.message;
    EXPECT_EQ(got.available.size(), 2u);
    upstream_.Serve(unsigned_a);
    return got;
  };
  auto refused = [&](agent::UpdateRetriever& r, const agent::GraphRequestInputs& in) {
    const agent::RetrievedUpdates got = r.Run(in);
    EXPECT_TRUE(got.fetched);
    EXPECT_EQ(got.retrieved.reason, "SignatureMissing") << got.retrieved.message;
    return got.available.size() + got.conditional.size();
  };

  auto r = retriever();
  taken(*r);
  clock.Advance(4min);
  EXPECT_EQ(refused(*r, inputs), 3u) << "a poll's refusal keeps them";
  clock.Advance(23h);
  EXPECT_EQ(refused(*r, inputs), 3u) << "within a day";
  clock.Advance(2h);
  EXPECT_EQ(refused(*r, inputs), 0u) << "past a day";
  clock.Advance(4min);
  taken(*r);
  clock.Advance(5s);
  EXPECT_EQ(refused(*r, fast), 0u) << "after a channel change";

  // Restarts: a new retriever seeded with what the agent saved.
  clock.Advance(4min);
  const agent::RetrievedUpdates saved = taken(*retriever());
  ASSERT_TRUE(saved.origin);
  auto restarted = [&](std::optional<agent::ListsOrigin> origin) {
    auto fresh = retriever();
    fresh->Seed(saved.available, saved.conditional, std::move(origin));
    return fresh;
  };
  clock.Advance(1h);
  EXPECT_EQ(refused(*restarted(saved.origin), inputs), 3u) << "the same query, an hour later";
  EXPECT_EQ(refused(*restarted(saved.origin), fast), 0u) << "another channel than the lists'";
  EXPECT_EQ(refused(*restarted(std::nullopt), inputs), 0u) << "lists of an unknown query";
  upstream_.Serve(Signed("{not json", 6, {first_}, clock_now() - 60, clock_now() + 3600));
  const agent::RetrievedUpdates invalid = restarted(saved.origin)->Run(inputs);
  EXPECT_EQ(invalid.retrieved.reason, "ResponseInvalid");
  EXPECT_TRUE(invalid.available.empty() && invalid.conditional.empty()) << "any other failure drops them";
  upstream_.Serve(unsigned_a);
  clock.Advance(24h);
  EXPECT_EQ(refused(*restarted(saved.origin), inputs), 0u) << "lists over a day old";
}

// The rotation procedure: trust the new key next to the old one, sign with both, then
// with the new one only, then stop trusting the old one. No answer is refused on the
// way; once the old key is no longer trusted, what only it signs is.
TEST_F(AgentSignatureTest, KeysRotateWithoutAGap) {
  const auto second = MakeKey(trusted_.path(), "second");
  upstream_.Serve(Signed(kGraphA, 1, {first_}));
  auto agent = StartAgent();
  Accepted(*agent);
  for (const Answer& answer : {Signed(kGraphB, 2, {first_, second}), Signed(kGraphA, 3, {second}),
                               Signed(kGraphB, 4, {second})}) {
    const JsonValue cv = Fetched(*agent, answer);
    EXPECT_EQ(At(Retrieved(cv), {"status"}).text(), "True") << kube::WriteJson(Retrieved(cv));
  }
  const std::string metrics = Get(agent->url("/metrics")).body;
  for (const char* refusal : {"SignatureMissing", "SignatureMalformed", "SignatureUnknownKey", "SignatureInvalid",
                              "SignatureExpired", "SignatureRolledBack"}) {
    EXPECT_EQ(testing::MetricValue(metrics, std::string("cincinnati_agent_answer_signatures_total{result=\"") + refusal + "\"}"), 0)
        << refusal;
  }
  EXPECT_EQ(agent->Stop(), 0);
  fs::remove(trusted_ / "first.pem");
  agent = StartAgent();
  const JsonValue cv = Fetched(*agent, Signed(kGraphB, 4, {second}));
  EXPECT_EQ(At(Retrieved(cv), {"status"}).text(), "True");
  EXPECT_EQ(AvailableVersions(cv).size(), 3u);
  ExpectRefused(*agent, Signed(kGraphA, 5, {first_}), "SignatureUnknownKey", Lists(cv), "none of them a trusted key");
}

// Bad key flags stop the agent at start, saying why; --help says what each flag does.
TEST_F(AgentSignatureTest, KeyFlagsAreCheckedAtStart) {
  auto run = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {CINCINNATI_BINARY, "agent", "--state-dir", (state_ / "agent").string(),
                                     "--release-document",
                                     (testing::Examples() / "ocp-4x/releases/4.12.3-amd64.json").string(), "--port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess process(argv);
    EXPECT_TRUE(WaitFor([&] { return !process.running(); }, 20s)) << process.log();
    EXPECT_EQ(process.Stop(), 1) << process.log();
    return process.log();
  };
  EXPECT_NE(run({"--upstream.require-signature"}).find("--upstream.require-signature needs --upstream.public-keys"),
            std::string::npos);
  testing::TempDir empty;
  EXPECT_NE(run({"--upstream.public-keys", empty.path().string()}).find("no *.pem public key"), std::string::npos);
  testing::WriteFile(empty / "broken.pem", "not a key\n");
  EXPECT_NE(run({"--upstream.public-keys", empty.path().string()}).find("broken.pem"), std::string::npos);
  EXPECT_NE(run({"--upstream.public-keys", (empty / "nowhere").string()}).find("--upstream.public-keys"), std::string::npos);

  ChildProcess help({CINCINNATI_BINARY, "agent", "--help"});
  ASSERT_TRUE(WaitFor([&] { return !help.running(); }, 20s));
  const std::string text = help.log();
  EXPECT_NE(text.find("--upstream.public-keys DIR"), std::string::npos) << text;
  EXPECT_NE(text.find("--upstream.require-signature"), std::string::npos) << text;
  EXPECT_NE(text.find("SignatureMissing"), std::string::npos) << text;
}

}  // namespace
}  // namespace cincinnati
