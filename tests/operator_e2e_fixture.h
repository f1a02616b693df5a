// The fixture of the upgrade operator's end-to-end tests (operator_e2e_test.cc: one
// cluster; operator_fleet_e2e_test.cc: a fleet), on real processes on 127.0.0.1: the Debian
// docker-registry with signed releases 4.1.0 and 4.1.1, `cincinnati serve` scraping it,
// agents with their components (ingress, and machine-config with a pool of machines), a
// real Prometheus whose critical alert the test turns on and off through a metric it
// serves, a real Alertmanager for the maintenance windows, a webhook receiver, and the
// `cincinnati upgrade-operator` process.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "cluster_version_util.h"
#include "gpg_util.h"
#include "kube/json_value.h"
#include "registry_util.h"
#include "http_server/http_server.h"
#include "service_util.h"

namespace cincinnati::upgrade::e2e {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using kube::JsonValue;
using kube::JsonObject;
using kube::JsonArray;
using kube::TextOf;
using kube::ItemsOf;
using testing::At;
using testing::Json;
using testing::ChildProcess;
using testing::Get;
using testing::ServiceProcess;
using testing::TempDir;
using testing::WaitFor;
using testing::WriteFile;

inline constexpr char kConfigs[] = "/apis/upgrade.managed.openshift.io/v1alpha1/upgradeconfigs";

inline std::string Rfc3339(std::chrono::system_clock::time_point t) {
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A /metrics endpoint whose one gauge the test sets: Prometheus scrapes it, and the alert
// rule fires while it is above 0.
class MetricExporter {
 public:
  MetricExporter() {
    auto port = server_.Listen("127.0.0.1", 0, [this](const http_server::Request&) {
      return http_server::Response::Text(200, "# TYPE test_alert_trigger gauge\ntest_alert_trigger " + std::to_string(value_.load()) + "\n");
    });
    port_ = port.ok() ? *port : 0;
    server_.Start();
  }
  ~MetricExporter() { server_.Shutdown(std::chrono::milliseconds(100)); }
  void Set(int v) { value_ = v; }
  std::string host_port() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  http_server::HttpServer server_;
  std::atomic<int> value_{0};
  uint16_t port_ = 0;
};

// Receives the operator's webhooks.
class WebhookReceiver {
 public:
  WebhookReceiver() {
    auto port = server_.Listen("127.0.0.1", 0, [this](const http_server::Request& r) {
      std::lock_guard lock(mu_);
      bodies_.push_back(Json(r.body));
      return http_server::Response::Text(200, "ok\n");
    });
    port_ = port.ok() ? *port : 0;
    server_.Start();
  }
  ~WebhookReceiver() { server_.Shutdown(std::chrono::milliseconds(100)); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }
  // How many notifications of `event` arrived for `cluster`.
  int Count(const std::string& cluster, const std::string& event) {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& b : bodies_) n += TextOf(At(b, {"cluster"})) == cluster && TextOf(At(b, {"event"})) == event;
    return n;
  }
  std::vector<std::string> Events(const std::string& cluster) {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& b : bodies_) {
      if (TextOf(At(b, {"cluster"})) == cluster) out.push_back(TextOf(At(b, {"event"})));
    }
    return out;
  }

 private:
  http_server::HttpServer server_;
  std::mutex mu_;
  JsonArray bodies_;
  uint16_t port_ = 0;
};


// An upgrade-policy service with OCM's paths (OCM itself cannot run here): one cluster,
// one policy; it records every state the operator sets.
class PolicyServiceStandIn {
 public:
  PolicyServiceStandIn(std::string external_id, std::string version, std::string next_run)
      : external_id_(std::move(external_id)), version_(std::move(version)), next_run_(std::move(next_run)) {
    auto port = server_.Listen("127.0.0.1", 0, [this](const http_server::Request& r) { return Answer(r); });
    port_ = port.ok() ? *port : 0;
    server_.Start();
  }
  ~PolicyServiceStandIn() { server_.Shutdown(std::chrono::milliseconds(100)); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> states() {
    std::lock_guard lock(mu_);
    return states_;
  }

 private:
  http_server::Response Answer(const http_server::Request& r) {
    std::lock_guard lock(mu_);
    const std::string clusters = "/api/clusters_mgmt/v1/clusters";
    const std::string policy = clusters + "/c-1/upgrade_policies/p-1/state";
    if (r.path == clusters) {
      const bool match = r.target.find(external_id_) != std::string::npos;
      return http_server::Response::Text(200, match ? R"({"items":[{"id":"c-1","version":{"channel_group":"stable"},"node_drain_grace_period":{"value":30,"unit":"minutes"}}]})"
                                               : R"({"items":[]})");
    }
    if (r.path == clusters + "/c-1/upgrade_policies") {
      return http_server::Response::Text(200, R"({"items":[{"id":"p-1","version":")" + version_ + R"(","next_run":")" + next_run_ + R"("}]})");
    }
    if (r.path == policy && r.method == "GET") {
      return http_server::Response::Text(200, kube::WriteJson(JsonValue(JsonObject({{"value", JsonValue(state_)},
                                                                               {"description", JsonValue(description_)}}))));
    }
    if (r.path == policy && r.method == "PATCH") {
      JsonValue body = Json(r.body);
      state_ = TextOf(At(body, {"value"}));
      description_ = TextOf(At(body, {"description"}));
      states_.push_back(state_);
      return http_server::Response::Text(200, r.body);
    }
    return http_server::Response::Text(404, R"({"kind":"Error","reason":"not found"})");
  }

  http_server::HttpServer server_;
  std::mutex mu_;
  std::string external_id_, version_, next_run_, state_ = "scheduled", description_;
  std::vector<std::string> states_;
  uint16_t port_ = 0;
};

struct Cluster {
  std::string name;
  std::string wave;
  std::unique_ptr<ServiceProcess> agent;
  std::vector<std::unique_ptr<ChildProcess>> components;
};

class OperatorE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(key_.ok());
    ASSERT_TRUE(registry_.ready()) << registry_.log();
    ASSERT_TRUE(fs::exists("/usr/bin/prometheus-alertmanager")) << "scripts/deps.sh installs prometheus-alertmanager";
    for (const char* name : {"ingress", "machine-config"}) {
      WriteFile(manifests_ / (std::string("0000_50_") + name + "_01-clusteroperator.yaml"),
                std::string("apiVersion: config.openshift.io/v1\nkind: ClusterOperator\nmetadata:\n  name: ") + name +
                    "\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n");
    }
    if (agents_hand_over_) {  // the agent's own manifest: applied first, then the agent hands over to its successor
      WriteFile(manifests_ / "0000_00_cluster-version-operator_01_config.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: agent-config\n  namespace: openshift-cluster-version\n"
                "  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n"
                "data:\n  release: '{{.ReleaseImage}}'\n");
    }
    for (const char* v : {"4.1.0", "4.1.1"}) {
      auto pushed = testing::RunCincinnati(
          std::string("release new --version ") + v + (std::string(v) == "4.1.1" ? " --previous 4.1.0" : "") +
          " --metadata io.openshift.upgrades.graph.release.channels=stable-4.1 --payload-manifests " + manifests_.path().string() +
          " --to " + registry_.url() + "/ocp/release:" + v);
      ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
      const std::string image = pushed.out.substr(0, pushed.out.find('\n'));
      ASSERT_EQ(testing::RunCincinnati("release sign " + image + " --store " + store_.path().string() + " --gnupg-home " + key_.home())
                    .exit_code,
                0);
      if (installed_.empty()) installed_ = "http://" + image;
    }
    WriteFile(graph_data_ / "version", "1.1.0\n");
    WriteFile(graph_data_ / "raw/metadata.json", "{}\n");
    WriteFile(graph_data_ / "channels/stable-4.1.yaml", "name: stable-4.1\nversions:\n- 4.1.0\n- 4.1.1\n");
    fs::create_directories(graph_data_ / "blocked-edges");
    serve_ = std::make_unique<ServiceProcess>("serve", std::vector<std::string>{"--registry", registry_.url(), "--repository", "ocp/release",
                                                                               "--graph-data", graph_data_.path().string()});
    ASSERT_TRUE(WaitFor([&] { return Get(serve_->url("/readyz", "status")).status == 200; }, 30s)) << serve_->log();
    StartMonitoring();
  }

  void StartMonitoring() {
    WriteFile(dir_ / "rules.yml",
              "groups:\n- name: test\n  rules:\n  - alert: TestCriticalAlert\n    expr: test_alert_trigger > 0\n"
              "    labels: {severity: critical, namespace: openshift-monitoring}\n");
    WriteFile(dir_ / "prometheus.yml", "global: {scrape_interval: 1s, evaluation_interval: 1s}\nrule_files: [" +
                                           (dir_ / "rules.yml").string() + "]\nscrape_configs:\n- job_name: test\n"
                                           "  static_configs: [{targets: ['" + exporter_.host_port() + "']}]\n");
    prometheus_port_ = testing::FreePort();
    prometheus_ = std::make_unique<ChildProcess>(std::vector<std::string>{
        "/usr/bin/prometheus", "--config.file=" + (dir_ / "prometheus.yml").string(), "--storage.tsdb.path=" + (dir_ / "tsdb").string(),
        "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_)});
    WriteFile(dir_ / "alertmanager.yml", "route: {receiver: 'null'}\nreceivers: [{name: 'null'}]\n");
    alertmanager_port_ = testing::FreePort();
    alertmanager_ = std::make_unique<ChildProcess>(std::vector<std::string>{
        "/usr/bin/prometheus-alertmanager", "--config.file=" + (dir_ / "alertmanager.yml").string(),
        "--storage.path=" + (dir_ / "am").string(), "--cluster.listen-address=",
        "--web.listen-address=127.0.0.1:" + std::to_string(alertmanager_port_)});
    ASSERT_TRUE(WaitFor([&] { return Get(prometheus_url() + "/-/ready").status == 200; }, 60s)) << prometheus_->log();
    ASSERT_TRUE(WaitFor([&] { return Get(alertmanager_url() + "/-/ready").status == 200; }, 60s)) << alertmanager_->log();
  }

  std::string prometheus_url() const { return "http://127.0.0.1:" + std::to_string(prometheus_port_); }
  std::string alertmanager_url() const { return "http://127.0.0.1:" + std::to_string(alertmanager_port_); }

  // Turns the critical alert on or off and waits until Prometheus agrees.
  void Alert(bool firing) {
    exporter_.Set(firing ? 1 : 0);
    ASSERT_TRUE(WaitFor([&] {
      const std::string body = Get(prometheus_url() + "/api/v1/query?query=ALERTS%7Balertstate%3D%22firing%22%7D").body;
      return (body.find("TestCriticalAlert") != std::string::npos) == firing;
    }, 30s));
  }

  Cluster& AddCluster(const std::string& name) {
    auto c = std::make_unique<Cluster>();
    c->name = name;
    c->agent = std::make_unique<ServiceProcess>(
        "agent", std::vector<std::string>{"--state-dir", (dir_ / ("agent-" + name)).string(), "--release-image", installed_,
                                          "--registry.insecure", registry_.host_port(), "--verification.keys", key_.keys(),
                                          "--verification.stores", "file://" + store_.path().string(), "--upstream",
                                          serve_->url("/api/upgrades_info/graph"), "--channel", "stable-4.1", "--poll-interval", "1",
                                          "--port", "0"});
    EXPECT_TRUE(c->agent->running()) << c->agent->log();
    const std::string api = c->agent->url("");
    c->components.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{
        CINCINNATI_BINARY, "component", "--agent", api, "--name", "ingress", "--version", "4.1.0", "--rollout-seconds", "0.3"}));
    c->components.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{
        CINCINNATI_BINARY, "component", "--agent", api, "--name", "machine-config", "--version", "4.1.0", "--machines", "2",
        "--rollout-seconds", "0.3"}));
    clusters_.push_back(std::move(c));
    return *clusters_.back();
  }

  // An agent's successor after a hand-over runs in its own session: the test started
  // only its predecessor, so the one answering at the agent's address is stopped here.
  void TearDown() override {
    if (!agents_hand_over_) return;
    for (const auto& c : clusters_) {
      const JsonValue progress = Json(Get(c->agent->url("/apis/agent.cincinnati.openshift.io/v1/updateprogress")).body);
      const JsonValue& pid = At(progress, {"agentPid"});
      if (!pid.is_number()) continue;
      const pid_t answering = static_cast<pid_t>(kube::IntegerOf(pid).value_or(0));
      if (answering <= 0 || answering == c->agent->pid()) continue;
      ::kill(answering, SIGTERM);
      WaitFor([&] { return ::kill(answering, 0) != 0; }, 30s);
    }
  }

  // Waits until the cluster offers 4.1.1 and its components registered.
  void WaitUntilOffered(Cluster& c) {
    ASSERT_TRUE(WaitFor([&] {
      JsonValue cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
      const JsonValue& updates = At(cv, {"status", "availableUpdates"});
      JsonValue operators = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusteroperators")).body);
      return updates.is_array() && !ItemsOf(updates).empty() && ItemsOf(At(operators, {"items"})).size() == 2;
    }, 30s)) << c.agent->log();
  }

  void WriteUpgradeConfig(const std::string& cluster, const std::string& version, std::chrono::system_clock::time_point at) {
    WriteFile(configs_ / (cluster + ".yaml"),
              "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nmetadata:\n  name: managed-upgrade-config\n"
              "spec:\n  type: OSD\n  upgradeAt: \"" + Rfc3339(at) + "\"\n  PDBForceDrainTimeout: 60\n  desired:\n    version: \"" +
                  version + "\"\n    channel: stable-4.1\n");
  }

  void StartOperator(const std::string& extra_config = "", std::vector<std::string> extra_args = {}) {
    last_extra_config_ = extra_config;
    last_extra_args_ = extra_args;
    operator_ = std::make_unique<ServiceProcess>("upgrade-operator", OperatorArgs(extra_config, extra_args));
    ASSERT_TRUE(operator_->running()) << operator_->log();
  }

  // Writes the fleet and the settings, and returns the operator's arguments; `state`
  // replaces --state-dir (e.g. --state.postgres URL).
  std::vector<std::string> OperatorArgs(const std::string& extra_config, const std::vector<std::string>& extra_args,
                                        std::vector<std::string> state = {}) {
    std::string fleet = "clusters:\n";
    for (const auto& c : clusters_) {
      fleet += "- name: " + c->name + "\n  agent: \"" + c->agent->url("") + "\"\n";
      if (!c->wave.empty()) fleet += "  labels: {wave: " + c->wave + "}\n";
    }
    WriteFile(dir_ / "fleet.yaml", fleet);
    WriteFile(dir_ / "operator.yaml",
              "prometheus: {url: \"" + prometheus_url() + "\"}\nalertmanager: {url: \"" + alertmanager_url() + "\"" +
                  alertmanager_extra_ + "}\nmaintenance:\n  controlPlaneTime: 90\n  ignoredAlerts: {controlPlaneCriticals: [etcdMembersDown]}\n"
                  "notifications: {webhooks: [{url: \"" + receiver_.url() + "\"}]}\n" + extra_config);
    if (state.empty()) state = {"--state-dir", (dir_ / "operator").string()};
    std::vector<std::string> args = {"--fleet", (dir_ / "fleet.yaml").string(), "--config", (dir_ / "operator.yaml").string(), "--port", "0"};
    args.insert(args.end(), state.begin(), state.end());
    if (extra_config.find("source: OCM") == std::string::npos) args.insert(args.end(), {"--configs", configs_.path().string()});
    if (std::find(extra_args.begin(), extra_args.end(), "--interval") == extra_args.end()) args.insert(args.end(), {"--interval", "1"});
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    return args;
  }

  // Reconcile passes the running operator has made of `cluster` (0 before the first).
  double Passes(const std::string& cluster) {
    return std::max(0.0, Metric(R"(upgradeoperator_reconciles_total{upgradeconfig_name=")" + cluster + R"("})"));
  }
  // Returns once `cluster` has had `n` more passes: proof that whatever a pass would
  // have done again, it had the chance to.
  void WaitForPasses(const std::string& cluster, int n) {
    const double start = Passes(cluster);
    ASSERT_TRUE(WaitFor([&] { return Passes(cluster) >= start + n; }, 60s)) << operator_->log();
  }
  // A finished upgrade is looked at again only after minutes; a restarted operator
  // reconciles every cluster at once, from its persisted state.
  void RestartOperatorAndWaitForAPass(const std::string& cluster) {
    EXPECT_EQ(operator_->Stop(), 0) << operator_->log();
    StartOperator(last_extra_config_, last_extra_args_);
    ASSERT_TRUE(WaitFor([&] { return Passes(cluster) >= 1; }, 60s)) << operator_->log();  // a new process counts from 0
  }

  JsonValue Config(const std::string& cluster) { return Json(Get(operator_->url(std::string(kConfigs) + "/" + cluster)).body); }
  std::string Phase(const std::string& cluster) {
    const JsonValue config = Config(cluster);
    const JsonValue& history = At(config, {"status", "history"});
    return history.is_array() && !ItemsOf(history).empty() ? TextOf(At(ItemsOf(history)[0], {"phase"})) : "";
  }
  std::string ConditionMessage(const std::string& cluster, const std::string& type) {
    const JsonValue config = Config(cluster);
    const JsonValue& history = At(config, {"status", "history"});
    if (!history.is_array() || ItemsOf(history).empty()) return "";
    for (const auto& c : ItemsOf(At(ItemsOf(history)[0], {"conditions"}))) {
      if (TextOf(At(c, {"type"})) == type) return TextOf(At(c, {"message"}));
    }
    return "";
  }
  JsonArray Silences() {
    JsonValue list = Json(Get(alertmanager_url() + "/api/v2/silences").body);
    return list.is_array() ? ItemsOf(list) : JsonArray{};
  }
  double Metric(const std::string& series) { return testing::MetricValue(Get(operator_->url("/metrics")).body, series); }

  testing::Signer key_{"release"};
  testing::LocalRegistry registry_;
  TempDir dir_, manifests_, store_, graph_data_, configs_;
  std::string installed_;
  std::unique_ptr<ServiceProcess> serve_;
  MetricExporter exporter_;
  WebhookReceiver receiver_;
  std::unique_ptr<ChildProcess> prometheus_, alertmanager_;
  int prometheus_port_ = 0, alertmanager_port_ = 0;
  std::vector<std::unique_ptr<Cluster>> clusters_;
  std::unique_ptr<ServiceProcess> operator_;
  std::string alertmanager_extra_;  // more keys of the alertmanager settings, e.g. ", clusterLabel: cluster"
  std::string last_extra_config_;
  std::vector<std::string> last_extra_args_;
  bool agents_hand_over_ = false;  // the releases carry the agent's own manifest (set before SetUp)
};


constexpr const char* kOsdConditions[] = {
    "StartedNotificationSent", "UpgradeDelayedCheck", "IsClusterUpgradable", "ClusterHealthyBeforeUpgrade",
    "ExternalDependenciesAvailable", "ComputeCapacityReserved", "ControlPlaneMaintenanceWindowCreated", "UpgradeCommenced",
    "ControlPlaneUpgraded", "ControlPlaneMaintenanceWindowRemoved", "WorkersMaintenanceWindowCreated", "WorkerNodesUpgraded",
    "ComputeCapacityRemoved", "WorkersMaintenanceWindowRemoved", "ClusterHealthyAfterUpgrade", "PostUpgradeTasksCompleted",
    "CompletedNotificationSent"};
constexpr const char* kOnceEach[] = {"started", "control_plane_started", "control_plane_finished", "workers_finished", "completed"};

// upgradeAt in the future keeps the cluster Pending; at the time, a firing critical alert
// holds the pre-upgrade health check (and nothing is commanded); once it clears, every
// step runs in order, the maintenance window exists during the upgrade and is expired
// after, and each webhook arrives once.

}  // namespace cincinnati::upgrade::e2e
