// The upgrade operator end to end on real processes on 127.0.0.1: the Debian
// docker-registry with signed releases 4.1.0 and 4.1.1, `cincinnati serve` scraping it,
// agents with their components (ingress, and machine-config with a pool of machines), a
// real Prometheus whose critical alert the test turns on and off through a metric it
// serves, a real Alertmanager for the maintenance windows, a webhook receiver, and the
// `cincinnati upgrade-operator` process.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "agent/json_value.h"
#include "gpg_util.h"
#include "registry_util.h"
#include "server/http_server.h"
#include "service_util.h"

namespace cincinnati::upgrade {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using agent::JsonValue;
using testing::ChildProcess;
using testing::Get;
using testing::ServiceProcess;
using testing::TempDir;
using testing::WaitFor;
using testing::WriteFile;

constexpr char kConfigs[] = "/apis/upgrade.managed.openshift.io/v1alpha1/upgradeconfigs";

JsonValue Json(const std::string& text) {
  auto v = agent::ParseJson(text);
  return v.ok() ? *v : JsonValue();
}

const JsonValue& At(const JsonValue& v, std::initializer_list<std::string_view> path) {
  static const JsonValue kNull;
  const JsonValue* at = &v;
  for (auto key : path) {
    at = at->Find(key);
    if (!at) return kNull;
  }
  return *at;
}

std::string Rfc3339(std::chrono::system_clock::time_point t) {
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
    auto port = server_.Listen("127.0.0.1", 0, [this](const server::Request&) {
      return server::Response::Text(200, "# TYPE test_alert_trigger gauge\ntest_alert_trigger " + std::to_string(value_.load()) + "\n");
    });
    port_ = port.ok() ? *port : 0;
    server_.Start();
  }
  ~MetricExporter() { server_.Shutdown(std::chrono::milliseconds(100)); }
  void Set(int v) { value_ = v; }
  std::string host_port() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  server::HttpServer server_;
  std::atomic<int> value_{0};
  uint16_t port_ = 0;
};

// Receives the operator's webhooks.
class WebhookReceiver {
 public:
  WebhookReceiver() {
    auto port = server_.Listen("127.0.0.1", 0, [this](const server::Request& r) {
      std::lock_guard lock(mu_);
      bodies_.push_back(Json(r.body));
      return server::Response::Text(200, "ok\n");
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
    for (const auto& b : bodies_) n += At(b, {"cluster"}).text() == cluster && At(b, {"event"}).text() == event;
    return n;
  }
  std::vector<std::string> Events(const std::string& cluster) {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& b : bodies_) {
      if (At(b, {"cluster"}).text() == cluster) out.push_back(At(b, {"event"}).text());
    }
    return out;
  }

 private:
  server::HttpServer server_;
  std::mutex mu_;
  std::vector<JsonValue> bodies_;
  uint16_t port_ = 0;
};


// An upgrade-policy service with OCM's paths (OCM itself cannot run here): one cluster,
// one policy; it records every state the operator sets.
class PolicyServiceStandIn {
 public:
  PolicyServiceStandIn(std::string external_id, std::string version, std::string next_run)
      : external_id_(std::move(external_id)), version_(std::move(version)), next_run_(std::move(next_run)) {
    auto port = server_.Listen("127.0.0.1", 0, [this](const server::Request& r) { return Answer(r); });
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
  server::Response Answer(const server::Request& r) {
    std::lock_guard lock(mu_);
    const std::string clusters = "/api/clusters_mgmt/v1/clusters";
    const std::string policy = clusters + "/c-1/upgrade_policies/p-1/state";
    if (r.path == clusters) {
      const bool match = r.target.find(external_id_) != std::string::npos;
      return server::Response::Text(200, match ? R"({"items":[{"id":"c-1","version":{"channel_group":"stable"},"node_drain_grace_period":{"value":30,"unit":"minutes"}}]})"
                                               : R"({"items":[]})");
    }
    if (r.path == clusters + "/c-1/upgrade_policies") {
      return server::Response::Text(200, R"({"items":[{"id":"p-1","version":")" + version_ + R"(","next_run":")" + next_run_ + R"("}]})");
    }
    if (r.path == policy && r.method == "GET") {
      return server::Response::Text(200, agent::WriteJson(JsonValue::Object({{"value", JsonValue::String(state_)},
                                                                               {"description", JsonValue::String(description_)}})));
    }
    if (r.path == policy && r.method == "PATCH") {
      JsonValue body = Json(r.body);
      state_ = At(body, {"value"}).text();
      description_ = At(body, {"description"}).text();
      states_.push_back(state_);
      return server::Response::Text(200, r.body);
    }
    return server::Response::Text(404, R"({"kind":"Error","reason":"not found"})");
  }

  server::HttpServer server_;
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

  // Waits until the cluster offers 4.1.1 and its components registered.
  void WaitUntilOffered(Cluster& c) {
    ASSERT_TRUE(WaitFor([&] {
      JsonValue cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
      const JsonValue& updates = At(cv, {"status", "availableUpdates"});
      JsonValue operators = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusteroperators")).body);
      return updates.is_array() && !updates.items().empty() && At(operators, {"items"}).items().size() == 2;
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
    std::string fleet = "clusters:\n";
    for (const auto& c : clusters_) {
      fleet += "- name: " + c->name + "\n  agent: \"" + c->agent->url("") + "\"\n";
      if (!c->wave.empty()) fleet += "  labels: {wave: " + c->wave + "}\n";
    }
    WriteFile(dir_ / "fleet.yaml", fleet);
    WriteFile(dir_ / "operator.yaml",
              "prometheus: {url: \"" + prometheus_url() + "\"}\nalertmanager: {url: \"" + alertmanager_url() +
                  "\"}\nmaintenance:\n  controlPlaneTime: 90\n  ignoredAlerts: {controlPlaneCriticals: [etcdMembersDown]}\n"
                  "notifications: {webhooks: [{url: \"" + receiver_.url() + "\"}]}\n" + extra_config);
    std::vector<std::string> args = {"--fleet", (dir_ / "fleet.yaml").string(), "--config", (dir_ / "operator.yaml").string(),
                                     "--state-dir", (dir_ / "operator").string(), "--port", "0"};
    if (extra_config.find("source: OCM") == std::string::npos) args.insert(args.end(), {"--configs", configs_.path().string()});
    if (std::find(extra_args.begin(), extra_args.end(), "--interval") == extra_args.end()) args.insert(args.end(), {"--interval", "1"});
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    operator_ = std::make_unique<ServiceProcess>("upgrade-operator", args);
    ASSERT_TRUE(operator_->running()) << operator_->log();
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
    return history.is_array() && !history.items().empty() ? At(history.items()[0], {"phase"}).text() : "";
  }
  std::string ConditionMessage(const std::string& cluster, const std::string& type) {
    const JsonValue config = Config(cluster);
    const JsonValue& history = At(config, {"status", "history"});
    if (!history.is_array() || history.items().empty()) return "";
    for (const auto& c : At(history.items()[0], {"conditions"}).items()) {
      if (At(c, {"type"}).text() == type) return At(c, {"message"}).text();
    }
    return "";
  }
  std::vector<JsonValue> Silences() {
    JsonValue list = Json(Get(alertmanager_url() + "/api/v2/silences").body);
    return list.is_array() ? list.items() : std::vector<JsonValue>{};
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
  std::string last_extra_config_;
  std::vector<std::string> last_extra_args_;
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
TEST_F(OperatorE2ETest, AScheduledUpgradeWaitsForItsTimeAndForTheAlertToClear) {
  Cluster& c = AddCluster("prod-1");
  WaitUntilOffered(c);
  Alert(true);
  // Whole seconds, as upgradeAt is written.
  const auto at = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now() + 6s);
  WriteUpgradeConfig("prod-1", "4.1.1", at);
  StartOperator();
  ASSERT_TRUE(WaitFor([&] { return Phase("prod-1") == "Pending"; })) << operator_->log();
  EXPECT_LT(std::chrono::system_clock::now(), at);

  ASSERT_TRUE(WaitFor([&] {
    return ConditionMessage("prod-1", "ClusterHealthyBeforeUpgrade") == "critical alert(s) firing: TestCriticalAlert";
  }, 30s)) << agent::WriteJson(Config("prod-1"), 2) << operator_->log();
  EXPECT_GE(std::chrono::system_clock::now(), at);
  EXPECT_EQ(Phase("prod-1"), "Upgrading");
  JsonValue cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  EXPECT_TRUE(At(cv, {"spec", "desiredUpdate"}).is_null()) << agent::WriteJson(cv, 2);
  EXPECT_EQ(Metric(R"(upgradeoperator_healthcheck_failed{upgradeconfig_name="prod-1",state="Upgrading",version="4.1.0",reason="critical_alerts_firing"})"), 1);
  EXPECT_EQ(receiver_.Count("prod-1", "control_plane_started"), 0);

  Alert(false);
  bool saw_window = false;
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& s : Silences()) {
      saw_window |= At(s, {"comment"}).text() == "Silence for OSD control plane upgrade to version 4.1.1" &&
                    At(s, {"status", "state"}).text() == "active";
    }
    return Phase("prod-1") == "Upgraded";
  }, 90s)) << agent::WriteJson(Config("prod-1"), 2) << operator_->log();
  EXPECT_TRUE(saw_window) << "the control plane's silence was never seen active";

  const JsonValue config = Config("prod-1");
  const JsonValue& entry = At(config, {"status", "history"}).items()[0];
  EXPECT_EQ(At(entry, {"version"}).text(), "4.1.1");
  EXPECT_EQ(At(entry, {"precedingVersion"}).text(), "4.1.0");
  EXPECT_FALSE(At(entry, {"completeTime"}).text().empty());
  const auto& conditions = At(entry, {"conditions"}).items();
  ASSERT_EQ(conditions.size(), std::size(kOsdConditions)) << agent::WriteJson(entry, 2);
  for (size_t i = 0; i < conditions.size(); ++i) {
    // Newest-added first: the last step's condition leads.
    EXPECT_EQ(At(conditions[i], {"type"}).text(), kOsdConditions[std::size(kOsdConditions) - 1 - i]);
    EXPECT_EQ(At(conditions[i], {"status"}).text(), "True") << At(conditions[i], {"type"}).text();
  }
  cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  EXPECT_EQ(At(At(cv, {"status", "history"}).items()[0], {"state"}).text(), "Completed");
  EXPECT_EQ(At(At(cv, {"status", "history"}).items()[0], {"version"}).text(), "4.1.1");

  int control_plane = 0, criticals = 0;
  for (const auto& s : Silences()) {
    const std::string comment = At(s, {"comment"}).text();
    control_plane += comment == "Silence for OSD control plane upgrade to version 4.1.1";
    criticals += comment == "Silence for critical alerts during OSD control plane upgrade to version 4.1.1";
    if (comment.find("4.1.1") != std::string::npos) EXPECT_EQ(At(s, {"status", "state"}).text(), "expired") << comment;
    EXPECT_EQ(At(s, {"createdBy"}).text(), "managed-upgrade-operator");
  }
  EXPECT_EQ(control_plane, 1);
  EXPECT_EQ(criticals, 1);
  // The operator's own gauges live in its memory: read them before the restart.
  EXPECT_EQ(Metric(R"(upgradeoperator_upgradeconfig_validation_failed{upgradeconfig_name="prod-1"})"), 0);
  RestartOperatorAndWaitForAPass("prod-1");  // another pass: nothing is sent again
  for (const char* event : kOnceEach) EXPECT_EQ(receiver_.Count("prod-1", event), 1) << event;
  // The reference's collector gauges, from the config.
  EXPECT_GT(Metric(R"(managed_upgrade_condition_notification_complete_timestamp{upgradeconfig_name="prod-1",version="4.1.0",desired_version="4.1.1",condition="True"})"), 0);
  EXPECT_EQ(Metric(R"(managed_upgrade_upgrade_pdb_timeout_minutes{upgradeconfig_name="prod-1",version="4.1.0",desired_version="4.1.1"})"), 60);
  EXPECT_GT(Metric(R"(managed_upgrade_upgrade_complete_timestamp{upgradeconfig_name="prod-1",version="4.1.0",desired_version="4.1.1",phase="Upgraded"})"), 0);

  auto listed = testing::RunCincinnati("upgrades list --operator " + operator_->url(""));
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("prod-1"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("Upgraded"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("CompletedNotificationSent"), std::string::npos) << listed.out;
  auto status = testing::RunCincinnati("upgrades status prod-1 --operator " + operator_->url(""));
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("ClusterHealthyBeforeUpgrade"), std::string::npos) << status.out;
}

// A target the cluster does not offer, or one older than the current version, fails
// validation with the reference's message and the validation metric; nothing starts.
TEST_F(OperatorE2ETest, ATargetNotOfferedOrOlderFailsValidation) {
  Cluster& c = AddCluster("prod-1");
  WaitUntilOffered(c);
  WriteUpgradeConfig("prod-1", "4.1.5", std::chrono::system_clock::now());
  StartOperator();
  const std::string metric = R"(upgradeoperator_upgradeconfig_validation_failed{upgradeconfig_name="prod-1"})";
  ASSERT_TRUE(WaitFor([&] { return Metric(metric) == 1; })) << operator_->log();
  EXPECT_EQ(Phase("prod-1"), "Pending");
  // The metric is set before the line is logged: wait for the line too.
  EXPECT_TRUE(WaitFor([&] {
    return operator_->log().find("version 4.1.5 not found in clusterversion available or conditional updates") !=
           std::string::npos;
  })) << operator_->log();
  auto status = testing::RunCincinnati("upgrades status prod-1 --operator " + operator_->url(""));
  EXPECT_NE(status.out.find("version 4.1.5 not found in clusterversion available or conditional updates"), std::string::npos)
      << status.out;
  EXPECT_TRUE(WaitFor([&] { return receiver_.Count("prod-1", "validation_failed") == 1; }));

  WriteUpgradeConfig("prod-1", "4.0.9", std::chrono::system_clock::now());  // replaces the config: it never started
  ASSERT_TRUE(WaitFor([&] {
    const JsonValue config = Config("prod-1");
    return At(config, {"metadata", "annotations", "upgrade.cincinnati.openshift.io/waiting-for"}).text() ==
           "downgrades to desired version 4.0.9 from 4.1.0 are unsupported";
  })) << agent::WriteJson(Config("prod-1"), 2);
  EXPECT_EQ(Metric(metric), 1);
  JsonValue cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  EXPECT_TRUE(At(cv, {"spec", "desiredUpdate"}).is_null());
}

// An upgrade that could not start within upgradeAt + the upgrade window fails, and says so
// once.
TEST_F(OperatorE2ETest, AStartWindowBreachFailsTheUpgradeAndNotifiesOnce) {
  Cluster& c = AddCluster("prod-1");
  WaitUntilOffered(c);
  WriteUpgradeConfig("prod-1", "4.1.1", std::chrono::system_clock::now() - 3h);
  StartOperator();
  ASSERT_TRUE(WaitFor([&] { return Phase("prod-1") == "Failed"; })) << agent::WriteJson(Config("prod-1"), 2) << operator_->log();
  EXPECT_EQ(Metric(R"(upgradeoperator_upgrade_window_breached{upgradeconfig_name="prod-1"})"), 1);
  RestartOperatorAndWaitForAPass("prod-1");
  EXPECT_EQ(receiver_.Count("prod-1", "failed"), 1);
  EXPECT_EQ(receiver_.Count("prod-1", "started"), 0);
  JsonValue cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  EXPECT_TRUE(At(cv, {"spec", "desiredUpdate"}).is_null());
}

// kill -9 of the operator at random moments of an upgrade: every restart resumes at the
// first unfinished step, and no side effect happens twice (silence, webhook, command).
TEST_F(OperatorE2ETest, KillNineAtAnyStepRepeatsNoSideEffect) {
  Cluster& c = AddCluster("prod-1");
  WaitUntilOffered(c);
  WriteUpgradeConfig("prod-1", "4.1.1", std::chrono::system_clock::now());
  std::mt19937 rng(1515);
  StartOperator();
  int kills = 0;
  for (int round = 0; round < 12 && Phase("prod-1") != "Upgraded"; ++round, ++kills) {
    // Short enough that an upgrade under sanitizers (slower start, same step times) still
    // sees several kills before it ends.
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 180));
    operator_->Kill();
    StartOperator();
  }
  ASSERT_TRUE(WaitFor([&] { return Phase("prod-1") == "Upgraded"; }, 90s)) << agent::WriteJson(Config("prod-1"), 2) << operator_->log();
  EXPECT_GE(kills, 2) << "the upgrade ended before the operator was killed a few times";
  RestartOperatorAndWaitForAPass("prod-1");
  for (const char* event : kOnceEach) EXPECT_LE(receiver_.Count("prod-1", event), 1) << event;
  EXPECT_EQ(receiver_.Count("prod-1", "completed"), 1);
  int control_plane = 0;
  for (const auto& s : Silences()) control_plane += At(s, {"comment"}).text() == "Silence for OSD control plane upgrade to version 4.1.1";
  EXPECT_EQ(control_plane, 1);
  JsonValue cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  EXPECT_EQ(At(cv, {"status", "history"}).items().size(), 2u) << agent::WriteJson(cv, 2);
}

// The operator's clock can start anywhere and run faster than real time: an upgrade
// scheduled an hour ahead starts within seconds, at its upgradeAt in operator time.
TEST_F(OperatorE2ETest, ATimeScaleRunsHoursOfScheduleInSeconds) {
  Cluster& c = AddCluster("prod-1");
  WaitUntilOffered(c);
  const auto start = std::chrono::system_clock::now() - 24h;  // yesterday, in operator time
  WriteUpgradeConfig("prod-1", "4.1.1", start + 1h);
  StartOperator("", {"--testing.now", Rfc3339(start), "--testing.time-scale", "1200"});
  ASSERT_TRUE(WaitFor([&] { return Phase("prod-1") == "Pending"; })) << operator_->log();
  const auto real_start = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor([&] { return Phase("prod-1") == "Upgraded"; }, 60s)) << agent::WriteJson(Config("prod-1"), 2) << operator_->log();
  EXPECT_LT(std::chrono::steady_clock::now() - real_start, 40s);
  const JsonValue config = Config("prod-1");
  const std::string started = At(At(config, {"status", "history"}).items()[0], {"startTime"}).text();
  EXPECT_GE(started, Rfc3339(start + 1h)) << started;   // not before upgradeAt ...
  EXPECT_LT(started, Rfc3339(start + 2h)) << started;   // ... and in operator time, not today
}

// The remote policy source: the operator finds the cluster by its ID, makes its config
// from the policy (channel inferred, upgradeAt = next_run, the drain grace period), runs
// it, and moves the policy's state along the reference's transitions.
TEST_F(OperatorE2ETest, ARemotePolicyDrivesTheUpgradeAndHearsHowItWent) {
  Cluster& c = AddCluster("prod-1");
  WaitUntilOffered(c);
  JsonValue cv = Json(Get(c.agent->url("/apis/config.openshift.io/v1/clusterversions/version")).body);
  PolicyServiceStandIn ocm(At(cv, {"spec", "clusterID"}).text(), "4.1.1", Rfc3339(std::chrono::system_clock::now() + 60s));
  // 30 operator seconds a real one: the source is read every 2 s, the policy runs in 2 s.
  StartOperator("configManager: {source: OCM, ocmBaseUrl: \"" + ocm.url() + "\", watchInterval: 1}\n",
                {"--testing.time-scale", "30", "--interval", "30"});
  ASSERT_TRUE(WaitFor([&] { return Phase("prod-1") != ""; })) << operator_->log();
  const JsonValue config = Config("prod-1");
  EXPECT_EQ(At(config, {"spec", "desired", "channel"}).text(), "stable-4.1");
  EXPECT_EQ(At(config, {"spec", "PDBForceDrainTimeout"}).text(), "30");
  EXPECT_TRUE(At(config, {"spec", "capacityReservation"}).bool_value());
  ASSERT_TRUE(WaitFor([&] { return Phase("prod-1") == "Upgraded"; }, 60s)) << agent::WriteJson(Config("prod-1"), 2) << operator_->log();
  // Started; then a skipped capacity step (no hook) reads as delayed; then completed.
  ASSERT_TRUE(WaitFor([&] { return !ocm.states().empty() && ocm.states().back() == "completed"; })) << operator_->log();
  EXPECT_EQ(ocm.states(), (std::vector<std::string>{"started", "delayed", "completed"}));
  // The completed policy asks for nothing more: the config goes at the next sync.
  ASSERT_TRUE(WaitFor([&] { return Get(operator_->url(std::string(kConfigs) + "/prod-1")).status == 404; }, 30s)) << operator_->log();
}

// A fleet of three with a cap of one upgrade at a time and waves canary, main: no two
// clusters upgrade at once and the canary goes first.
TEST_F(OperatorE2ETest, TheFleetCapAndWavesOrderTheUpgrades) {
  for (const auto& [name, wave] : std::vector<std::pair<std::string, std::string>>{{"main-a", "main"}, {"canary", "canary"}, {"main-b", "main"}}) {
    AddCluster(name).wave = wave;
  }
  for (auto& c : clusters_) WaitUntilOffered(*c);
  for (auto& c : clusters_) WriteUpgradeConfig(c->name, "4.1.1", std::chrono::system_clock::now());
  StartOperator("fleet: {maxParallel: 1, waveLabel: wave, waves: [canary, main]}\n");
  std::vector<std::string> order;
  int most_at_once = 0;
  ASSERT_TRUE(WaitFor([&] {
    JsonValue list = Json(Get(operator_->url(kConfigs)).body);
    int upgrading = 0, upgraded = 0;
    for (const auto& item : At(list, {"items"}).items()) {
      const std::string name = At(item, {"metadata", "labels", "cluster"}).text();
      const JsonValue& history = At(item, {"status", "history"});
      const std::string phase = history.is_array() && !history.items().empty() ? At(history.items()[0], {"phase"}).text() : "";
      if (phase == "Upgrading" || phase == "Upgraded") {
        if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
      }
      upgrading += phase == "Upgrading";
      upgraded += phase == "Upgraded";
    }
    most_at_once = std::max(most_at_once, upgrading);
    return upgraded == 3;
  }, 150s)) << agent::WriteJson(Json(Get(operator_->url(kConfigs)).body), 2) << operator_->log();
  EXPECT_EQ(most_at_once, 1);
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], "canary");
}

// Two failed upgrades to one version pause the rest of the fleet's upgrades to it, until
// an administrator resumes.
TEST_F(OperatorE2ETest, TwoFailuresPauseTheRestUntilResumed) {
  for (const char* name : {"late-1", "late-2", "on-time"}) AddCluster(name);
  for (auto& c : clusters_) WaitUntilOffered(*c);
  WriteUpgradeConfig("late-1", "4.1.1", std::chrono::system_clock::now() - 3h);
  WriteUpgradeConfig("late-2", "4.1.1", std::chrono::system_clock::now() - 3h);
  StartOperator("fleet: {failureThreshold: 2}\n");
  ASSERT_TRUE(WaitFor([&] { return Phase("late-1") == "Failed" && Phase("late-2") == "Failed"; })) << operator_->log();
  ASSERT_TRUE(WaitFor([&] { return At(Json(Get(operator_->url("/apis/upgrade.cincinnati.openshift.io/v1/fleet")).body), {"paused"}).bool_value(); }))
      << operator_->log();
  WriteUpgradeConfig("on-time", "4.1.1", std::chrono::system_clock::now());
  ASSERT_TRUE(WaitFor([&] {
    const JsonValue config = Config("on-time");
    return At(config, {"metadata", "annotations", "upgrade.cincinnati.openshift.io/waiting-for"}).text().find("the fleet is paused") == 0;
  })) << agent::WriteJson(Config("on-time"), 2);
  WaitForPasses("on-time", 2);
  EXPECT_EQ(Phase("on-time"), "Pending");
  auto resumed = testing::RunCincinnati("upgrades resume --operator " + operator_->url(""));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("not paused"), std::string::npos) << resumed.out;
  ASSERT_TRUE(WaitFor([&] { return Phase("on-time") == "Upgraded"; }, 90s)) << agent::WriteJson(Config("on-time"), 2) << operator_->log();
}

}  // namespace
}  // namespace cincinnati::upgrade
