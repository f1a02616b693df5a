// `cincinnati agent` as a real process against our `serve` on the bundled 4.x example
// and a real Prometheus: the updates a cluster at 4.12.3 is offered, a PromQL risk the
// test switches, the API's answers, a channel change, and kill -9 at any moment.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <random>
#include <thread>

#include "gpg_util.h"
#include "kube/json_value.h"
#include "registry_util.h"
#include "service_util.h"

namespace cincinnati::agent {

using kube::JsonValue;
using kube::ParseJson;
using kube::WriteJson;
using kube::FindMember;
using kube::TextOf;
using kube::IntegerOf;
using kube::BoolOf;
using kube::ItemsOf;
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

constexpr char kCv[] = "/apis/config.openshift.io/v1/clusterversions/version";

std::string Rules(int nlb) {
  return "groups:\n- name: cluster\n  interval: 1s\n  rules:\n  - record: cluster_version\n    expr: vector(1)\n"
         "  - record: ingress_controller_aws_nlb_active\n    expr: vector(" +
         std::to_string(nlb) + ")\n";
}

http::Result Patch(const std::string& url, const std::string& body) {
  http::RequestOptions options;
  options.method = "PATCH";
  options.body = body;
  options.headers = {"Content-Type: application/merge-patch+json"};
  options.timeout = 10s;
  return http::Request(url, options);
}

JsonValue Json(const std::string& text) {
  auto v = ParseJson(text);
  return v.ok() ? *v : JsonValue();
}

std::vector<std::string> AvailableVersions(const JsonValue& cv) {
  std::vector<std::string> out;
  const JsonValue* list = FindMember(cv, "status") ? FindMember(*FindMember(cv, "status"), "availableUpdates") : nullptr;
  if (list && list->is_array()) {
    for (const auto& r : ItemsOf(*list)) out.push_back(TextOf(*FindMember(r, "version")));
  }
  return out;
}

const JsonValue* ConditionOf(const JsonValue& cv, std::string_view type) {
  const JsonValue* list = FindMember(cv, "status") ? FindMember(*FindMember(cv, "status"), "conditions") : nullptr;
  if (!list || !list->is_array()) return nullptr;
  for (const auto& c : ItemsOf(*list)) {
    if (FindMember(c, "type") && TextOf(*FindMember(c, "type")) == type) return &c;
  }
  return nullptr;
}

std::string RecommendedReason(const JsonValue& cv) {
  const JsonValue* list = FindMember(*FindMember(cv, "status"), "conditionalUpdates");
  if (!list || !list->is_array() || ItemsOf(*list).empty()) return "";
  return TextOf(*FindMember(ItemsOf(*FindMember(ItemsOf(*list)[0], "conditions"))[0], "reason"));
}

// An upstream that accepts connections and never answers: a fetch to it stays in
// flight until the client gives up or dies.
class StallingUpstream {
 public:
  StallingUpstream() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen";
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0) continue;
        int c = accept(fd_, nullptr, nullptr);
        if (c >= 0) held_.push_back(c), ++accepted_;
      }
    });
  }
  ~StallingUpstream() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (int c : held_) close(c);
    close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/graph"; }
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::vector<int> held_;
  std::thread thread_;
};

class AgentProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists("/usr/bin/prometheus"));
    const auto example = testing::Examples() / "ocp-4x";
    serve_ = std::make_unique<ServiceProcess>("serve", std::vector<std::string>{
        "--releases", (example / "releases").string(), "--graph-data", (example / "graph-data").string()});
    ASSERT_TRUE(serve_->running()) << serve_->log();
    ASSERT_TRUE(WaitFor([&] { return Get(serve_->url("/readyz", "status")).status == 200; })) << serve_->log();

    testing::WriteFile(dir_ / "rules.yml", Rules(1));
    testing::WriteFile(dir_ / "prometheus.yml",
                       "global:\n  evaluation_interval: 1s\nrule_files:\n- " + (dir_ / "rules.yml").string() + "\n");
    prometheus_port_ = testing::FreePort();
    prometheus_ = std::make_unique<ChildProcess>(std::vector<std::string>{
        "/usr/bin/prometheus", "--config.file=" + (dir_ / "prometheus.yml").string(),
        "--storage.tsdb.path=" + (dir_ / "data").string(), "--web.enable-lifecycle",
        "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_)});
    ASSERT_TRUE(WaitFor([&] {
      return Get(prometheus_url() + "/api/v1/query?query=cluster_version").body.find("\"1\"]") != std::string::npos;
    }, 60s)) << prometheus_->log();
  }

  std::string prometheus_url() const { return "http://127.0.0.1:" + std::to_string(prometheus_port_); }

  std::unique_ptr<ServiceProcess> StartAgent(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--state-dir", (dir_ / "state").string(),
                                     "--release-document", (testing::Examples() / "ocp-4x/releases/4.12.3-amd64.json").string(),
                                     "--channel", "stable-4.13",
                                     "--upstream", serve_->url("/api/upgrades_info/graph"),
                                     "--prometheus.url", prometheus_url(),
                                     "--testing.risk_cache_seconds", "1",
                                     "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto agent = std::make_unique<ServiceProcess>("agent", args);
    EXPECT_TRUE(agent->running()) << agent->log();
    EXPECT_TRUE(WaitFor([&] { return Get(agent->url("/readyz", "status")).status == 200; })) << agent->log();
    return agent;
  }

  JsonValue ClusterVersion(ServiceProcess& agent) { return Json(Get(agent.url(kCv)).body); }

  void SwitchRisk(int nlb) {
    testing::WriteFile(dir_ / "rules.yml", Rules(nlb));
    http::RequestOptions post;
    post.method = "POST";
    ASSERT_EQ(http::Request(prometheus_url() + "/-/reload", post).status, 200);
  }

  testing::TempDir dir_;
  std::unique_ptr<ServiceProcess> serve_;
  std::unique_ptr<ChildProcess> prometheus_;
  int prometheus_port_ = 0;
};

TEST_F(AgentProcessTest, OffersTheChannelsUpdatesAndFollowsThePromQLRisk) {
  auto agent = StartAgent({"--poll-interval", "600"});
  JsonValue cv;
  ASSERT_TRUE(WaitFor([&] {
    cv = ClusterVersion(*agent);
    return RecommendedReason(cv) == "ExampleIngressRisk";
  }, 30s)) << WriteJson(cv, 2) << agent->log();
  EXPECT_EQ(AvailableVersions(cv), (std::vector<std::string>{"4.13.0", "4.12.4"}));
  EXPECT_EQ(TextOf(*FindMember(*ConditionOf(cv, "RetrievedUpdates"), "status")), "True");
  EXPECT_EQ(TextOf(*FindMember(*FindMember(*FindMember(cv, "status"), "desired"), "version")), "4.12.3");
  EXPECT_EQ(TextOf(*FindMember(ItemsOf(*FindMember(*FindMember(cv, "status"), "history"))[0], "state")), "Completed");

  // The risk no longer applies: 4.13.2 becomes a recommended update.
  SwitchRisk(0);
  ASSERT_TRUE(WaitFor([&] {
    cv = ClusterVersion(*agent);
    return RecommendedReason(cv) == "NotExposedToRisks";
  }, 30s)) << WriteJson(cv, 2);
  EXPECT_EQ(AvailableVersions(cv), (std::vector<std::string>{"4.13.2", "4.13.0", "4.12.4"}));

  // Prometheus goes away: not recommended, with the reason.
  EXPECT_EQ(prometheus_->Stop(), 0);
  ASSERT_TRUE(WaitFor([&] {
    cv = ClusterVersion(*agent);
    return RecommendedReason(cv) == "EvaluationFailed";
  }, 30s)) << WriteJson(cv, 2);
  EXPECT_EQ(AvailableVersions(cv), (std::vector<std::string>{"4.13.0", "4.12.4"}));

  std::string metrics = Get(agent->url("/metrics")).body;
  EXPECT_NE(metrics.find("cluster_version_available_updates{upstream=\"" + serve_->url("/api/upgrades_info/graph") +
                         "\",channel=\"stable-4.13\"} 2"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("cluster_version{type=\"current\",version=\"4.12.3\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("cluster_operator_conditions{name=\"version\",condition=\"RetrievedUpdates\",reason=\"\"} 1"),
            std::string::npos)
      << metrics;
}

TEST_F(AgentProcessTest, ApiChangesTheSpecAndAChannelChangeFetchesAtOnce) {
  auto agent = StartAgent({"--poll-interval", "600"});
  ASSERT_TRUE(WaitFor([&] { return AvailableVersions(ClusterVersion(*agent)).size() == 2; }, 30s)) << agent->log();

  // A field error is a Kubernetes Status naming the field; nothing changes.
  auto bad = Patch(agent->url(kCv), R"({"spec":{"desiredUpdate":{"version":"4.13","force":false}}})");
  EXPECT_EQ(bad.status, 422);
  JsonValue status = Json(bad.body);
  EXPECT_EQ(TextOf(*FindMember(status, "kind")), "Status");
  EXPECT_EQ(TextOf(*FindMember(status, "reason")), "Invalid");
  EXPECT_EQ(TextOf(*FindMember(ItemsOf(*FindMember(*FindMember(status, "details"), "causes"))[0], "field")), "spec.desiredUpdate.version");
  EXPECT_EQ(Patch(agent->url(kCv), "{nope").status, 400);

  // stable-4.13 -> candidate-4.13 is fetched at once, not after the 10-minute interval.
  auto changed = Patch(agent->url(kCv), R"({"spec":{"channel":"candidate-4.13"}})");
  ASSERT_EQ(changed.status, 200) << changed.body;
  EXPECT_EQ(IntegerOf(*FindMember(*FindMember(Json(changed.body), "metadata"), "generation")), 2);
  ASSERT_TRUE(WaitFor([&] {
    JsonValue cv = ClusterVersion(*agent);
    auto versions = AvailableVersions(cv);
    // candidate-4.13 offers 4.12.3 a release candidate and 4.13.3, stable-4.13 neither.
    return IntegerOf(*FindMember(*FindMember(cv, "status"), "observedGeneration")) == 2 &&
           std::find(versions.begin(), versions.end(), "4.13.0-rc.0") != versions.end() &&
           std::find(versions.begin(), versions.end(), "4.13.3") != versions.end();
  }, 10s)) << WriteJson(ClusterVersion(*agent), 2);

  // A version that is not an available update, without an image: Invalid, as the CVO says.
  ASSERT_EQ(Patch(agent->url(kCv), R"({"spec":{"channel":"stable-4.13","desiredUpdate":{"version":"4.13.2"}}})").status, 200);
  ASSERT_TRUE(WaitFor([&] {
    const JsonValue cv = ClusterVersion(*agent);
    const JsonValue* invalid = ConditionOf(cv, "Invalid");
    return invalid && TextOf(*FindMember(*invalid, "message")).find("when image is empty the update must be") != std::string::npos;
  }, 10s)) << WriteJson(ClusterVersion(*agent), 2);

  // An available update: requested, but this agent has no key to verify it with, so
  // the release is refused before anything is downloaded.
  ASSERT_EQ(Patch(agent->url(kCv), R"({"spec":{"desiredUpdate":{"version":"4.13.0"}}})").status, 200);
  ASSERT_TRUE(WaitFor([&] {
    JsonValue cv = ClusterVersion(*agent);
    const JsonValue* accepted = ConditionOf(cv, "ReleaseAccepted");
    return !ConditionOf(cv, "Invalid") && accepted && TextOf(*FindMember(*accepted, "reason")) == "ImageVerificationFailed";
  }, 10s)) << WriteJson(ClusterVersion(*agent), 2);
  const JsonValue refused = ClusterVersion(*agent);
  EXPECT_EQ(TextOf(*FindMember(*ConditionOf(refused, "ReleaseAccepted"), "status")), "False");
  EXPECT_NE(TextOf(*FindMember(*ConditionOf(refused, "ReleaseAccepted"), "message")).find(
                "The update cannot be verified: the running release has no verification ConfigMap"),
            std::string::npos);
  EXPECT_EQ(ItemsOf(*FindMember(*FindMember(refused, "status"), "history")).size(), 1u) << "nothing was applied";
  EXPECT_EQ(TextOf(*FindMember(*FindMember(*FindMember(refused, "status"), "desired"), "version")), "4.12.3");
  // Cancelled (adm upgrade --clear): the running release is accepted again, as the CVO
  // says it after loading its payload once more; the refusal does not linger.
  ASSERT_EQ(Patch(agent->url(kCv), R"({"spec":{"desiredUpdate":null}})").status, 200);
  ASSERT_TRUE(WaitFor([&] {
    const JsonValue cv = ClusterVersion(*agent);
    const JsonValue* accepted = ConditionOf(cv, "ReleaseAccepted");
    return accepted && TextOf(*FindMember(*accepted, "status")) == "True";
  }, 10s)) << WriteJson(ClusterVersion(*agent), 2);
  const JsonValue cleared = ClusterVersion(*agent);
  EXPECT_EQ(TextOf(*FindMember(*ConditionOf(cleared, "ReleaseAccepted"), "reason")), "PayloadLoaded");
  EXPECT_NE(TextOf(*FindMember(*ConditionOf(cleared, "ReleaseAccepted"), "message")).find("version=\"4.12.3\""),
            std::string::npos);
  EXPECT_EQ(Get(agent->url("/apis/config.openshift.io/v1/clusteroperators/nope")).status, 404);
}

// A watch of the ClusterVersion waits until the object changes (here a PATCH of the
// channel) and answers with the new object, as one Kubernetes watch event; bad
// parameters are a 400 Status. The agent's own saves may come first: the watch is asked
// again from each version it hears of, until it hears of the channel.
TEST_F(AgentProcessTest, AWatchAnswersWithTheNextVersionOfTheClusterVersion) {
  auto agent = StartAgent();
  JsonValue cv = ClusterVersion(*agent);
  std::string rv = TextOf(*FindMember(*FindMember(cv, "metadata"), "resourceVersion"));
  auto watch = [&](const std::string& from) {
    http::RequestOptions options;
    options.timeout = 120s;
    return http::Request(agent->url(std::string(kCv) + "?watch=true&resourceVersion=" + from + "&timeoutSeconds=60"), options);
  };
  auto waiting = std::async(std::launch::async, watch, rv);
  ASSERT_EQ(Patch(agent->url(kCv), R"({"spec":{"channel":"candidate-4.13"}})").status, 200);
  for (int events = 0; events < 50; ++events) {
    http::Result got = waiting.get();
    ASSERT_EQ(got.status, 200) << got.error;
    JsonValue event = Json(got.body);
    ASSERT_EQ(TextOf(*FindMember(event, "type")), "MODIFIED") << got.body;
    const JsonValue& object = *FindMember(event, "object");
    const std::string next = TextOf(*FindMember(*FindMember(object, "metadata"), "resourceVersion"));
    EXPECT_NE(next, rv);
    if (TextOf(*FindMember(*FindMember(object, "spec"), "channel")) == "candidate-4.13") break;
    rv = next;
    waiting = std::async(std::launch::async, watch, rv);
  }
  EXPECT_EQ(Get(agent->url(std::string(kCv) + "?watch=true&timeoutSeconds=0")).status, 400);
  EXPECT_EQ(Get(agent->url(std::string(kCv) + "?watch=true&resourceVersion=x")).status, 400);
  EXPECT_EQ(TextOf(*FindMember(Json(Get(agent->url(std::string(kCv) + "?watch=false")).body), "kind")), "ClusterVersion");
}

TEST_F(AgentProcessTest, AdmUpgradeTalksToTheAgentAsOcDoes) {
  auto agent = StartAgent({"--poll-interval", "600"});
  ASSERT_TRUE(WaitFor([&] { return RecommendedReason(ClusterVersion(*agent)) == "ExampleIngressRisk"; }, 30s)) << agent->log();
  const std::string at = " --agent " + agent->url("");

  auto status = testing::RunCincinnati("adm upgrade" + at);
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(status.out.rfind("Cluster version is 4.12.3\n\nUpstream: " + serve_->url("/api/upgrades_info/graph") +
                                 "\nChannel: stable-4.13 (available channels: ",
                             0),
            0u)
      << status.out;
  EXPECT_NE(status.out.find("Recommended updates:\n\n  VERSION     IMAGE\n  4.13.0      quay.io/"), std::string::npos)
      << status.out;
  EXPECT_NE(status.out.find("Additional updates which are not recommended for your cluster configuration are available"),
            std::string::npos);
  auto include = testing::RunCincinnati("adm upgrade --include-not-recommended" + at);
  EXPECT_NE(include.out.find("Updates with known issues:\n\n  Version: 4.13.2\n"), std::string::npos) << include.out;
  EXPECT_NE(include.out.find("  Reason: ExampleIngressRisk\n"), std::string::npos) << include.out;

  // Not recommended: refused with oc's words, nothing changes.
  auto refused = testing::RunCincinnati("adm upgrade --to 4.13.2" + at);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("error: the update 4.13.2 is not one of the recommended updates, but is available as a "
                             "conditional update. To accept the Recommended=False risk and to proceed with update use "
                             "--allow-not-recommended."),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(FindMember(*FindMember(ClusterVersion(*agent), "spec"), "desiredUpdate"), nullptr);

  // By image, accepting the risk: recorded in spec.desiredUpdate.
  JsonValue cv = ClusterVersion(*agent);
  const std::string image =
      TextOf(*FindMember(*FindMember(ItemsOf(*FindMember(*FindMember(cv, "status"), "conditionalUpdates"))[0], "release"), "image"));
  auto accepted = testing::RunCincinnati("adm upgrade --to-image " + image + " --allow-not-recommended" + at);
  ASSERT_EQ(accepted.exit_code, 0) << accepted.err;
  EXPECT_EQ(accepted.out, "Requested update to 4.13.2\n");
  EXPECT_NE(accepted.err.find("warning: with --allow-not-recommended you have accepted the risks with 4.13.2"), std::string::npos);
  const JsonValue requested = ClusterVersion(*agent);
  const JsonValue* desired = FindMember(*FindMember(requested, "spec"), "desiredUpdate");
  ASSERT_NE(desired, nullptr);
  EXPECT_EQ(TextOf(*FindMember(*desired, "image")), image);
  EXPECT_EQ(TextOf(*FindMember(*desired, "version")), "4.13.2");

  // The channel: checked against the release's channels, then fetched at once.
  auto unknown = testing::RunCincinnati("adm upgrade channel eus-4.99" + at);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("is not one of the available channels"), std::string::npos) << unknown.err;
  auto channel = testing::RunCincinnati("adm upgrade channel candidate-4.13" + at);
  ASSERT_EQ(channel.exit_code, 0) << channel.err;
  ASSERT_TRUE(WaitFor([&] {
    auto versions = AvailableVersions(ClusterVersion(*agent));
    return std::find(versions.begin(), versions.end(), "4.13.0-rc.0") != versions.end();
  }, 10s)) << WriteJson(ClusterVersion(*agent), 2);

  // No agent there: the error says what to do.
  agent->Stop();
  auto down = testing::RunCincinnati("adm upgrade" + at);
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_NE(down.err.find("start one with `cincinnati agent` or pass --agent URL"), std::string::npos) << down.err;
}

TEST_F(AgentProcessTest, KillNineAtAnyMomentLosesNothing) {
  std::string cluster_id;
  std::mt19937 rng(12345);
  for (int round = 0; round < 6; ++round) {
    auto agent = StartAgent({"--poll-interval", "1"});
    JsonValue cv = ClusterVersion(*agent);
    ASSERT_TRUE(FindMember(cv, "spec")) << agent->log();
    const std::string id = TextOf(*FindMember(*FindMember(cv, "spec"), "clusterID"));
    if (cluster_id.empty()) cluster_id = id;
    EXPECT_EQ(id, cluster_id) << "round " << round;
    // Every PATCH acknowledged before the kill survives it.
    const std::string channel = round % 2 ? "fast-4.13" : "stable-4.13";
    ASSERT_EQ(Patch(agent->url(kCv), R"({"spec":{"channel":")" + channel + R"("}})").status, 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 400));  // mid-fetch or mid-write, at random
    agent->Kill();
    agent.reset();
    auto after = StartAgent();
    JsonValue restored = ClusterVersion(*after);
    EXPECT_EQ(TextOf(*FindMember(*FindMember(restored, "spec"), "channel")), channel) << "round " << round;
    EXPECT_EQ(TextOf(*FindMember(*FindMember(restored, "spec"), "clusterID")), cluster_id);
    EXPECT_EQ(ItemsOf(*FindMember(*FindMember(restored, "status"), "history")).size(), 1u);
    EXPECT_EQ(after->Stop(), 0);
  }
}

TEST_F(AgentProcessTest, KillNineDuringAFetchLosesNothing) {
  auto agent = StartAgent({"--poll-interval", "600"});
  ASSERT_TRUE(WaitFor([&] { return AvailableVersions(ClusterVersion(*agent)).size() == 2; }, 30s)) << agent->log();
  const JsonValue before = ClusterVersion(*agent);

  // A new upstream is fetched at once; it never answers, and the agent dies mid-fetch.
  StallingUpstream stalling;
  ASSERT_EQ(Patch(agent->url(kCv), R"({"spec":{"upstream":")" + stalling.url() + R"("}})").status, 200);
  ASSERT_TRUE(WaitFor([&] { return stalling.accepted() >= 1; }, 10s)) << agent->log();
  agent->Kill();
  agent.reset();

  auto after = StartAgent({"--poll-interval", "600"});
  JsonValue restored = ClusterVersion(*after);
  EXPECT_EQ(TextOf(*FindMember(*FindMember(restored, "spec"), "upstream")), stalling.url());
  EXPECT_EQ(*FindMember(*FindMember(restored, "spec"), "clusterID"), *FindMember(*FindMember(before, "spec"), "clusterID"));
  EXPECT_EQ(*FindMember(*FindMember(restored, "status"), "history"), *FindMember(*FindMember(before, "status"), "history"));
  // The lists of the last good answer are kept while the new upstream has not answered.
  EXPECT_EQ(AvailableVersions(restored), AvailableVersions(before));
  // The restarted agent fetches from the new upstream again and still answers its API.
  ASSERT_TRUE(WaitFor([&] { return stalling.accepted() >= 2; }, 10s)) << after->log();
  EXPECT_EQ(Get(after->url(kCv)).status, 200);
  after->Kill();
}

TEST_F(AgentProcessTest, KillNineDuringPatchesKeepsEveryAcknowledgedOne) {
  const std::vector<std::string> channels = {"stable-4.13", "fast-4.13", "candidate-4.13"};
  std::mt19937 rng(777);
  for (int round = 0; round < 4; ++round) {
    auto agent = StartAgent({"--poll-interval", "1"});
    const std::string url = agent->url(kCv);
    std::atomic<int> acknowledged{-1};
    std::atomic<bool> stop{false};
    // One writer PATCHes the channel in turn as fast as the agent answers.
    std::thread writer([&] {
      for (int i = 0; !stop; ++i) {
        auto r = Patch(url, R"({"spec":{"channel":")" + channels[i % channels.size()] + R"("}})");
        if (r.status != 200) return;
        acknowledged = i;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 400));
    agent->Kill();
    stop = true;
    writer.join();
    agent.reset();
    const int last = acknowledged;
    ASSERT_GE(last, 0) << "no PATCH was answered before the kill";

    auto after = StartAgent();
    JsonValue restored = ClusterVersion(*after);
    const std::string channel = TextOf(*FindMember(*FindMember(restored, "spec"), "channel"));
    // The last acknowledged write, or the one in flight when the agent died.
    EXPECT_TRUE(channel == channels[last % channels.size()] || channel == channels[(last + 1) % channels.size()])
        << "round " << round << ": " << channel << " after " << last + 1 << " acknowledged PATCHes";
    EXPECT_EQ(after->Stop(), 0);
  }
}

// The acceptance path of a risky update, on real parts: releases in a docker-registry
// scraped by our `serve` (graph-data with a PromQL risk on 4.1.0 -> 4.1.1), the risk
// evaluated against the real Prometheus (1: exposed), `adm upgrade --to` refused, then
// taken with --allow-not-recommended by two component processes, the accepted risk
// recorded in the history.
TEST_F(AgentProcessTest, ARiskyUpdateIsRefusedUntilTheRiskIsAccepted) {
  testing::Signer key("release");
  ASSERT_TRUE(key.ok());
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready()) << registry.log();
  testing::TempDir store, manifests, graph_data;
  const std::string include = "  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n";
  for (const char* name : {"ingress", "dns"}) {
    testing::WriteFile(manifests / (std::string("0000_50_") + name + "_01-clusteroperator.yaml"),
                       std::string("apiVersion: config.openshift.io/v1\nkind: ClusterOperator\nmetadata:\n  name: ") + name +
                           "\n" + include);
  }
  std::string installed;
  for (const char* v : {"4.1.0", "4.1.1"}) {
    auto pushed = testing::RunCincinnati(
        std::string("release new --version ") + v + (std::string(v) == "4.1.1" ? " --previous 4.1.0" : "") +
        " --metadata io.openshift.upgrades.graph.release.channels=stable-4.1 --payload-manifests " +
        manifests.path().string() + " --to " + registry.url() + "/ocp/release:" + v);
    ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
    const std::string image = pushed.out.substr(0, pushed.out.find('\n'));
    ASSERT_EQ(testing::RunCincinnati("release sign " + image + " --store " + store.path().string() + " --gnupg-home " +
                                     key.home()).exit_code, 0);
    if (installed.empty()) installed = "http://" + image;
  }
  testing::WriteFile(graph_data / "version", "1.1.0\n");
  testing::WriteFile(graph_data / "raw/metadata.json", "{}\n");
  testing::WriteFile(graph_data / "channels/stable-4.1.yaml", "name: stable-4.1\nversions:\n- 4.1.0\n- 4.1.1\n");
  testing::WriteFile(graph_data / "blocked-edges/4.1.1-NlbRisk.yaml",
                     "to: 4.1.1\nfrom: 4[.]1[.]0\nurl: https://example.com/nlb\nname: NlbRisk\n"
                     "message: NLB ingress drops connections on 4.1.1.\nmatchingRules:\n- type: PromQL\n  promql:\n"
                     "    promql: ingress_controller_aws_nlb_active\n");
  ServiceProcess scraping("serve", {"--registry", registry.url(), "--repository", "ocp/release", "--graph-data",
                                    graph_data.path().string()});
  ASSERT_TRUE(WaitFor([&] { return Get(scraping.url("/readyz", "status")).status == 200; }, 30s)) << scraping.log();

  ServiceProcess agent("agent", {"--state-dir", (dir_ / "risky").string(), "--release-image", installed,
                                 "--registry.insecure", registry.host_port(), "--verification.keys", key.keys(),
                                 "--verification.stores", "file://" + store.path().string(), "--upstream",
                                 scraping.url("/api/upgrades_info/graph"), "--channel", "stable-4.1",
                                 "--prometheus.url", prometheus_url(), "--testing.risk_cache_seconds", "1",
                                 "--poll-interval", "600", "--port", "0"});
  ASSERT_TRUE(agent.running()) << agent.log();
  const std::string at = " --agent " + agent.url("");
  std::vector<std::unique_ptr<ChildProcess>> components;
  for (const char* name : {"ingress", "dns"}) {
    components.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{
        CINCINNATI_BINARY, "component", "--agent", agent.url(""), "--name", name, "--version", "4.1.0"}));
  }
  ASSERT_TRUE(WaitFor([&] { return RecommendedReason(ClusterVersion(agent)) == "NlbRisk"; }, 30s))
      << WriteJson(ClusterVersion(agent), 2) << agent.log();

  auto refused = testing::RunCincinnati("adm upgrade --to 4.1.1" + at);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("is not one of the recommended updates, but is available as a conditional update"),
            std::string::npos)
      << refused.err;
  auto accepted = testing::RunCincinnati("adm upgrade --to 4.1.1 --allow-not-recommended" + at);
  ASSERT_EQ(accepted.exit_code, 0) << accepted.err;
  JsonValue cv;
  ASSERT_TRUE(WaitFor([&] {
    cv = ClusterVersion(agent);
    const JsonValue* history = FindMember(cv, "status") ? FindMember(*FindMember(cv, "status"), "history") : nullptr;
    return history && history->is_array() && ItemsOf(*history).size() == 2 &&
           TextOf(*FindMember(ItemsOf(*history)[0], "state")) == "Completed";
  }, 30s)) << WriteJson(cv, 2) << agent.log();
  const JsonValue& entry = ItemsOf(*FindMember(*FindMember(cv, "status"), "history"))[0];
  EXPECT_EQ(TextOf(*FindMember(entry, "version")), "4.1.1");
  EXPECT_TRUE(BoolOf(*FindMember(entry, "verified")));
  const JsonValue* risks = FindMember(entry, "acceptedRisks");
  ASSERT_NE(risks, nullptr) << WriteJson(entry, 2);
  EXPECT_NE(TextOf(*risks).find("Update from 4.1.0 to 4.1.1 is not recommended"), std::string::npos) << TextOf(*risks);
  EXPECT_NE(TextOf(*risks).find("NLB ingress drops connections"), std::string::npos) << TextOf(*risks);
  // No run-level-00 manifest in these payloads: no hand-over, the process started here still runs.
  EXPECT_EQ(agent.Stop(), 0);
}

// On an empty state directory, the installed release is read from a release image in a
// real registry: its version, digest pull spec, channels and URL.
TEST(AgentReleaseImageTest, StartsFromAReleaseImageInARegistry) {
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready()) << registry.log();
  auto pushed = testing::RunCincinnati(
      "release new --version 4.12.3 --metadata io.openshift.upgrades.graph.release.channels=stable-4.13,fast-4.12 "
      "--metadata url=https://example.com/4.12.3 --to " + registry.url() + "/ocp/release:4.12.3");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  const std::string digest = pushed.out.substr(pushed.out.find("@sha256:") + 1, 71);

  testing::TempDir dir;
  ServiceProcess agent("agent", {"--state-dir", (dir / "state").string(), "--release-image",
                                 registry.url() + "/ocp/release:4.12.3", "--upstream", "http://127.0.0.1:1/graph",
                                 "--port", "0"});
  ASSERT_TRUE(agent.running()) << agent.log();
  ASSERT_TRUE(WaitFor([&] { return Get(agent.url("/readyz")).status == 200; })) << agent.log();
  JsonValue cv = Json(Get(agent.url(kCv)).body);
  const JsonValue* desired = FindMember(*FindMember(cv, "status"), "desired");
  EXPECT_EQ(TextOf(*FindMember(*desired, "version")), "4.12.3");
  EXPECT_EQ(TextOf(*FindMember(*desired, "image")), registry.host_port() + "/ocp/release@" + digest);
  EXPECT_EQ(TextOf(*FindMember(*desired, "url")), "https://example.com/4.12.3");
  EXPECT_EQ(WriteJson(*FindMember(*desired, "channels")), R"(["fast-4.12","stable-4.13"])");
  EXPECT_EQ(TextOf(*FindMember(*FindMember(cv, "spec"), "channel")), "fast-4.12");
  EXPECT_EQ(TextOf(*FindMember(ItemsOf(*FindMember(*FindMember(cv, "status"), "history"))[0], "image")), TextOf(*FindMember(*desired, "image")));
  EXPECT_EQ(agent.Stop(), 0);

  // A tag that is not there, or an image that is not a release: the agent does not
  // start, and says which image.
  auto missing = testing::RunCincinnati("agent --port 0 --state-dir " + (dir / "other").string() + " --release-image " +
                                        registry.url() + "/ocp/release:9.9.9");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("/ocp/release:9.9.9"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(dir / "other" / "clusterversions")) << "no state is written for a release that cannot be read";
}

}  // namespace
}  // namespace cincinnati::agent
