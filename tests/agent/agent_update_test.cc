// Updates end to end on real parts: releases built with `cincinnati release new` and
// pushed to the Debian docker-registry, signed with a fresh GnuPG key by `release sign`
// into a file:// store, and `cincinnati agent` processes on 127.0.0.1. The test plays
// the components through the agent's API (PATCH .../clusteroperators/NAME/status), as
// the component processes will.
#include <atomic>

#include "http_server/http_server.h"
#include "update_test_fixture.h"

namespace cincinnati::agent {

using kube::WriteJson;
using kube::FindMember;
using kube::TextOf;
using kube::IntegerOf;
using kube::BoolOf;
namespace {

using namespace update_test;

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
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "ingress") == "4.1.1"; }, kPatience)) << WriteJson(Cv(*agent), 2) << agent->log();
  ASSERT_TRUE(WaitFor([&] { return !agent->running(); }, kPatience)) << "the first agent exits after handing over";
  int64_t second_pid = 0;
  ASSERT_TRUE(WaitFor([&] {
    second_pid = AgentPid(agent->url(""));
    return second_pid > 0 && second_pid != first_pid;
  }, kPatience)) << "a new process answers";
  EXPECT_NE(agent->log().find("handed over to"), std::string::npos) << agent->log();
  EXPECT_EQ(DesiredOf(*agent, "dns"), "");
  auto config = Json(Get(agent->url("/apis/agent.cincinnati.openshift.io/v1/objects/configmap.openshift-cluster-version.agent-config")).body);
  ASSERT_NE(FindMember(config, "data"), nullptr) << WriteJson(config, 2);
  EXPECT_EQ(TextOf(At(config, {"data", "release"})), target);
  JsonValue cv = Cv(*agent);
  ASSERT_EQ(HistorySize(cv), 2u);
  const JsonValue& partial = HistoryEntry(cv, 0);
  EXPECT_EQ(TextOf(At(partial, {"state"})), "Partial");
  EXPECT_EQ(TextOf(At(partial, {"version"})), "4.1.1");
  EXPECT_TRUE(BoolOf(At(partial, {"verified"})));
  ASSERT_TRUE(WaitFor([&] {
    return ConditionText(Cv(*agent), "Progressing", "message").find("waiting on ingress") != std::string::npos;
  }, kPatience)) << WriteJson(Cv(*agent), 2);
  EXPECT_EQ(ConditionText(Cv(*agent), "Progressing", "status"), "True");
  // The agent's own ConfigMap is applied; ingress, dns and the verification ConfigMap are not.
  const std::string metrics = Get(agent->url("/metrics")).body;
  EXPECT_NE(metrics.find("cluster_version_payload{version=\"4.1.1\",type=\"applied\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("cluster_version_payload{version=\"4.1.1\",type=\"pending\"} 3\n"), std::string::npos) << metrics;
  EXPECT_EQ(TextOf(At(Cv(*agent), {"status", "desired", "version"})), "4.1.0");

  Report(*agent, "ingress", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "dns") == "4.1.1"; }, kPatience)) << WriteJson(Cv(*agent), 2);
  Report(*agent, "dns", "4.1.1");
  ASSERT_TRUE(WaitFor([&] {
    cv = Cv(*agent);
    return TextOf(At(HistoryEntry(cv, 0), {"state"})) == "Completed";
  }, kPatience)) << WriteJson(cv, 2);
  EXPECT_EQ(TextOf(At(cv, {"status", "desired", "version"})), "4.1.1");
  EXPECT_EQ(TextOf(At(cv, {"status", "desired", "image"})), target);
  EXPECT_EQ(ConditionText(cv, "Progressing", "message"), "Cluster version is 4.1.1");
  EXPECT_EQ(ConditionText(cv, "Failing", "status"), "False");
  EXPECT_NE(TextOf(At(HistoryEntry(cv, 0), {"completionTime"})), "");

  // Restarted, the agent stays where it is: nothing is applied again.
  StopAgentAt(agent->url(""));
  agent = StartAgent();
  cv = Cv(*agent);
  EXPECT_EQ(HistorySize(cv), 2u);
  EXPECT_EQ(TextOf(At(cv, {"status", "desired", "version"})), "4.1.1");
}

// Once an update completes, the release just installed leaves the list of
// updates at once, not at the next poll (here 600 s away).
TEST_F(UpdateTest, TheInstalledReleaseLeavesTheAvailableUpdatesAtOnce) {
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  const std::string graph = R"({"nodes":[{"version":"4.1.0","payload":")" + installed_ +
                            R"(","metadata":{"io.openshift.upgrades.graph.release.channels":"stable-4.1"}},)"
                            R"({"version":"4.1.1","payload":")" + target +
                            R"(","metadata":{"io.openshift.upgrades.graph.release.channels":"stable-4.1"}}],"edges":[[0,1]]})";
  std::atomic<int> polls = 0;
  http_server::HttpServer upstream(http_server::ServerLimits{.threads = 1});
  const int port = *upstream.ListenAsync("127.0.0.1", 0, [&](const http_server::Request&, auto done) {
    ++polls;
    done(http_server::Response::Text(200, graph, "application/json"));
  });
  upstream.Start();
  auto agent = StartAgent();
  for (const char* name : {"ingress", "dns"}) {
    ASSERT_EQ(Send("PUT", agent->url(kOperators + std::string(name)), R"({"metadata":{"name":")" + std::string(name) + "\"}}").status, 200);
    Report(*agent, name, "4.1.0");
  }
  auto available = [&] { return WriteJson(At(Cv(*agent), {"status", "availableUpdates"})); };
  ASSERT_EQ(Send("PATCH", agent->url(kCv), R"({"spec":{"upstream":"http://127.0.0.1:)" + std::to_string(port) + R"(/graph"}})").status, 200);
  ASSERT_TRUE(WaitFor([&] { return available().find("4.1.1") != std::string::npos; }, kPatience)) << WriteJson(Cv(*agent), 2);

  Request(*agent, target, "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "ingress") == "4.1.1"; }, kPatience)) << WriteJson(Cv(*agent), 2) << agent->log();
  Report(*agent, "ingress", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "dns") == "4.1.1"; }, kPatience)) << WriteJson(Cv(*agent), 2);
  const int polls_before = polls.load();
  Report(*agent, "dns", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return TextOf(At(HistoryEntry(Cv(*agent), 0), {"state"})) == "Completed"; }, kPatience));
  EXPECT_TRUE(WaitFor([&] { return available().find("4.1.1") == std::string::npos; }, kPatience))
      << "4.1.1 is installed and still listed: " << WriteJson(Cv(*agent), 2);
  EXPECT_GT(polls.load(), polls_before) << "the agent asked again with the version it now runs";
  EXPECT_EQ(ConditionText(Cv(*agent), "RetrievedUpdates", "status"), "True");
  upstream.Shutdown(std::chrono::seconds(1));
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
    }, kPatience)) << WriteJson(cv, 2);
    EXPECT_EQ(ConditionText(cv, "ReleaseAccepted", "status"), "False");
    EXPECT_EQ(ConditionText(cv, "ReleaseAccepted", "reason"), c.reason);
    EXPECT_EQ(HistorySize(cv), 1u);
    EXPECT_EQ(DesiredOf(*agent, "ingress"), "");
    EXPECT_EQ(TextOf(At(cv, {"status", "desired", "version"})), "4.1.0");
    // The refused payload is not kept (the running release's is: whom to trust).
    const std::string running =
        TextOf(At(Json(Get(agent->url("/apis/agent.cincinnati.openshift.io/v1/updateprogress")).body), {"runningPayloadDir"}));
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(state_ / "agent" / "updatepayloads", ec)) {
      EXPECT_EQ(e.path().string(), running) << "a refused payload was kept";
    }
    ASSERT_EQ(Send("PATCH", agent->url(kCv), R"({"spec":{"desiredUpdate":null}})").status, 200);
  }

  // Force does not override a version mismatch (nor does it in the CVO).
  const std::string mismatched = Push("4.1.6", "4.1.0");
  Sign(mismatched);
  Request(*agent, mismatched, "4.1.7", /*force=*/true);
  ASSERT_TRUE(WaitFor([&] {
    return ConditionText(Cv(*agent), "ReleaseAccepted", "message").find("expected upstream version 4.1.7") != std::string::npos;
  }, kPatience)) << WriteJson(Cv(*agent), 2);
  EXPECT_EQ(ConditionText(Cv(*agent), "ReleaseAccepted", "reason"), "VerifyPayloadVersion");
  EXPECT_EQ(HistorySize(Cv(*agent)), 1u);
  ASSERT_EQ(Send("PATCH", agent->url(kCv), R"({"spec":{"desiredUpdate":null}})").status, 200);

  // Forced: the unsigned release goes through, unverified and saying so.
  const std::string unsigned_image = Push("4.1.5", "4.1.0");
  Request(*agent, unsigned_image, "4.1.5", /*force=*/true);
  EXPECT_EQ(WaitForAccepted(*agent, "True"), "PayloadLoaded");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "ingress") == "4.1.5"; }, kPatience));
  const JsonValue entry = HistoryEntry(Cv(*agent), 0);
  EXPECT_FALSE(BoolOf(At(entry, {"verified"})));
  EXPECT_NE(TextOf(At(entry, {"acceptedRisks"})).find("The update cannot be verified"), std::string::npos)
      << TextOf(At(entry, {"acceptedRisks"}));
}

TEST_F(UpdateTest, ADegradedOrSlowComponentIsNamedInFailing) {
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  auto agent = StartAgent({"--component-timeout", "2"});
  Request(*agent, target, "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "ingress") == "4.1.1"; }, kPatience)) << WriteJson(Cv(*agent), 2);
  Report(*agent, "ingress", "4.1.0", "True");
  ASSERT_TRUE(WaitFor([&] { return ConditionText(Cv(*agent), "Failing", "reason") == "ClusterOperatorDegraded"; }, kPatience))
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
  }, kPatience)) << WriteJson(Cv(*agent), 2) << agent->log();
  failing_holds(Cv(*agent));
  Report(*agent, "ingress", "4.1.0", "False");  // no longer degraded, but never done
  ASSERT_TRUE(WaitFor([&] { return ConditionText(Cv(*agent), "Failing", "reason") == "ClusterOperatorNotAvailable"; }, kPatience))
      << WriteJson(Cv(*agent), 2);
  EXPECT_NE(ConditionText(Cv(*agent), "Failing", "message").find("Cluster operator ingress has not yet reported success"),
            std::string::npos);
  Report(*agent, "ingress", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "dns") == "4.1.1"; }, kPatience));
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
  }, kPatience)) << ingress->log() << dns->log();

  Request(*agent, target, "4.1.1");
  JsonValue cv;
  ASSERT_TRUE(WaitFor([&] {
    cv = Cv(*agent);
    return TextOf(At(HistoryEntry(cv, 0), {"state"})) == "Completed" && TextOf(At(HistoryEntry(cv, 0), {"version"})) == "4.1.1";
  }, kPatience)) << WriteJson(cv, 2) << ingress->log() << dns->log();
  const JsonValue pool = Operator(*agent, "dns");
  EXPECT_EQ(IntegerOf(At(pool, {"status", "extension", "machineCount"})), 3);
  EXPECT_EQ(IntegerOf(At(pool, {"status", "extension", "updatedMachineCount"})), 3);
  EXPECT_NE(dns->log().find("dns: at 4.1.1"), std::string::npos) << dns->log();
  EXPECT_EQ(ConditionText(cv, "Failing", "status"), "False");

  // 4.1.2 with an ingress that fails its rollout: Failing names it, the update waits.
  const std::string next = Push("4.1.2", "4.1.1");
  Sign(next);
  ingress->Stop();
  auto failing = component({"--name", "ingress", "--fail"});
  Request(*agent, next, "4.1.2");
  ASSERT_TRUE(WaitFor([&] { return ConditionText(Cv(*agent), "Failing", "reason") == "ClusterOperatorDegraded"; }, kPatience))
      << WriteJson(Cv(*agent), 2) << failing->log();
  EXPECT_EQ(ConditionText(Cv(*agent), "Failing", "message"), "Cluster operator ingress is degraded");
  EXPECT_EQ(TextOf(At(HistoryEntry(Cv(*agent), 0), {"state"})), "Partial");
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
  // The agent's own manifests come first and hand it over to a new process meanwhile: the
  // document that names 4.1.1 says whether it was verified (a second read may fall into
  // the hand-over).
  JsonValue cv;
  ASSERT_TRUE(WaitFor([&] {
    cv = Cv(*agent);
    return TextOf(At(HistoryEntry(cv, 0), {"version"})) == "4.1.1";
  }, kPatience)) << WriteJson(cv, 2) << agent->log();
  EXPECT_TRUE(BoolOf(At(HistoryEntry(cv, 0), {"verified"}))) << WriteJson(cv, 2);
}

}  // namespace
}  // namespace cincinnati::agent
