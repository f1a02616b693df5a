// The fixture of the agent's end-to-end update tests (agent_update_test.cc,
// agent_handover_test.cc): releases 4.1.0 .. built with `cincinnati release new` and
// pushed to the Debian docker-registry, signed with a fresh GnuPG key into a file://
// store, and `cincinnati agent` processes on 127.0.0.1; helpers that play the components
// through the agent's API.
#pragma once

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

#include "cluster_version_util.h"
#include "gpg_util.h"
#include "kube/json_value.h"
#include "registry_util.h"
#include "service_util.h"

namespace cincinnati::agent::update_test {

using kube::JsonValue;
using kube::WriteJson;
using kube::FindMember;
using kube::TextOf;
using kube::IntegerOf;
using kube::ItemsOf;

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The cap on a wait for an agent's next state (a verification, a download, an update pass,
// a hand-over). Every wait ends at its event; the cap only ends a test whose agent is
// stuck, so it is far above what a loaded 2-core machine needs: the whole suite at -j2
// beside two CPU-burning processes once took one of these waits past 10-20 s.
inline constexpr auto kPatience = std::chrono::seconds(120);
using testing::Get;
using testing::ServiceProcess;
using testing::TempDir;
using testing::WaitFor;
using testing::WriteFile;
using testing::At;
using testing::ConditionText;
using testing::Json;

inline constexpr char kCv[] = "/apis/config.openshift.io/v1/clusterversions/version";
inline constexpr char kOperators[] = "/apis/config.openshift.io/v1/clusteroperators/";

inline http::Result Send(const std::string& method, const std::string& url, const std::string& body) {
  http::RequestOptions options;
  options.method = method;
  options.body = body;
  options.headers = {"Content-Type: application/merge-patch+json"};
  options.timeout = 10s;
  return http::Request(url, options);
}

inline const JsonValue& HistoryEntry(const JsonValue& cv, size_t i) {
  static const JsonValue kNull;
  const JsonValue& history = At(cv, {"status", "history"});
  return history.is_array() && i < ItemsOf(history).size() ? ItemsOf(history)[i] : kNull;
}

inline size_t HistorySize(const JsonValue& cv) {
  const JsonValue& history = At(cv, {"status", "history"});
  return history.is_array() ? ItemsOf(history).size() : 0;
}

inline std::string ClusterOperator(const std::string& name) {
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
    ASSERT_TRUE(layers.is_array() && !ItemsOf(layers).empty()) << manifest.body;
    const std::string layer = TextOf(At(ItemsOf(layers)[0], {"digest"})).substr(7);
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
    const JsonValue* pid = FindMember(progress, "agentPid");
    return pid && IntegerOf(*pid) ? *IntegerOf(*pid) : 0;
  }
  void StopAgentAt(const std::string& base) {
    const int64_t pid = AgentPid(base);
    if (pid <= 0) return;
    ::kill(static_cast<pid_t>(pid), SIGTERM);
    WaitFor([&] { return ::kill(static_cast<pid_t>(pid), 0) != 0; }, 15s);
  }

  // `hands_over`: the agent is expected to hand over to a successor at once (a hand-over
  // cut short), so it may be gone before it is seen running or ready.
  std::unique_ptr<ServiceProcess> StartAgent(std::vector<std::string> extra = {}, int port = 0, bool hands_over = false) {
    std::vector<std::string> args = {"--state-dir", (state_ / "agent").string(), "--release-image", installed_,
                                     "--upstream", "http://127.0.0.1:1/graph", "--channel", "stable-4.1",
                                     "--verification.keys", key_.keys(), "--verification.stores",
                                     "file://" + store_.path().string(), "--poll-interval", "600", "--port", std::to_string(port)};
    args.insert(args.end(), extra.begin(), extra.end());
    auto agent = std::make_unique<ServiceProcess>("agent", args);
    EXPECT_TRUE(hands_over || agent->running()) << agent->log();
    EXPECT_TRUE(WaitFor([&] { return Get(agent->url("/readyz")).status == 200; }, kPatience)) << agent->log();
    agent_urls_.push_back(agent->url(""));
    return agent;
  }
  // A read of the agent's API. A hand-over refuses no connection (they wait in the
  // listener's backlog for the new agent), but after a kill -9 or a restart no process
  // answers for a moment: a reader tries again, as `oc` would, rather than taking the
  // refused connection for an empty document.
  JsonValue Read(ServiceProcess& agent, const std::string& path) {
    http::Result got;
    WaitFor([&] {
      got = Get(agent.url(path));
      return got.status != 0 && got.status != 503;
    }, 20s);
    return Json(got.body);
  }
  JsonValue Cv(ServiceProcess& agent) { return Read(agent, kCv); }
  JsonValue Operator(ServiceProcess& agent, const std::string& name) { return Read(agent, kOperators + name); }
  std::string DesiredOf(ServiceProcess& agent, const std::string& name) {
    const JsonValue o = Operator(agent, name);
    const JsonValue* metadata = FindMember(o, "metadata");
    const JsonValue* annotations = metadata ? FindMember(*metadata, "annotations") : nullptr;
    const JsonValue* v = annotations ? FindMember(*annotations, "agent.cincinnati.openshift.io/desired-version") : nullptr;
    return v ? TextOf(*v) : "";
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

}  // namespace cincinnati::agent::update_test
