// The agent's half of the signed-answer tests, shared by
// agent_signature_test.cc and agent_signature_lists_test.cc: a graph server whose answer
// the test sets (signed with SignAnswer, gzip-encoded when asked), the answers a cluster
// at 4.12.3 is offered, and a fixture that runs real `cincinnati agent` processes
// against it with --upstream.public-keys. The agent's clock is the real one: validity
// periods are set around real now, so that nothing waits for one to pass.
#pragma once

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

namespace cincinnati::agent_signature {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using kube::JsonValue;
using kube::JsonArray;
using kube::FindMember;
using kube::TextOf;
using kube::IntegerOf;
using kube::ItemsOf;
using testing::ChildProcess;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

inline constexpr char kCv[] = "/apis/config.openshift.io/v1/clusterversions/version";
inline constexpr char kChannel[] = "stable-4.13";

// What a cluster at 4.12.3 is offered: 4.13.0 and 4.12.4, and 4.13.2 with a risk that
// always applies (no Prometheus needed). kGraphB offers 4.12.5 as well.
inline constexpr char kGraphA[] = R"({"version":1,"nodes":[
  {"version":"4.12.3","payload":"r@sha256:3","metadata":{"io.openshift.upgrades.graph.release.channels":"stable-4.13"}},
  {"version":"4.12.4","payload":"r@sha256:4","metadata":{}},
  {"version":"4.13.0","payload":"r@sha256:130","metadata":{}},
  {"version":"4.13.2","payload":"r@sha256:132","metadata":{}}],
  "edges":[[0,1],[0,2]],
  "conditionalEdges":[{"edges":[{"from":"4.12.3","to":"4.13.2"}],
    "risks":[{"url":"https://example.com/risk","name":"AlwaysRisk","message":"Always applies.",
              "matchingRules":[{"type":"Always"}]}]}]})";
inline constexpr char kGraphB[] = R"({"version":1,"nodes":[
  {"version":"4.12.3","payload":"r@sha256:3","metadata":{"io.openshift.upgrades.graph.release.channels":"stable-4.13"}},
  {"version":"4.12.4","payload":"r@sha256:4","metadata":{}},
  {"version":"4.13.0","payload":"r@sha256:130","metadata":{}},
  {"version":"4.13.2","payload":"r@sha256:132","metadata":{}},
  {"version":"4.12.5","payload":"r@sha256:5","metadata":{}}],
  "edges":[[0,1],[0,2],[0,4]],
  "conditionalEdges":[{"edges":[{"from":"4.12.3","to":"4.13.2"}],
    "risks":[{"url":"https://example.com/risk","name":"AlwaysRisk","message":"Always applies.",
              "matchingRules":[{"type":"Always"}]}]}]})";

inline int64_t RealNow() {
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

inline const JsonValue& At(const JsonValue& v, std::initializer_list<const char*> path) {
  static const JsonValue kNull;
  const JsonValue* at = &v;
  for (const char* key : path) {
    at = FindMember(*at, key);
    if (!at) return kNull;
  }
  return *at;
}

inline const JsonValue& Retrieved(const JsonValue& cv) {
  static const JsonValue kNull;
  const JsonValue& conditions = At(cv, {"status", "conditions"});
  if (!conditions.is_array()) return kNull;
  for (const auto& c : ItemsOf(conditions)) {
    if (TextOf(At(c, {"type"})) == "RetrievedUpdates") return c;
  }
  return kNull;
}

// The lists the agent shows, as one text to compare.
inline std::string Lists(const JsonValue& cv) {
  return kube::WriteJson(At(cv, {"status", "availableUpdates"})) + "\n" + kube::WriteJson(At(cv, {"status", "conditionalUpdates"}));
}

inline std::vector<std::string> AvailableVersions(const JsonValue& cv) {
  std::vector<std::string> out;
  const JsonValue& list = At(cv, {"status", "availableUpdates"});
  if (list.is_array()) {
    for (const auto& r : ItemsOf(list)) out.push_back(TextOf(At(r, {"version"})));
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
    EXPECT_TRUE(WaitFor([&] { return TextOf(At(Retrieved(cv = Cv(agent)), {"status"})) == "True"; }, 20s))
        << kube::WriteJson(cv, 2) << agent.log();
    return cv;
  }
  // `answer` is refused with `reason`, and the lists stay `lists`.
  void ExpectRefused(ServiceProcess& agent, Answer answer, const std::string& reason, const std::string& lists,
                     const std::string& says) {
    const double before = Signatures(agent, reason);
    const JsonValue cv = Fetched(agent, std::move(answer));
    const JsonValue& retrieved = Retrieved(cv);
    EXPECT_EQ(TextOf(At(retrieved, {"status"})), "False") << reason;
    EXPECT_EQ(TextOf(At(retrieved, {"reason"})), reason);
    const std::string message = TextOf(At(retrieved, {"message"}));
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
    for (const auto& entry : list.is_array() ? ItemsOf(list) : JsonArray{}) {
      const JsonValue& generation = At(entry, {"newestGeneration"});
      if (TextOf(At(entry, {"upstream"})) == upstream && IntegerOf(generation)) return *IntegerOf(generation);
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

}  // namespace cincinnati::agent_signature
