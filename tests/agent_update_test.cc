// Updates end to end on real parts: releases built with `cincinnati release new` and
// pushed to the Debian docker-registry, signed with a fresh GnuPG key by `release sign`
// into a file:// store, and `cincinnati agent` processes on 127.0.0.1. The test plays
// the components through the agent's API (PATCH .../clusteroperators/NAME/status), as
// the component processes will.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "agent/json_value.h"
#include "cluster_version_util.h"
#include "gpg_util.h"
#include "registry_util.h"
#include "service_util.h"

namespace cincinnati::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::Get;
using testing::ServiceProcess;
using testing::TempDir;
using testing::WaitFor;
using testing::WriteFile;
using testing::At;
using testing::ConditionText;
using testing::Json;

constexpr char kCv[] = "/apis/config.openshift.io/v1/clusterversions/version";
constexpr char kOperators[] = "/apis/config.openshift.io/v1/clusteroperators/";

http::Result Send(const std::string& method, const std::string& url, const std::string& body) {
  http::RequestOptions options;
  options.method = method;
  options.body = body;
  options.headers = {"Content-Type: application/merge-patch+json"};
  options.timeout = 10s;
  return http::Request(url, options);
}

const JsonValue& HistoryEntry(const JsonValue& cv, size_t i) {
  static const JsonValue kNull;
  const JsonValue& history = At(cv, {"status", "history"});
  return history.is_array() && i < history.items().size() ? history.items()[i] : kNull;
}

size_t HistorySize(const JsonValue& cv) {
  const JsonValue& history = At(cv, {"status", "history"});
  return history.is_array() ? history.items().size() : 0;
}

std::string ClusterOperator(const std::string& name) {
  return "apiVersion: config.openshift.io/v1\nkind: ClusterOperator\nmetadata:\n  name: " + name +
         "\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n";
}

// Releases 4.1.0 .. in a registry, a key, a signature store, and agents on them.
class UpdateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(key_.ok());
    ASSERT_TRUE(registry_.ready()) << registry_.log();
    WriteFile(manifests_ / "0000_00_cluster-version-operator_01_config.yaml",
              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: agent-config\n  namespace: openshift-cluster-version\n"
              "  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n"
              "data:\n  release: '{{.ReleaseImage}}'\n");
    WriteFile(manifests_ / "0000_50_ingress_01-clusteroperator.yaml", ClusterOperator("ingress"));
    WriteFile(manifests_ / "0000_60_dns_01-clusteroperator.yaml", ClusterOperator("dns"));
    installed_ = Push("4.1.0", "");
  }

  // Pushes a release; returns its by-digest pull spec.
  std::string Push(const std::string& version, const std::string& previous) {
    auto r = testing::RunCincinnati("release new --version " + version + (previous.empty() ? "" : " --previous " + previous) +
                                    " --payload-manifests " + manifests_.path().string() + " --verification-keys " +
                                    key_.keys() + " --verification-stores file://" + store_.path().string() + " --to " +
                                    registry_.url() + "/ocp/release:" + version);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return registry_.url() + "/ocp/release@" + r.out.substr(r.out.find('@') + 1, 71);
  }
  void Sign(const std::string& pullspec) {
    auto r = testing::RunCincinnati("release sign " + pullspec + " --store " + store_.path().string() + " --gnupg-home " +
                                    key_.home());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // Flips one byte of the image's payload layer in the registry's storage: the registry
  // serves it under its old digest, as a corrupted or tampered store would.
  void TamperWithLayer(const std::string& pullspec) {
    const std::string digest = pullspec.substr(pullspec.find('@') + 1);
    auto manifest = Get(registry_.url() + "/v2/ocp/release/manifests/" + digest);
    ASSERT_EQ(manifest.status, 200);
    const JsonValue layers = At(Json(manifest.body), {"layers"});
    ASSERT_TRUE(layers.is_array() && !layers.items().empty()) << manifest.body;
    const std::string layer = At(layers.items()[0], {"digest"}).text().substr(7);
    const fs::path data = registry_.storage() / "docker/registry/v2/blobs/sha256" / layer.substr(0, 2) / layer / "data";
    std::string bytes = testing::ReadFile(data);
    ASSERT_FALSE(bytes.empty()) << data;
    bytes[bytes.size() / 2] ^= 0x5a;
    WriteFile(data, bytes);
  }

  void TearDown() override {
    for (const auto& url : agent_urls_) StopAgentAt(url);
  }
  // The process answering at `base` (after a hand-over, not the one the test started).
  int64_t AgentPid(const std::string& base) {
    auto progress = Json(Get(base + "/apis/agent.cincinnati.openshift.io/v1/updateprogress").body);
    const JsonValue* pid = progress.Find("agentPid");
    return pid && pid->integer() ? *pid->integer() : 0;
  }
  void StopAgentAt(const std::string& base) {
    const int64_t pid = AgentPid(base);
    if (pid <= 0) return;
    ::kill(static_cast<pid_t>(pid), SIGTERM);
    WaitFor([&] { return ::kill(static_cast<pid_t>(pid), 0) != 0; }, 15s);
  }

  std::unique_ptr<ServiceProcess> StartAgent(std::vector<std::string> extra = {}, int port = 0) {
    std::vector<std::string> args = {"--state-dir", (state_ / "agent").string(), "--release-image", installed_,
                                     "--upstream", "http://127.0.0.1:1/graph", "--channel", "stable-4.1",
                                     "--verification.keys", key_.keys(), "--verification.stores",
                                     "file://" + store_.path().string(), "--poll-interval", "600", "--port", std::to_string(port)};
    args.insert(args.end(), extra.begin(), extra.end());
    auto agent = std::make_unique<ServiceProcess>("agent", args);
    EXPECT_TRUE(agent->running()) << agent->log();
    EXPECT_TRUE(WaitFor([&] { return Get(agent->url("/readyz")).status == 200; })) << agent->log();
    agent_urls_.push_back(agent->url(""));
    return agent;
  }
  JsonValue Cv(ServiceProcess& agent) { return Json(Get(agent.url(kCv)).body); }
  JsonValue Operator(ServiceProcess& agent, const std::string& name) { return Json(Get(agent.url(kOperators + name)).body); }
  std::string DesiredOf(ServiceProcess& agent, const std::string& name) {
    const JsonValue o = Operator(agent, name);
    const JsonValue* metadata = o.Find("metadata");
    const JsonValue* annotations = metadata ? metadata->Find("annotations") : nullptr;
    const JsonValue* v = annotations ? annotations->Find("agent.cincinnati.openshift.io/desired-version") : nullptr;
    return v ? v->text() : "";
  }
  // What a component does once rolled out: it reports the version, Available.
  void Report(ServiceProcess& agent, const std::string& name, const std::string& version, const char* degraded = "False") {
    const std::string body = R"({"status":{"versions":[{"name":"operator","version":")" + version +
                             R"("}],"conditions":[{"type":"Available","status":"True"},{"type":"Degraded","status":")" +
                             degraded + R"("}]}})";
    auto r = Send("PATCH", agent.url(kOperators + name + "/status"), body);
    ASSERT_EQ(r.status, 200) << r.body;
  }
  void Request(ServiceProcess& agent, const std::string& pullspec, const std::string& version, bool force = false) {
    auto r = Send("PATCH", agent.url(kCv),
                  R"({"spec":{"desiredUpdate":{"image":")" + pullspec + R"(","version":")" + version +
                      R"(","force":)" + (force ? "true" : "false") + "}}}");
    ASSERT_EQ(r.status, 200) << r.body;
  }
  std::string WaitForAccepted(ServiceProcess& agent, const std::string& status) {
    JsonValue cv;
    EXPECT_TRUE(WaitFor([&] {
      cv = Cv(agent);
      return ConditionText(cv, "ReleaseAccepted", "status") == status;
    }, 20s)) << WriteJson(cv, 2) << agent.log();
    return ConditionText(cv, "ReleaseAccepted", "reason");
  }

  testing::Signer key_{"release"};
  testing::LocalRegistry registry_;
  TempDir manifests_, store_, state_;
  std::string installed_;
  std::vector<std::string> agent_urls_;
};

TEST_F(UpdateTest, AVerifiedReleaseIsAppliedGroupByGroupUntilEveryComponentIsDone) {
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  auto agent = StartAgent();
  for (const char* name : {"ingress", "dns"}) {  // the components of the running release
    auto put = Send("PUT", agent->url(kOperators + std::string(name)), R"({"metadata":{"name":")" + std::string(name) + "\"}}");
    ASSERT_EQ(put.status, 200) << put.body;
    Report(*agent, name, "4.1.0");
  }

  const int64_t first_pid = AgentPid(agent->url(""));
  ASSERT_GT(first_pid, 0);
  Request(*agent, target, "4.1.1");
  EXPECT_EQ(WaitForAccepted(*agent, "True"), "PayloadLoaded");
  // The agent's own manifests went first, then it handed over: a new process answers at
  // the same address and continues from the state directory.
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "ingress") == "4.1.1"; }, 20s)) << WriteJson(Cv(*agent), 2) << agent->log();
  ASSERT_TRUE(WaitFor([&] { return !agent->running(); }, 10s)) << "the first agent exits after handing over";
  int64_t second_pid = 0;
  ASSERT_TRUE(WaitFor([&] {
    second_pid = AgentPid(agent->url(""));
    return second_pid > 0 && second_pid != first_pid;
  }, 10s)) << "a new process answers";
  EXPECT_NE(agent->log().find("handed over to"), std::string::npos) << agent->log();
  EXPECT_EQ(DesiredOf(*agent, "dns"), "");
  auto config = Json(Get(agent->url("/apis/agent.cincinnati.openshift.io/v1/objects/configmap.openshift-cluster-version.agent-config")).body);
  ASSERT_NE(config.Find("data"), nullptr) << WriteJson(config, 2);
  EXPECT_EQ(At(config, {"data", "release"}).text(), target);
  JsonValue cv = Cv(*agent);
  ASSERT_EQ(HistorySize(cv), 2u);
  const JsonValue& partial = HistoryEntry(cv, 0);
  EXPECT_EQ(At(partial, {"state"}).text(), "Partial");
  EXPECT_EQ(At(partial, {"version"}).text(), "4.1.1");
  EXPECT_TRUE(At(partial, {"verified"}).bool_value());
  ASSERT_TRUE(WaitFor([&] {
    return ConditionText(Cv(*agent), "Progressing", "message").find("waiting on ingress") != std::string::npos;
  }, 10s)) << WriteJson(Cv(*agent), 2);
  EXPECT_EQ(ConditionText(Cv(*agent), "Progressing", "status"), "True");
  // The agent's own ConfigMap is applied; ingress, dns and the verification ConfigMap are not.
  const std::string metrics = Get(agent->url("/metrics")).body;
  EXPECT_NE(metrics.find("cluster_version_payload{version=\"4.1.1\",type=\"applied\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("cluster_version_payload{version=\"4.1.1\",type=\"pending\"} 3\n"), std::string::npos) << metrics;
  EXPECT_EQ(At(Cv(*agent), {"status", "desired", "version"}).text(), "4.1.0");

  Report(*agent, "ingress", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "dns") == "4.1.1"; }, 10s)) << WriteJson(Cv(*agent), 2);
  Report(*agent, "dns", "4.1.1");
  ASSERT_TRUE(WaitFor([&] {
    cv = Cv(*agent);
    return At(HistoryEntry(cv, 0), {"state"}).text() == "Completed";
  }, 10s)) << WriteJson(cv, 2);
  EXPECT_EQ(At(cv, {"status", "desired", "version"}).text(), "4.1.1");
  EXPECT_EQ(At(cv, {"status", "desired", "image"}).text(), target);
  EXPECT_EQ(ConditionText(cv, "Progressing", "message"), "Cluster version is 4.1.1");
  EXPECT_EQ(ConditionText(cv, "Failing", "status"), "False");
  EXPECT_NE(At(HistoryEntry(cv, 0), {"completionTime"}).text(), "");

  // Restarted, the agent stays where it is: nothing is applied again.
  StopAgentAt(agent->url(""));
  agent = StartAgent();
  cv = Cv(*agent);
  EXPECT_EQ(HistorySize(cv), 2u);
  EXPECT_EQ(At(cv, {"status", "desired", "version"}).text(), "4.1.1");
}

TEST_F(UpdateTest, RefusedReleasesAreNeverApplied) {
  auto agent = StartAgent({"--update-retry", "3600"});
  for (const char* name : {"ingress", "dns"}) {
    ASSERT_EQ(Send("PUT", agent->url(kOperators + std::string(name)), R"({"metadata":{"name":")" + std::string(name) + "\"}}").status, 200);
    Report(*agent, name, "4.1.0");
  }
  const auto sign = [&](const std::string& image) { Sign(image); };
  const auto store_signature = [&](const std::string& image, const std::string& bytes) {
    const std::string digest = image.substr(image.find('@') + 1);
    WriteFile(store_ / ("sha256=" + digest.substr(7)) / "signature-1", bytes);
  };
  testing::Signer stranger{"stranger"};
  ASSERT_TRUE(stranger.ok());
  struct Case {
    std::string name, version, previous;
    std::function<void(const std::string& image)> prepare;
    std::string requested_version, reason, message, cause;  // cause: the words that say why
  };
  std::vector<Case> cases = {
      {"no signature", "4.1.2", "4.1.0", nullptr, "4.1.2", "ImageVerificationFailed", "The update cannot be verified: unable to verify", "no signature was found in any store"},
      {"signed by an unknown key", "4.1.10", "4.1.0",
       [&](const std::string& image) {
         auto r = testing::RunCincinnati("release sign " + image + " --store " + store_.path().string() + " --gnupg-home " +
                                         stranger.home());
         ASSERT_EQ(r.exit_code, 0) << r.err;
       },
       "4.1.10", "ImageVerificationFailed", "The update cannot be verified", "which is not in the keyring"},
      {"a signature for another digest", "4.1.11", "4.1.0",
       [&](const std::string& image) { store_signature(image, key_.Sign(installed_.substr(installed_.find('@') + 1))); },
       "4.1.11", "ImageVerificationFailed", "The update cannot be verified", "the signature is for " + installed_.substr(installed_.find('@') + 1)},
      {"a signature with an unknown member", "4.1.12", "4.1.0",
       [&](const std::string& image) {
         store_signature(image, key_.SignDocument(R"({"critical":{"image":{"docker-manifest-digest":")" +
                                                  image.substr(image.find('@') + 1) +
                                                  R"("},"type":"atomic container signature","identity":{"docker-reference":"x"},"extra":1},"optional":{}})"));
       },
       "4.1.12", "ImageVerificationFailed", "The update cannot be verified", "critical.extra: unknown member"},
      {"a payload whose digest does not match", "4.1.13", "4.1.0",
       [&](const std::string& image) {
         Sign(image);
         TamperWithLayer(image);
       },
       "4.1.13", "RetrievePayload", "Retrieving payload failed", "content does not match digest"},
      {"previous does not list 4.1.0", "4.1.3", "4.0.9", sign, "4.1.3", "UpgradePreconditionCheckFailed",
       "Preconditions failed", "does not declare an update from the current version 4.1.0"},
      {"a two-minor hop", "4.3.0", "4.1.0", sign, "4.3.0", "UpgradePreconditionCheckFailed", "Preconditions failed", "MultipleMinorVersionsUpdate"},
      {"a downgrade", "4.0.5", "", sign, "4.0.5", "UpgradePreconditionCheckFailed", "Preconditions failed", "LowDesiredVersion"},
      {"another version than asked", "4.1.4", "4.1.0", sign, "4.1.9", "VerifyPayloadVersion",
       "release image version 4.1.4", "does not match the expected upstream version 4.1.9"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string image = Push(c.version, c.previous);
    if (c.prepare) c.prepare(image);
    Request(*agent, image, c.requested_version);
    JsonValue cv;
    // The condition names this release (the previous case's refusal stays until then).
    ASSERT_TRUE(WaitFor([&] {
      cv = Cv(*agent);
      const std::string message = ConditionText(cv, "ReleaseAccepted", "message");
      return message.find(c.message) != std::string::npos && message.find(c.cause) != std::string::npos &&
             (message.find(image) != std::string::npos || message.find(c.requested_version) != std::string::npos);
    }, 20s)) << WriteJson(cv, 2);
    EXPECT_EQ(ConditionText(cv, "ReleaseAccepted", "status"), "False");
    EXPECT_EQ(ConditionText(cv, "ReleaseAccepted", "reason"), c.reason);
    EXPECT_EQ(HistorySize(cv), 1u);
    EXPECT_EQ(DesiredOf(*agent, "ingress"), "");
    EXPECT_EQ(At(cv, {"status", "desired", "version"}).text(), "4.1.0");
    // The refused payload is not kept (the running release's is: whom to trust).
    const std::string running =
        At(Json(Get(agent->url("/apis/agent.cincinnati.openshift.io/v1/updateprogress")).body), {"runningPayloadDir"}).text();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(state_ / "agent" / "updatepayloads", ec)) {
      EXPECT_EQ(e.path().string(), running) << "a refused payload was kept";
    }
    ASSERT_EQ(Send("PATCH", agent->url(kCv), R"({"spec":{"desiredUpdate":null}})").status, 200);
  }

  // Force does not override a version mismatch (C11).
  const std::string mismatched = Push("4.1.6", "4.1.0");
  Sign(mismatched);
  Request(*agent, mismatched, "4.1.7", /*force=*/true);
  ASSERT_TRUE(WaitFor([&] {
    return ConditionText(Cv(*agent), "ReleaseAccepted", "message").find("expected upstream version 4.1.7") != std::string::npos;
  }, 20s)) << WriteJson(Cv(*agent), 2);
  EXPECT_EQ(ConditionText(Cv(*agent), "ReleaseAccepted", "reason"), "VerifyPayloadVersion");
  EXPECT_EQ(HistorySize(Cv(*agent)), 1u);
  ASSERT_EQ(Send("PATCH", agent->url(kCv), R"({"spec":{"desiredUpdate":null}})").status, 200);

  // Forced: the unsigned release goes through, unverified and saying so.
  const std::string unsigned_image = Push("4.1.5", "4.1.0");
  Request(*agent, unsigned_image, "4.1.5", /*force=*/true);
  EXPECT_EQ(WaitForAccepted(*agent, "True"), "PayloadLoaded");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "ingress") == "4.1.5"; }, 10s));
  const JsonValue entry = HistoryEntry(Cv(*agent), 0);
  EXPECT_FALSE(At(entry, {"verified"}).bool_value());
  EXPECT_NE(At(entry, {"acceptedRisks"}).text().find("The update cannot be verified"), std::string::npos)
      << At(entry, {"acceptedRisks"}).text();
}

TEST_F(UpdateTest, ADegradedOrSlowComponentIsNamedInFailing) {
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  auto agent = StartAgent({"--component-timeout", "2"});
  Request(*agent, target, "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "ingress") == "4.1.1"; }, 20s)) << WriteJson(Cv(*agent), 2);
  Report(*agent, "ingress", "4.1.0", "True");
  ASSERT_TRUE(WaitFor([&] { return ConditionText(Cv(*agent), "Failing", "reason") == "ClusterOperatorDegraded"; }, 10s))
      << WriteJson(Cv(*agent), 2);
  EXPECT_EQ(ConditionText(Cv(*agent), "Failing", "message"), "Cluster operator ingress is degraded");
  // While the component stays degraded, Failing holds still through passes of both loops
  // (a channel change wakes the retrieval loop, which once rewrote every condition).
  auto passes = [&](const char* loop) {
    return testing::MetricValue(Get(agent->url("/metrics")).body, std::string("cincinnati_agent_passes_total{loop=\"") + loop + "\"}");
  };
  const double updates = passes("update");
  ASSERT_EQ(Send("PATCH", agent->url(kCv), R"({"spec":{"channel":"fast-4.1"}})").status, 200);
  // Until a retrieval pass has asked for the new channel (its failure names the request)
  // and three update passes have ended, every read says the same; and once more after.
  auto failing_holds = [&](const JsonValue& cv) {
    EXPECT_EQ(ConditionText(cv, "Failing", "reason"), "ClusterOperatorDegraded") << WriteJson(cv, 2);
    EXPECT_EQ(ConditionText(cv, "Failing", "message"), "Cluster operator ingress is degraded");
  };
  ASSERT_TRUE(WaitFor([&] {
    const double updated = passes("update");
    const JsonValue cv = Cv(*agent);
    failing_holds(cv);
    return ConditionText(cv, "RetrievedUpdates", "message").find("channel=fast-4.1") != std::string::npos &&
           updated >= updates + 3;
  }, 20s)) << WriteJson(Cv(*agent), 2) << agent->log();
  failing_holds(Cv(*agent));
  Report(*agent, "ingress", "4.1.0", "False");  // no longer degraded, but never done
  ASSERT_TRUE(WaitFor([&] { return ConditionText(Cv(*agent), "Failing", "reason") == "ClusterOperatorNotAvailable"; }, 10s))
      << WriteJson(Cv(*agent), 2);
  EXPECT_NE(ConditionText(Cv(*agent), "Failing", "message").find("Cluster operator ingress has not yet reported success"),
            std::string::npos);
  Report(*agent, "ingress", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "dns") == "4.1.1"; }, 10s));
  EXPECT_EQ(ConditionText(Cv(*agent), "Failing", "status"), "False");
}

// Real component processes: they register at the running version, roll out when the
// agent asks (one as a pool of machines updated one by one), and the update completes
// without the test touching anything; one told to fail is named in Failing.
TEST_F(UpdateTest, ComponentProcessesTakeTheUpdateToCompleted) {
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  auto agent = StartAgent();
  const std::string api = agent->url("");
  auto component = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = {CINCINNATI_BINARY, "component", "--agent", api, "--version", "4.1.0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<testing::ChildProcess>(argv);
  };
  auto ingress = component({"--name", "ingress", "--rollout-seconds", "0.3"});
  auto dns = component({"--name", "dns", "--rollout-seconds", "0.6", "--machines", "3"});
  ASSERT_TRUE(WaitFor([&] {
    return At(Operator(*agent, "ingress"), {"status", "versions"}).is_array() &&
           At(Operator(*agent, "dns"), {"status", "versions"}).is_array();
  }, 10s)) << ingress->log() << dns->log();

  Request(*agent, target, "4.1.1");
  JsonValue cv;
  ASSERT_TRUE(WaitFor([&] {
    cv = Cv(*agent);
    return At(HistoryEntry(cv, 0), {"state"}).text() == "Completed" && At(HistoryEntry(cv, 0), {"version"}).text() == "4.1.1";
  }, 30s)) << WriteJson(cv, 2) << ingress->log() << dns->log();
  const JsonValue pool = Operator(*agent, "dns");
  EXPECT_EQ(At(pool, {"status", "extension", "machineCount"}).integer(), 3);
  EXPECT_EQ(At(pool, {"status", "extension", "updatedMachineCount"}).integer(), 3);
  EXPECT_NE(dns->log().find("dns: at 4.1.1"), std::string::npos) << dns->log();
  EXPECT_EQ(ConditionText(cv, "Failing", "status"), "False");

  // 4.1.2 with an ingress that fails its rollout: Failing names it, the update waits.
  const std::string next = Push("4.1.2", "4.1.1");
  Sign(next);
  ingress->Stop();
  auto failing = component({"--name", "ingress", "--fail"});
  Request(*agent, next, "4.1.2");
  ASSERT_TRUE(WaitFor([&] { return ConditionText(Cv(*agent), "Failing", "reason") == "ClusterOperatorDegraded"; }, 20s))
      << WriteJson(Cv(*agent), 2) << failing->log();
  EXPECT_EQ(ConditionText(Cv(*agent), "Failing", "message"), "Cluster operator ingress is degraded");
  EXPECT_EQ(At(HistoryEntry(Cv(*agent), 0), {"state"}).text(), "Partial");
}

// Without --verification.keys, the agent trusts what its running release's verification
// ConfigMap says (pulled from the registry once): the update verifies with those keys.
TEST_F(UpdateTest, TheRunningReleaseSaysWhomToTrust) {
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  auto agent = std::make_unique<ServiceProcess>(
      "agent", std::vector<std::string>{"--state-dir", (state_ / "trust").string(), "--release-image", installed_,
                                        "--upstream", "http://127.0.0.1:1/graph", "--channel", "stable-4.1",
                                        "--poll-interval", "600", "--port", "0"});
  ASSERT_TRUE(agent->running()) << agent->log();
  agent_urls_.push_back(agent->url(""));
  ASSERT_TRUE(WaitFor([&] { return Get(agent->url("/readyz")).status == 200; })) << agent->log();
  Request(*agent, target, "4.1.1");
  EXPECT_EQ(WaitForAccepted(*agent, "True"), "PayloadLoaded") << agent->log();
  ASSERT_TRUE(WaitFor([&] { return At(HistoryEntry(Cv(*agent), 0), {"version"}).text() == "4.1.1"; }, 10s));
  EXPECT_TRUE(At(HistoryEntry(Cv(*agent), 0), {"verified"}).bool_value());
}

// Every update hands over: the agent applies its own manifests, then re-executes itself
// and the new process goes on from the state directory on the same port. A hundred
// updates in a row (20 under the sanitizers), the first half with no component connected (the update then waits
// on them, and the next request starts another one), the second half with components
// that complete each update: every time a new process answers, and nothing is left
// listening in its way.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kHandOvers = 20;  // the sanitizers look for memory errors in each, not for a rare race
#else
constexpr int kHandOvers = 100;
#endif

TEST_F(UpdateTest, TheHandOverAlwaysHandsOver) {
  const std::string first = Push("4.1.1", "4.1.0"), second = Push("4.1.2", "4.1.1");
  Sign(first);
  Sign(second);
  auto agent = StartAgent();
  const std::string api = agent->url("");
  int64_t pid = AgentPid(api);
  ASSERT_GT(pid, 0);
  std::vector<std::unique_ptr<testing::ChildProcess>> components;
  for (int round = 0; round < kHandOvers; ++round) {
    SCOPED_TRACE("hand-over " + std::to_string(round + 1));
    if (round == kHandOvers / 2) {
      for (const char* name : {"ingress", "dns"}) {
        components.push_back(std::make_unique<testing::ChildProcess>(std::vector<std::string>{
            CINCINNATI_BINARY, "component", "--agent", api, "--name", name, "--version", "4.1.0", "--rollout-seconds", "0"}));
      }
    }
    const bool odd = round % 2;
    Request(*agent, odd ? second : first, odd ? "4.1.2" : "4.1.1", /*force=*/true);
    int64_t next = 0;
    ASSERT_TRUE(WaitFor([&] {
      next = AgentPid(api);
      return next > 0 && next != pid;
    }, 30s)) << "no agent answers after the hand-over\n" << agent->log();
    pid = next;
    if (round >= kHandOvers / 2) {  // with components, each update completes before the next
      ASSERT_TRUE(WaitFor([&] {
        const JsonValue cv = Json(Get(api + kCv).body);
        return At(HistoryEntry(cv, 0), {"state"}).text() == "Completed" &&
               At(HistoryEntry(cv, 0), {"version"}).text() == (odd ? "4.1.2" : "4.1.1");
      }, 30s)) << WriteJson(Json(Get(api + kCv).body), 2);
    }
  }
  EXPECT_EQ(agent->log().find("cannot listen"), std::string::npos) << agent->log();
  EXPECT_EQ(testing::Count(agent->log(), "handed over to"), static_cast<size_t>(kHandOvers));
}

// The old agent was killed after it recorded the hand-over and before its successor
// started (or the agent restarted in place): the agent that finds the hand-over under
// way, without its id, hands over again instead of taking itself for the new agent.
TEST_F(UpdateTest, AHandOverCutShortIsDoneAgain) {
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  auto agent = StartAgent();
  const std::string api = agent->url("");
  const int port = std::stoi(api.substr(api.rfind(':') + 1));
  Request(*agent, target, "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "ingress") == "4.1.1"; }, 20s)) << agent->log();
  StopAgentAt(api);

  // The state as the kill left it: the agent's own group applied, the hand-over recorded.
  const fs::path progress_file = state_ / "agent" / "agentstate" / "update.json";
  JsonValue progress = Json(testing::ReadFile(progress_file));
  progress.Set("phase", JsonValue::String("HandingOver"));
  progress.Set("nextGroup", JsonValue::Integer(0));
  progress.Set("handOverId", JsonValue::String("the-agent-that-never-started"));
  WriteFile(progress_file, WriteJson(progress, 2));

  agent = StartAgent({}, port);
  const int64_t restarted = agent->pid();
  int64_t successor = 0;
  ASSERT_TRUE(WaitFor([&] {
    successor = AgentPid(api);
    return successor > 0 && successor != restarted;
  }, 20s)) << agent->log();
  EXPECT_NE(agent->log().find("handing over again"), std::string::npos) << agent->log();
  ASSERT_TRUE(WaitFor([&] {
    return At(Json(Get(api + "/apis/agent.cincinnati.openshift.io/v1/updateprogress").body), {"phase"}).text() == "Applying";
  }, 20s));
  Report(*agent, "ingress", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "dns") == "4.1.1"; }, 20s)) << WriteJson(Cv(*agent), 2);
}

// A small tmpfs mounted for the test (needs CAP_SYS_ADMIN); unmounted at the end.
class SmallDisk {
 public:
  explicit SmallDisk(size_t bytes) {
    mounted_ = ::mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, fmt::format("size={}", bytes).c_str()) == 0;
    error_ = mounted_ ? "" : std::strerror(errno);
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  fs::path path() const { return dir_.path(); }
  // Fills the disk but for `spare` bytes.
  void FillAllBut(size_t spare) {
    const std::string block(4096, 'f');
    int fd = ::open((dir_ / "filler").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    while (::write(fd, block.data(), block.size()) == static_cast<ssize_t>(block.size())) {
    }
    ::close(fd);
    std::error_code ec;
    fs::resize_file(dir_ / "filler", fs::file_size(dir_ / "filler", ec) - spare, ec);
  }
  void Free() { fs::remove(dir_ / "filler"); }

 private:
  TempDir dir_;
  bool mounted_ = false;
  std::string error_;
};

// The agent's state on a disk that fills up: the download fails with the disk's own
// words (never as a bad payload), the metric says so, nothing of the release is applied
// and the history does not move; once there is room again the retry completes.
TEST_F(UpdateTest, AFullDiskNeverCompletesAWrongUpdate) {
  SmallDisk disk(size_t{4} << 20);
  if (!disk.mounted()) {
    GTEST_SKIP() << "mounting a tmpfs needs CAP_SYS_ADMIN (" << disk.error()
                 << "); PayloadDownloadTest.AFullDiskIsSaidAndAPayloadChangedOnDiskIsFetchedAgain covers the same with "
                    "an injected full disk";
  }
  // A payload of about 1 MiB: larger than the room left below.
  WriteFile(manifests_ / "0000_70_big_01-configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: openshift-big\n  annotations:\n"
            "    include.release.openshift.io/self-managed-high-availability: \"true\"\ndata:\n  blob: '" +
                std::string(1 << 20, 'b') + "'\n");
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  auto agent = std::make_unique<ServiceProcess>(
      "agent", std::vector<std::string>{"--state-dir", (disk.path() / "agent").string(), "--release-image", installed_,
                                        "--upstream", "http://127.0.0.1:1/graph", "--channel", "stable-4.1",
                                        "--verification.keys", key_.keys(), "--verification.stores",
                                        "file://" + store_.path().string(), "--poll-interval", "600", "--update-retry", "1",
                                        "--port", "0"});
  ASSERT_TRUE(agent->running()) << agent->log();
  agent_urls_.push_back(agent->url(""));
  ASSERT_TRUE(WaitFor([&] { return Get(agent->url("/readyz")).status == 200; })) << agent->log();
  for (const char* name : {"ingress", "dns"}) {
    ASSERT_EQ(Send("PUT", agent->url(kOperators + std::string(name)), R"({"metadata":{"name":")" + std::string(name) + "\"}}").status, 200);
    Report(*agent, name, "4.1.0");
  }
  disk.FillAllBut(256 * 1024);
  Request(*agent, target, "4.1.1");
  JsonValue cv;
  ASSERT_TRUE(WaitFor([&] {
    cv = Cv(*agent);
    return ConditionText(cv, "ReleaseAccepted", "message").find("No space left on device") != std::string::npos;
  }, 30s)) << WriteJson(cv, 2) << agent->log();
  EXPECT_EQ(ConditionText(cv, "ReleaseAccepted", "status"), "False");
  EXPECT_EQ(ConditionText(cv, "ReleaseAccepted", "reason"), "RetrievePayload");
  EXPECT_EQ(HistorySize(cv), 1u);
  EXPECT_EQ(At(cv, {"status", "desired", "version"}).text(), "4.1.0");
  EXPECT_EQ(DesiredOf(*agent, "ingress"), "") << "nothing of the release was applied";
  const std::string metrics = Get(agent->url("/metrics")).body;
  EXPECT_GE(testing::MetricValue(metrics, "cincinnati_agent_storage_errors_total{kind=\"no_space\"}"), 1) << metrics;

  disk.Free();  // room again: the retry goes through
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "ingress") == "4.1.1"; }, 30s)) << WriteJson(Cv(*agent), 2) << agent->log();
  Report(*agent, "ingress", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "dns") == "4.1.1"; }, 10s));
  Report(*agent, "dns", "4.1.1");
  ASSERT_TRUE(WaitFor([&] {
    cv = Cv(*agent);
    return At(HistoryEntry(cv, 0), {"state"}).text() == "Completed" && At(HistoryEntry(cv, 0), {"version"}).text() == "4.1.1";
  }, 20s)) << WriteJson(cv, 2);
  auto big = Json(Get(agent->url("/apis/agent.cincinnati.openshift.io/v1/objects/configmap.openshift-big.big")).body);
  EXPECT_EQ(At(big, {"data", "blob"}).text().size(), size_t{1} << 20) << "applied whole";
  const JsonValue progress = Json(Get(agent->url("/apis/agent.cincinnati.openshift.io/v1/updateprogress")).body);
  EXPECT_EQ(At(progress, {"phase"}).text(), "Completed");
  EXPECT_EQ(At(progress, {"failedReason"}).text(), "") << "the old failure is cleared: " << WriteJson(progress, 2);
  EXPECT_EQ(testing::MetricValue(Get(agent->url("/metrics")).body, "cincinnati_agent_storage_full"), 0);
  StopAgentAt(agent->url(""));
}

// The processes whose command line has `arg` as one of its arguments. A hand-over's new
// agent is found this way from the moment it is forked (before exec its command line is
// the old agent's), whether or not it has bound its port yet.
std::vector<pid_t> ProcessesWithArgument(const std::string& arg) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    // read(2), not a stream: a process that exits mid-read makes the read fail with
    // ESRCH, which libstdc++'s filebuf turns into an exception.
    std::string cmdline;
    if (int fd = ::open((entry.path() / "cmdline").c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
      char buffer[4096];
      for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;) cmdline.append(buffer, static_cast<size_t>(n));
      ::close(fd);
    }
    size_t start = 0;
    for (size_t end; (end = cmdline.find('\0', start)) != std::string::npos; start = end + 1) {
      if (cmdline.compare(start, end - start, arg) == 0) {
        pid_t pid = 0;
        std::from_chars(name.data(), name.data() + name.size(), pid);
        pids.push_back(pid);
        break;
      }
    }
  }
  return pids;
}

// kill -9 of every agent on `state_dir` until none is left (an agent killed while
// handing over may already have forked its successor).
void KillAgentsOn(const std::string& state_dir) {
  for (int tries = 0; tries < 50; ++tries) {
    const std::vector<pid_t> pids = ProcessesWithArgument(state_dir);
    if (pids.empty()) return;
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    // A killed child of the test stays a zombie (with an empty cmdline) until reaped.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "agents on " << state_dir << " survive kill -9";
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// kill -9 of the agent at a random moment after the request (verifying, downloading,
// handing over, applying): each restart resumes, the history and objects stay whole,
// and no component is asked to roll out the same version twice.
TEST_F(UpdateTest, KillNineAtAnyStepResumesWithoutRepeatingARollout) {
  auto agent = StartAgent();
  const std::string api = agent->url("");
  const int port = std::stoi(api.substr(api.rfind(':') + 1));
  std::vector<std::unique_ptr<testing::ChildProcess>> components;
  for (const char* name : {"ingress", "dns"}) {
    components.push_back(std::make_unique<testing::ChildProcess>(std::vector<std::string>{
        CINCINNATI_BINARY, "component", "--agent", api, "--name", name, "--version", "4.1.0", "--rollout-seconds", "0.4"}));
  }
  std::mt19937 rng(4242);
  std::string previous = "4.1.0";
  for (int round = 1; round <= 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string version = "4.1." + std::to_string(round);
    const std::string image = Push(version, previous);
    Sign(image);
    Request(*agent, image, version);
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 900));
    // Every agent on the state directory dies: the one started here and, when the kill
    // lands during a hand-over, the new one it started too.
    agent->Kill();
    KillAgentsOn((state_ / "agent").string());
    agent = StartAgent({}, port);
    JsonValue cv;
    ASSERT_TRUE(WaitFor([&] {
      cv = Cv(*agent);
      return At(HistoryEntry(cv, 0), {"state"}).text() == "Completed" && At(HistoryEntry(cv, 0), {"version"}).text() == version;
    }, 40s)) << WriteJson(cv, 2) << agent->log();
    EXPECT_EQ(HistorySize(cv), static_cast<size_t>(round + 1)) << WriteJson(cv, 2);
    EXPECT_TRUE(At(HistoryEntry(cv, 0), {"verified"}).bool_value());
    previous = version;
  }
  for (auto& c : components) {
    const std::string log = c->log();
    for (int round = 1; round <= 3; ++round) {
      EXPECT_EQ(Count(log, "rolling out 4.1." + std::to_string(round) + " "), 1u) << log;
    }
  }
}

// The agent as a container's first process (a PID namespace of its own): handing over
// by starting a new process and exiting would end the container, so it becomes the
// new agent in place, and the update goes on.
TEST_F(UpdateTest, AsProcessOneTheAgentHandsOverInPlace) {
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  TempDir ports;
  testing::ChildProcess agent(std::vector<std::string>{
      "/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child", CINCINNATI_BINARY, "agent", "--state-dir",
      (state_ / "agent").string(), "--release-image", installed_, "--upstream", "http://127.0.0.1:1/graph", "--channel",
      "stable-4.1", "--verification.keys", key_.keys(), "--verification.stores", "file://" + store_.path().string(),
      "--poll-interval", "600", "--port", "0", "--testing.ports_file", (ports / "ports").string()});
  ASSERT_TRUE(WaitFor([&] { return !testing::ReadFile(ports / "ports").empty() || !agent.running(); })) << agent.log();
  if (!agent.running()) GTEST_SKIP() << "no PID namespace here (unshare needs CAP_SYS_ADMIN): " << agent.log();
  struct KillOnExit {  // an assertion that ends the test early leaves no agent behind
    std::string dir;
    ~KillOnExit() { KillAgentsOn(dir); }
  } kill_on_exit{(state_ / "agent").string()};
  const std::string text = testing::ReadFile(ports / "ports");
  const std::string api = "http://127.0.0.1:" + text.substr(5, text.find('\n') - 5);
  ASSERT_TRUE(WaitFor([&] { return Get(api + "/readyz").status == 200; })) << agent.log();
  EXPECT_EQ(AgentPid(api), 1);
  ASSERT_EQ(Send("PATCH", api + kCv, R"({"spec":{"desiredUpdate":{"image":")" + target + R"(","version":"4.1.1"}}})").status,
            200);
  ASSERT_TRUE(WaitFor([&] {
    const JsonValue object = Json(Get(api + kOperators + "ingress").body);
    return At(object, {"metadata", "annotations", "agent.cincinnati.openshift.io/desired-version"}).text() == "4.1.1";
  }, 30s)) << agent.log();
  EXPECT_NE(agent.log().find("in place (this is process 1)"), std::string::npos) << agent.log();
  EXPECT_TRUE(agent.running()) << "the container lives on";
  EXPECT_EQ(AgentPid(api), 1);
  // Stopped as a container runtime stops it: SIGTERM to its first process.
  for (pid_t pid : ProcessesWithArgument((state_ / "agent").string())) {
    if (pid != agent.pid()) ::kill(pid, SIGTERM);
  }
  EXPECT_TRUE(WaitFor([&] { return !agent.running(); })) << agent.log();
}

}  // namespace
}  // namespace cincinnati::agent
