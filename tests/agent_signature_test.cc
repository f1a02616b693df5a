// Signed graph answers (issue 32), the agent's half: real `cincinnati agent` processes
// with --upstream.public-keys against a graph server on 127.0.0.1 that serves what the
// test says, with a Cincinnati-Signature header made by SignAnswer (gzip-encoded when
// asked, so the signature is checked on the bytes after content decoding). Every refusal
// says its reason in RetrievedUpdates and leaves the lists the agent shows as they were.
// The agent's clock is the real one: validity periods are set around real now, so that
// nothing waits for one to pass. Every wait is for an event: the upstream served the
// new answer, then a retrieval pass finished.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <optional>

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
  // The newest generation in the agent's state directory (-1: none that reads).
  int64_t RecordedGeneration() {
    auto record = kube::ParseJson(testing::ReadFile(state_ / "agent" / "agentstate" / "answer-signatures.json"));
    const JsonValue* generation = record.ok() ? record->Find("newestGeneration") : nullptr;
    return generation && generation->integer() ? *generation->integer() : -1;
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
  // starts again there.
  GraphUpstream other;
  other.Serve(Signed(kGraphA, 2, {first_}));
  http::RequestOptions patch;
  patch.method = "PATCH";
  patch.headers = {"Content-Type: application/merge-patch+json"};
  patch.body = R"({"spec":{"upstream":")" + other.url() + R"("}})";
  ASSERT_EQ(http::Request(agent->url(kCv), patch).status, 200);
  ASSERT_TRUE(WaitFor([&] { return other.served_current() >= 1; }, 20s)) << agent->log();
  cv = AfterAPass(*agent);
  EXPECT_EQ(At(Retrieved(cv), {"status"}).text(), "True") << kube::WriteJson(cv, 2);
  EXPECT_EQ(AvailableVersions(cv).size(), 2u);
  EXPECT_EQ(RecordedGeneration(), 2);
}

TEST_F(AgentSignatureTest, AnUnsignedAnswerIsUsedUnlessSignaturesAreRequired) {
  upstream_.Serve(Signed(kGraphA, 5, {first_}));
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
