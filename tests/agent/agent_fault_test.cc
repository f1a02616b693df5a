// `cincinnati agent` as a real process against a hostile update service (a Python
// server, tests/hostile_update_service.py), a state directory another agent holds, and
// a state file an older agent left too large to read.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iostream>

#include "cluster_version_util.h"
#include "kube/json_value.h"
#include "service_util.h"

namespace cincinnati::agent {

using kube::JsonValue;
using kube::WriteJson;
using kube::JsonObject;
using kube::JsonArray;
using kube::FindMember;
using kube::TextOf;
using kube::IntegerOf;
using kube::SetMember;
using kube::ItemsOf;
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::Get;
using testing::ServiceProcess;
using testing::TempDir;
using testing::WaitFor;
using testing::ConditionText;
using testing::Json;

constexpr char kCv[] = "/apis/config.openshift.io/v1/clusterversions/version";

size_t ListSize(const JsonValue& cv, const char* list) {
  const JsonValue* status = FindMember(cv, "status");
  const JsonValue* items = status ? FindMember(*status, list) : nullptr;
  return items && items->is_array() ? ItemsOf(*items).size() : 0;
}

// The most resident memory a process has used, in bytes (VmHWM).
int64_t PeakResidentBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

int64_t AgentPid(const ServiceProcess& agent) {
  auto progress = Json(Get(agent.url("/apis/agent.cincinnati.openshift.io/v1/updateprogress")).body);
  const JsonValue* pid = FindMember(progress, "agentPid");
  return pid && IntegerOf(*pid) ? *IntegerOf(*pid) : 0;
}

http::Result Patch(const std::string& url, const std::string& body) {
  http::RequestOptions options;
  options.method = "PATCH";
  options.body = body;
  options.headers = {"Content-Type: application/merge-patch+json"};
  options.timeout = 10s;
  return http::Request(url, options);
}

// The Python service; its answer is switched through a file.
class HostileService {
 public:
  explicit HostileService(const std::string& mode) {
    SetMode(mode);
    process_ = std::make_unique<ChildProcess>(std::vector<std::string>{
        "/usr/bin/python3", std::string(CINCINNATI_TEST_SOURCE_DIR) + "/hostile_update_service.py", "--mode-file",
        (dir_ / "mode").string(), "--port-file", (dir_ / "port").string()});
    EXPECT_TRUE(WaitFor([&] { return !testing::ReadFile(dir_ / "port").empty(); })) << process_->log();
    port_ = testing::ReadFile(dir_ / "port");
  }
  void SetMode(const std::string& mode) { testing::WriteFile(dir_ / "mode", mode + "\n"); }
  std::string url() const { return "http://127.0.0.1:" + port_ + "/graph"; }

 private:
  TempDir dir_;
  std::unique_ptr<ChildProcess> process_;
  std::string port_;
};

class AgentFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteFile(release_ / "release.json",
                       R"({"kind":"cincinnati-metadata-v0","version":"4.1.0","payload":"registry.example.com/ocp/release@sha256:)" +
                           std::string(64, '0') + R"(","metadata":{"io.openshift.upgrades.graph.release.channels":"stable-4.1"}})");
  }
  std::unique_ptr<ServiceProcess> StartAgent(const std::string& upstream, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--state-dir", state_dir(), "--release-document", (release_ / "release.json").string(),
                                     "--upstream", upstream, "--channel", "stable-4.1", "--poll-interval", "1",
                                     "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto agent = std::make_unique<ServiceProcess>("agent", args);
    EXPECT_TRUE(agent->running()) << agent->log();
    EXPECT_TRUE(WaitFor([&] { return Get(agent->url("/readyz")).status == 200; })) << agent->log();
    return agent;
  }
  std::string state_dir() const { return (state_ / "agent").string(); }
  JsonValue Cv(ServiceProcess& agent) { return Json(Get(agent.url(kCv)).body); }
  JsonValue WaitForRetrieved(ServiceProcess& agent, const std::string& status, const std::string& reason = "") {
    JsonValue cv;
    EXPECT_TRUE(WaitFor([&] {
      cv = Cv(agent);
      return ConditionText(cv, "RetrievedUpdates", "status") == status &&
             (reason.empty() || ConditionText(cv, "RetrievedUpdates", "reason") == reason);
    }, 60s)) << WriteJson(cv, 2) << agent.log();
    return cv;
  }
  uintmax_t StateFileBytes() const { return fs::file_size(fs::path(state_dir()) / "clusterversions" / "version.json"); }

  TempDir release_, state_;
};

// Answers the agent can read but must not keep: each is refused as ResponseInvalid
// naming the limit, the state stays small, memory stays bounded, a restart reads the
// state back, and a good answer afterwards is taken as usual.
TEST_F(AgentFaultTest, AHostileAnswerIsRefusedAndNeverKeepsTheAgentFromRestarting) {
  HostileService service("good");
  // Answers up to 64 MiB, as the agent took before: the limits on what is kept are the
  // ones under test here (the default answer cap is 16 MiB; see below).
  auto agent = StartAgent(service.url(), {"--upstream.max_answer_bytes", "67108864"});
  JsonValue cv = WaitForRetrieved(*agent, "True");
  EXPECT_EQ(ListSize(cv, "availableUpdates"), 1u) << WriteJson(cv, 2);
  const pid_t pid = static_cast<pid_t>(AgentPid(*agent));
  ASSERT_GT(pid, 0);

  struct Case {
    std::string mode, words;
  };
  for (const Case& c : {Case{"huge-message", "risk Risk0 has a field of 41943040 bytes, more than the 65536"},
                        Case{"many-risks", "more than 100000 risks"}}) {
    SCOPED_TRACE(c.mode);
    service.SetMode(c.mode);
    cv = WaitForRetrieved(*agent, "False", "ResponseInvalid");
    EXPECT_NE(ConditionText(cv, "RetrievedUpdates", "message").find(c.words), std::string::npos) << WriteJson(cv, 2);
    EXPECT_LT(StateFileBytes(), 64u * 1024) << "what a refused answer left in the state";
    service.SetMode("good");
    WaitForRetrieved(*agent, "True");
  }

  // A million copies of one edge: one update, as the edge says.
  service.SetMode("duplicate-edges");
  ASSERT_TRUE(WaitFor([&] {
    cv = Cv(*agent);
    const JsonValue* list = FindMember(*FindMember(cv, "status"), "availableUpdates");
    return list && list->is_array() && ItemsOf(*list).size() == 1 && TextOf(*FindMember(ItemsOf(*list)[0], "version")) == "4.1.2";
  }, 30s)) << WriteJson(cv, 2);
  EXPECT_LT(StateFileBytes(), 64u * 1024);

  const int64_t peak = PeakResidentBytes(pid);
  EXPECT_GT(peak, 0);
  std::cout << "the agent's peak resident memory: " << peak / (1 << 20) << " MiB\n";
  EXPECT_LT(peak, int64_t{1} << 30) << "the agent's peak resident memory, after answers of up to 40 MiB";

  // The state reads back whole: a restart keeps the cluster's identity.
  const std::string id = TextOf(*FindMember(*FindMember(cv, "spec"), "clusterID"));
  ASSERT_EQ(agent->Stop(), 0) << agent->log();
  agent = StartAgent(service.url());
  EXPECT_EQ(TextOf(*FindMember(*FindMember(Cv(*agent), "spec"), "clusterID")), id);

  // With the default cap, the 40 MiB answer is not even read whole.
  service.SetMode("huge-message");
  cv = WaitForRetrieved(*agent, "False", "ResponseInvalid");
  EXPECT_NE(ConditionText(cv, "RetrievedUpdates", "message").find("--upstream.max_answer_bytes"), std::string::npos)
      << WriteJson(cv, 2);
}

// An older agent kept everything a hostile service sent: a ClusterVersion too large to
// read. The agent starts with what it can read of it and says what it dropped.
TEST_F(AgentFaultTest, AStateFileTooLargeToReadIsSalvaged) {
  HostileService service("good");
  auto agent = StartAgent(service.url());
  JsonValue cv = WaitForRetrieved(*agent, "True");
  ASSERT_EQ(agent->Stop(), 0);
  // 84 MB of available updates, as an older agent kept a hostile answer's.
  const std::string id = TextOf(*FindMember(*FindMember(cv, "spec"), "clusterID"));
  JsonValue update = JsonObject({{"version", JsonValue("4.1.1")},
                                        {"image", JsonValue("registry.example.com/ocp/release@sha256:" + std::string(64, '1'))},
                                        {"url", JsonValue(std::string(1000, 'u'))}});
  JsonValue status = *FindMember(cv, "status");
  SetMember(status, "availableUpdates", JsonValue(JsonArray(JsonArray(80000, update))));
  JsonValue big = cv;
  SetMember(big, "status", std::move(status));
  testing::WriteFile(fs::path(state_dir()) / "clusterversions" / "version.json", WriteJson(big));
  ASSERT_GT(StateFileBytes(), uintmax_t{80} << 20);

  agent = StartAgent(service.url());
  cv = Cv(*agent);
  EXPECT_EQ(TextOf(*FindMember(*FindMember(cv, "spec"), "clusterID")), id) << "the cluster keeps its identity";
  EXPECT_EQ(TextOf(*FindMember(*FindMember(*FindMember(cv, "status"), "desired"), "version")), "4.1.0");
  EXPECT_NE(agent->log().find("could not be read whole"), std::string::npos) << agent->log();
  EXPECT_NE(agent->log().find("status.availableUpdates"), std::string::npos) << agent->log();
  WaitForRetrieved(*agent, "True");
  EXPECT_LT(StateFileBytes(), 64u * 1024) << "written back whole and small";

  // Not even JSON: set aside for a person to read, and the agent starts as a new cluster.
  ASSERT_EQ(agent->Stop(), 0);
  testing::WriteFile(fs::path(state_dir()) / "clusterversions" / "version.json", "{\"spec\": garbage");
  agent = StartAgent(service.url());
  EXPECT_NE(TextOf(*FindMember(*FindMember(Cv(*agent), "spec"), "clusterID")), id);
  size_t set_aside = 0;
  for (const auto& e : fs::directory_iterator(fs::path(state_dir()) / "clusterversions")) {
    set_aside += e.path().filename().string().rfind("version.json.unreadable-", 0) == 0;
  }
  EXPECT_EQ(set_aside, 2u) << "the oversized original and the broken one are both kept";
}

// A slow update service (one byte a second) holds neither the update, nor the API, nor
// a shutdown: the fetch gives up at --upstream.timeout, a requested update is stepped
// meanwhile, and SIGTERM ends the agent within seconds.
TEST_F(AgentFaultTest, ASlowUpdateServiceHoldsNothing) {
  HostileService service("slow");
  auto agent = StartAgent(service.url(), {"--upstream.timeout", "3"});
  // The update loop runs while the fetch hangs: a request for an unverifiable release
  // is refused at once, not after the fetch.
  auto patched = Patch(agent->url(kCv), R"({"spec":{"desiredUpdate":{"version":"4.1.1","image":"registry.example.com/ocp/release@sha256:)" +
                                            std::string(64, '1') + R"("}}})");
  ASSERT_EQ(patched.status, 200) << patched.body;
  JsonValue cv;
  ASSERT_TRUE(WaitFor([&] {
    cv = Cv(*agent);
    return ConditionText(cv, "ReleaseAccepted", "status") == "False";
  }, 2s)) << WriteJson(cv, 2) << agent->log();
  cv = WaitForRetrieved(*agent, "False", "RemoteFailed");
  EXPECT_NE(ConditionText(cv, "RetrievedUpdates", "message").find("timed out"), std::string::npos) << WriteJson(cv, 2);

  // Stopped in the middle of a fetch: out within seconds.
  ASSERT_TRUE(WaitFor([&] { return ConditionText(Cv(*agent), "RetrievedUpdates", "status") == "False"; }));
  const auto before = std::chrono::steady_clock::now();
  EXPECT_EQ(agent->Stop(), 0) << agent->log();
  EXPECT_LT(std::chrono::steady_clock::now() - before, 5s);
}

// Two agents on one state directory would overwrite each other's acknowledged writes:
// the second refuses to start and names the first.
TEST_F(AgentFaultTest, ASecondAgentOnTheSameStateDirectoryRefusesToStart) {
  HostileService service("good");
  auto first = StartAgent(service.url());
  const int64_t pid = AgentPid(*first);
  ChildProcess second({CINCINNATI_BINARY, "agent", "--state-dir", state_dir(), "--release-document",
                       (release_ / "release.json").string(), "--upstream", service.url(), "--port", "0"});
  ASSERT_TRUE(WaitFor([&] { return !second.running(); }));
  EXPECT_NE(second.Stop(), 0);
  EXPECT_NE(second.log().find("another agent runs on this state directory"), std::string::npos) << second.log();
  EXPECT_NE(second.log().find("pid " + std::to_string(pid)), std::string::npos) << second.log();
  EXPECT_EQ(Get(first->url("/readyz")).status, 200);
}

// The API is for loopback unless a token guards it; errors the server gives itself are
// Kubernetes Status documents too.
TEST_F(AgentFaultTest, TheApiIsGuarded) {
  ChildProcess open({CINCINNATI_BINARY, "agent", "--state-dir", state_dir(), "--release-document",
                     (release_ / "release.json").string(), "--listen", "0.0.0.0", "--port", "0"});
  ASSERT_TRUE(WaitFor([&] { return !open.running(); }));
  EXPECT_NE(open.log().find("needs --token-file"), std::string::npos) << open.log();

  // An IPv6 address is bracketed in the URL the agent prints.
  {
    TempDir other;
    ChildProcess v6({CINCINNATI_BINARY, "agent", "--state-dir", (other / "agent").string(), "--release-document",
                     (release_ / "release.json").string(), "--upstream", "http://127.0.0.1:1/graph", "--listen", "::1",
                     "--port", "0"});
    ASSERT_TRUE(WaitFor([&] { return v6.log().find("API on") != std::string::npos || !v6.running(); })) << v6.log();
    if (v6.log().find("cannot listen") == std::string::npos) {  // no IPv6 here: nothing to print
      EXPECT_NE(v6.log().find("API on http://[::1]:"), std::string::npos) << v6.log();
    }
  }

  TempDir secrets;
  testing::WriteFile(secrets / "token", "s3cret\n");
  HostileService service("good");
  auto agent = StartAgent(service.url(), {"--listen", "localhost", "--token-file", (secrets / "token").string()});
  EXPECT_EQ(Get(agent->url(kCv)).status, 401);
  EXPECT_EQ(Get(agent->url(kCv), {"Authorization: bearer s3cret"}).status, 200);
  EXPECT_EQ(Get(agent->url(kCv), {"Authorization: Bearer s3cre"}).status, 401);

  http::RequestOptions big;
  big.method = "PATCH";
  big.body = std::string(2 << 20, ' ');
  big.headers = {"Content-Type: application/merge-patch+json", "Authorization: Bearer s3cret"};
  auto refused = http::Request(agent->url(kCv), big);
  EXPECT_EQ(refused.status, 413);
  const JsonValue status = Json(refused.body);
  EXPECT_EQ(FindMember(status, "kind") ? TextOf(*FindMember(status, "kind")) : "", "Status") << refused.body;
  EXPECT_EQ(FindMember(status, "reason") ? TextOf(*FindMember(status, "reason")) : "", "RequestEntityTooLarge") << refused.body;
}

}  // namespace
}  // namespace cincinnati::agent
