// The operator and an agent that restarts during its update (it hands over to its
// successor), on real HTTP (127.0.0.1): the operator's watch of the agent breaks when
// the agent goes, reconnects when the successor listens on the same port, and hears at
// once of the control plane that finished meanwhile. The operator's clock is a manual
// one that is never advanced: the pass that sees the update done cannot be an interval's.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "config_api/cluster_version.h"
#include "env/clock.h"
#include "http/long_polls.h"
#include "http_server/http_server.h"
#include "http_server/query.h"
#include "operator/agent_client.h"
#include "operator/upgrade_operator.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati::upgrade {
namespace {
using namespace std::chrono_literals;
using kube::FindMember;
using kube::ItemsOf;
using kube::TextOf;

constexpr char kClusterVersion[] = "/apis/config.openshift.io/v1/clusterversions/version";

// The agent's ClusterVersion (kept across its restarts, as the successor reads it back)
// and its API: GET, the one-event watch, the merge PATCH of spec.desiredUpdate.
class AgentStandIn {
 public:
  AgentStandIn() {
    cv_.resource_version = 1;
    cv_.spec.cluster_id = "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a";
    cv_.spec.channel = "stable-4.1";
    cv_.status.desired = Release("4.1.0");
    cv_.status.history = {{"Completed", "2026-01-01T00:00:00Z", "2026-01-01T00:30:00Z", "4.1.0", Release("4.1.0").image, false, ""}};
    cv_.status.available_updates = {Release("4.1.1")};
    Listen(0);
  }
  ~AgentStandIn() { Stop(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The agent process goes: its connections, the operator's watch among them, close.
  void Stop() {
    std::vector<Watch> held;
    {
      std::lock_guard lock(mu_);
      held.swap(watches_);
    }
    if (server_) server_->Shutdown(100ms);
    held.clear();  // a responder holds its connection, whose end touches the server: before it goes
    server_.reset();
  }
  void Restart() { Listen(port_); }
  // The control plane finished (while the agent was down).
  void Complete() {
    std::lock_guard lock(mu_);
    cv_.status.history.front().state = "Completed";
    cv_.status.history.front().completion_time = "2026-01-01T12:40:00Z";
    ++cv_.resource_version;
  }
  bool Commanded() {
    std::lock_guard lock(mu_);
    return cv_.spec.desired_update.has_value();
  }
  size_t Watching() {
    std::lock_guard lock(mu_);
    return watches_.size();
  }

 private:
  struct Watch {
    int64_t seen;
    std::function<void(http_server::Response)> respond;
  };
  static config_api::Release Release(const std::string& version) {
    config_api::Release r;
    r.version = version;
    r.image = "quay.io/ocp/release@sha256:" + version;
    return r;
  }
  static http_server::Response Json(const kube::JsonValue& v) { return http_server::Response::Text(200, kube::WriteJson(v), "application/json"); }
  kube::JsonValue Event() { return kube::JsonObject({{"type", kube::JsonValue("MODIFIED")}, {"object", config_api::ToJson(cv_)}}); }

  void Listen(uint16_t port) {
    server_ = std::make_unique<http_server::HttpServer>();
    auto bound = server_->ListenAsync("127.0.0.1", port, [this](const http_server::Request& r, std::function<void(http_server::Response)> done) {
      Serve(r, std::move(done));
    });
    ASSERT_TRUE(bound.ok()) << bound.status().message();
    port_ = *bound;
    server_->Start();
  }
  void Serve(const http_server::Request& r, std::function<void(http_server::Response)> done) {
    std::unique_lock lock(mu_);
    if (r.path == "/apis/config.openshift.io/v1/clusteroperators") {
      lock.unlock();
      done(http_server::Response::Text(200, R"({"items":[{"metadata":{"name":"ingress"},"status":{"conditions":[{"type":"Available","status":"True"}]}}]})",
                                       "application/json"));
      return;
    }
    if (r.method == "PATCH") {
      auto patch = kube::ParseJson(r.body);
      const kube::JsonValue* spec = patch.ok() ? FindMember(*patch, "spec") : nullptr;
      const kube::JsonValue* desired = spec ? FindMember(*spec, "desiredUpdate") : nullptr;
      if (desired && desired->is_object()) {
        const kube::JsonValue* version = FindMember(*desired, "version");
        cv_.spec.desired_update = config_api::DesiredUpdate{version && version->is_string() ? TextOf(*version) : "", "", false, ""};
        cv_.status.desired = Release("4.1.1");
        cv_.status.history.insert(cv_.status.history.begin(), {"Partial", "2026-01-01T12:00:00Z", "", "4.1.1", Release("4.1.1").image, false, ""});
        ++cv_.resource_version;
        Answer();
      }
      const kube::JsonValue answer = config_api::ToJson(cv_);
      lock.unlock();
      done(Json(answer));
      return;
    }
    auto params = http_server::ParseQuery(r.query);
    if (params.ok() && params->count("watch")) {
      const int64_t seen = std::stoll(params->at("resourceVersion"));
      if (seen == cv_.resource_version) {
        watches_.push_back({seen, std::move(done)});  // answered on a change
        return;
      }
      const kube::JsonValue event = Event();
      lock.unlock();
      done(Json(event));
      return;
    }
    const kube::JsonValue answer = config_api::ToJson(cv_);
    lock.unlock();
    done(Json(answer));
  }
  void Answer() {  // under mu_
    for (auto& w : watches_) w.respond(Json(Event()));
    watches_.clear();
  }

  std::mutex mu_;
  config_api::ClusterVersion cv_;
  std::vector<Watch> watches_;
  std::unique_ptr<http_server::HttpServer> server_;
  uint16_t port_ = 0;
};

TEST(OperatorAgentRestartTest, TheWatchReconnectsToTheSuccessorAndTheFinishedControlPlaneIsSeenAtOnce) {
  testing::TempDir dir;
  env::ManualClock clock;
  AgentStandIn agent;
  http::LongPolls watches;
  testing::WriteFile(dir.path() / "configs" / "c1.yaml",
                     "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nmetadata:\n"
                     "  name: managed-upgrade-config\n  labels: {cluster: c1}\nspec:\n  type: OSD\n"
                     "  upgradeAt: \"" + FormatTime(clock.Now() - 1min) + "\"\n  PDBForceDrainTimeout: 60\n"
                     "  desired:\n    version: \"4.1.1\"\n    channel: stable-4.1\n");
  testing::WriteFile(dir.path() / "fleet.yaml", "clusters:\n- name: c1\n  agent: \"" + agent.url() + "\"\n");
  testing::WriteFile(dir.path() / "operator.yaml", "");
  OperatorOptions options;
  options.config_path = (dir.path() / "operator.yaml").string();
  options.fleet_path = (dir.path() / "fleet.yaml").string();
  options.state_dir = (dir.path() / "state").string();
  options.configs_dir = (dir.path() / "configs").string();
  options.clock = &clock;
  options.make_ports = [&](const FleetCluster& cluster, const OperatorConfig&) {
    ClusterPortSet ports;
    ports.agent = std::make_unique<HttpUpdateAgent>(AgentEndpoint{cluster.agent_url, "", "", 10s, &watches});
    return ports;
  };
  auto opened = UpgradeOperator::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  std::unique_ptr<UpgradeOperator> op = std::move(*opened);
  auto phase = [&] {
    auto config = op->Get("c1");
    const kube::JsonValue* status = config ? FindMember(*config, "status") : nullptr;
    const kube::JsonValue* history = status ? FindMember(*status, "history") : nullptr;
    return history && history->is_array() && !ItemsOf(*history).empty() ? TextOf(*FindMember(ItemsOf(*history)[0], "phase")) : "";
  };
  // Commanded, and watched from what the pass after the command read.
  ASSERT_TRUE(testing::WaitFor([&] {
    op->RunOnce();
    return agent.Commanded() && agent.Watching() == 1;
  }, 60s));
  const auto before = clock.Steady();
  agent.Stop();
  agent.Complete();
  agent.Restart();
  const auto back = std::chrono::steady_clock::now();
  EXPECT_TRUE(testing::WaitFor([&] {
    op->RunOnce();
    return phase() == "Upgraded";
  }, 60s)) << kube::WriteJson(op->List());
  std::printf("upgraded %lld ms after the successor listened\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - back).count()));
  EXPECT_EQ(clock.Steady(), before);  // never an interval's pass
  op.reset();  // before the watches it uses
}

}  // namespace
}  // namespace cincinnati::upgrade
