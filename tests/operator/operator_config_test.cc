// The upgrade operator's documents: UpgradeConfig (the reference's schema verbatim), the
// operator's settings, the fleet file, and the SQLite state that survives restarts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <set>
#include <vector>

#include "operator/operator_api.h"
#include "operator/operator_config.h"
#include "operator/state_store.h"
#include "operator/upgrade_config.h"
#include "operator/upgrade_operator.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati::upgrade {
namespace {

using testing::TempDir;

// A fully populated OSD UpgradeConfig as the reference writes one, trimmed.
constexpr char kExample[] = R"(apiVersion: upgrade.managed.openshift.io/v1alpha1
kind: UpgradeConfig
metadata: {name: managed-upgrade-config, namespace: openshift-managed-upgrade-operator}
spec:
  type: OSD
  upgradeAt: "2024-06-20T12:00:00Z"
  PDBForceDrainTimeout: 60
  capacityReservation: true
  desired: {version: "4.14.12", channel: "stable-4.14"}
status:
  history:
  - version: "4.14.12"
    precedingVersion: "4.14.8"
    phase: Upgraded
    startTime: "2024-06-20T12:00:41Z"
    workerStartTime: "2024-06-20T12:58:03Z"
    workerCompleteTime: "2024-06-20T13:41:17Z"
    completeTime: "2024-06-20T13:47:55Z"
    conditions:
    - {type: CompletedNotificationSent, status: "True", reason: CompletedNotificationSent done,
       message: CompletedNotificationSent is completed, startTime: "2024-06-20T13:47:54Z",
       completeTime: "2024-06-20T13:47:55Z", lastProbeTime: "2024-06-20T13:47:55Z",
       lastTransitionTime: "2024-06-20T13:47:55Z"}
    - {type: StartedNotificationSent, status: "True", reason: StartedNotificationSent done,
       message: StartedNotificationSent is completed, startTime: "2024-06-20T12:00:41Z",
       completeTime: "2024-06-20T12:00:42Z"}
)";

TEST(UpgradeConfigTest, TheReferenceExampleReadsAndWritesBackTheSame) {
  auto config = ParseUpgradeConfigYaml(kExample, "example.yaml");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->spec.type, UpgradeType::kOSD);
  EXPECT_EQ(config->spec.upgrade_at, "2024-06-20T12:00:00Z");
  EXPECT_EQ(config->spec.pdb_force_drain_timeout, 60);
  EXPECT_TRUE(config->spec.capacity_reservation);
  EXPECT_EQ(config->spec.desired.version, "4.14.12");
  EXPECT_EQ(config->spec.desired.channel, "stable-4.14");
  ASSERT_EQ(config->history.size(), 1u);
  const UpgradeHistory& h = config->history[0];
  EXPECT_EQ(h.phase, Phase::kUpgraded);
  EXPECT_EQ(h.preceding_version, "4.14.8");
  EXPECT_EQ(h.worker_complete_time, "2024-06-20T13:41:17Z");
  ASSERT_EQ(h.conditions.size(), 2u);
  EXPECT_EQ(h.conditions[0].type, "CompletedNotificationSent");
  EXPECT_EQ(h.conditions[1].complete_time, "2024-06-20T12:00:42Z");

  auto again = UpgradeConfigFromJson(ToJson(*config), "round trip");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, *config);
  const std::string json = kube::WriteJson(ToJson(*config));
  EXPECT_NE(json.find(R"("PDBForceDrainTimeout":60)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("apiVersion":"upgrade.managed.openshift.io/v1alpha1")"), std::string::npos) << json;
}

TEST(UpgradeConfigTest, BadDocumentsNameTheFileAndTheField) {
  struct Case {
    std::string yaml, expected;
  };
  const std::string spec_head = "spec:\n  upgradeAt: '2024-06-20T12:00:00Z'\n  PDBForceDrainTimeout: 60\n  desired: {version: 4.14.12}\n";
  std::vector<Case> cases = {
      {"spec: {type: GKE, upgradeAt: x, PDBForceDrainTimeout: 1, desired: {}}", "spec.type: Unsupported value: \"GKE\""},
      {spec_head, "spec.type: Required value"},
      {"spec: {type: OSD, PDBForceDrainTimeout: 1, desired: {}}", "spec.upgradeAt: Required value"},
      {"spec: {type: OSD, upgradeAt: x, PDBForceDrainTimeout: -1, desired: {}}", "spec.PDBForceDrainTimeout: Invalid value: -1"},
      {"spec: {type: OSD, upgradeAt: x, PDBForceDrainTimeout: '60', desired: {}}", "spec.PDBForceDrainTimeout: must be a 32-bit integer"},
      {"spec: {type: OSD, upgradeAt: x, PDBForceDrainTimeout: 1}", "spec.desired: Required value"},
      {"spec: {type: OSD, upgradeAt: x, PDBForceDrainTimeout: 1, desired: {version: 4}}", "spec.desired.version: must be a string"},
      {"kind: Other\nspec: {}", "kind: must be \"UpgradeConfig\""},
      {"spec: {type: OSD, upgradeAt: x, PDBForceDrainTimeout: 1, desired: {}}\nstatus: {history: [{phase: Done}]}",
       "status.history[0].phase: Unsupported value: \"Done\""},
      {"spec: {type: OSD, upgradeAt: x, PDBForceDrainTimeout: 1, desired: {}}\nstatus: {history: [{phase: New, conditions: [{type: A}]}]}",
       "status.history[0].conditions[0].status: Required value"},
      {"- a list", "the document must be an object"},
      {"spec: {type: OSD\n", "configs/c1.yaml"},
      // A typo in a key is named, not dropped or read as a missing key.
      {"spec: {type: OSD, upgradeAt: x, PDBForceDrainTimeout: 1, capacityReservaton: true, desired: {}}",
       "spec.capacityReservaton: unknown field (known fields: type, upgradeAt, PDBForceDrainTimeout, "
       "capacityReservation, desired)"},
      {"spec: {type: OSD, upgradAt: x, PDBForceDrainTimeout: 1, desired: {}}", "spec.upgradAt: unknown field"},
      {"spec: {type: OSD, upgradeAt: x, PDBForceDrainTimeout: 1, desired: {verison: 4.1.1}}",
       "spec.desired.verison: unknown field (known fields: version, channel, image)"},
      {"specs: {}\nspec: {type: OSD, upgradeAt: x, PDBForceDrainTimeout: 1, desired: {}}", "specs: unknown field"},
  };
  for (const auto& c : cases) {
    auto got = ParseUpgradeConfigYaml(c.yaml, "configs/c1.yaml");
    ASSERT_FALSE(got.ok()) << c.yaml;
    EXPECT_NE(got.status().message().find(c.expected), std::string::npos) << got.status().message();
    EXPECT_NE(got.status().message().find("configs/c1.yaml"), std::string::npos) << got.status().message();
  }
}

// A copy of a cluster's object (kubectl get -o yaml) reads: metadata and status may hold
// anything; a stored or exchanged document ignores fields this build does not know.
TEST(UpgradeConfigTest, MetadataAndStatusAreOpenAndStoredDocumentsAreReadLeniently) {
  auto copied = ParseUpgradeConfigYaml(
      "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\n"
      "metadata: {name: c1, namespace: openshift-managed-upgrade-operator, uid: x, resourceVersion: '7', "
      "creationTimestamp: '2026-01-01T00:00:00Z', annotations: {a: b}}\n"
      "spec: {type: OSD, upgradeAt: '2026-01-02T00:00:00Z', PDBForceDrainTimeout: 60, desired: {version: 4.1.1}}\n"
      "status: {history: [], observedGeneration: 3}\n",
      "c1.yaml");
  ASSERT_TRUE(copied.ok()) << copied.status().message();
  EXPECT_EQ(copied->spec.desired.version, "4.1.1");
  auto stored = kube::ParseJson(
      R"({"spec":{"type":"OSD","upgradeAt":"x","PDBForceDrainTimeout":1,"desired":{"version":"4.1.1","future":1},"future":true}})");
  ASSERT_TRUE(stored.ok());
  auto read = UpgradeConfigFromJson(*stored, "state");
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->spec.desired.version, "4.1.1");
}

TEST(UpgradeConfigTest, ConditionsArePrependedWhenNewAndKeepTheirTransitionTime) {
  UpgradeHistory h;
  h.SetCondition({"A", "False", "A not done", "A has started", "t1", "", "", ""}, "t1");
  h.SetCondition({"B", "False", "", "", "t2", "", "", ""}, "t2");
  ASSERT_EQ(h.conditions.size(), 2u);
  EXPECT_EQ(h.conditions[0].type, "B");  // newest-added first
  h.SetCondition({"A", "False", "A not done", "A still in progress", "t1", "", "", ""}, "t3");
  EXPECT_EQ(h.conditions[1].last_transition_time, "t1");  // status unchanged
  EXPECT_EQ(h.conditions[1].last_probe_time, "t3");
  h.SetCondition({"A", "True", "A done", "A is completed", "t1", "t4", "", ""}, "t4");
  EXPECT_EQ(h.conditions[1].last_transition_time, "t4");
  EXPECT_EQ(h.conditions[1].type, "A");  // replaced in place

  UpgradeConfig config;
  config.SetHistory({"4.1.1", "4.1.0", Phase::kNew, {}, "", "", "", ""});
  config.SetHistory({"4.1.2", "4.1.1", Phase::kNew, {}, "", "", "", ""});
  config.SetHistory({"4.1.1", "4.1.0", Phase::kUpgraded, {}, "", "", "", ""});
  ASSERT_EQ(config.history.size(), 2u);
  EXPECT_EQ(config.history[0].version, "4.1.2");
  EXPECT_EQ(config.FindHistory("4.1.1")->phase, Phase::kUpgraded);
}

// A history entry's phase moves only as the table says; a refused move keeps the phase
// and is an error naming both phases.
TEST(UpgradeConfigTest, PhasesMoveOnlyAsTheTableSays) {
  const std::vector<Phase> all = {Phase::kNew, Phase::kPending, Phase::kUpgrading, Phase::kUpgraded, Phase::kFailed};
  const std::map<Phase, std::set<Phase>> to_from = {
      {Phase::kNew, {Phase::kNew}},
      {Phase::kPending, {Phase::kNew, Phase::kPending}},
      {Phase::kUpgrading, {Phase::kNew, Phase::kPending, Phase::kUpgrading}},
      {Phase::kUpgraded, {Phase::kUpgrading, Phase::kUpgraded}},
      {Phase::kFailed, {Phase::kPending, Phase::kUpgrading, Phase::kFailed}},
  };
  for (Phase from : all) {
    for (Phase to : all) {
      EXPECT_EQ(PhaseMoveAllowed(from, to), to_from.at(to).count(from) == 1) << PhaseName(from) << " -> " << PhaseName(to);
    }
  }
  UpgradeHistory h;
  h.version = "4.14.1";
  h.phase = Phase::kUpgraded;
  Status refused = h.MoveTo(Phase::kUpgrading);
  EXPECT_EQ(refused.code(), Status::Code::kInternal);
  EXPECT_NE(refused.message().find("from Upgraded to Upgrading"), std::string::npos) << refused.message();
  EXPECT_EQ(h.phase, Phase::kUpgraded);
  h.phase = Phase::kPending;
  EXPECT_TRUE(h.MoveTo(Phase::kUpgrading).ok());
  EXPECT_EQ(h.phase, Phase::kUpgrading);
}

TEST(OperatorConfigTest, DefaultsAreTheReferenceDeploymentsAndEveryKeyIsChecked) {
  auto empty = ParseOperatorConfig("", "config.yaml");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->control_plane_minutes, 90);
  EXPECT_EQ(empty->upgrade_window_minutes, 120);
  EXPECT_EQ(empty->delay_trigger_minutes, 30);
  EXPECT_EQ(empty->node_drain_timeout_minutes, 45);
  EXPECT_EQ(empty->expected_node_drain_minutes, 8);
  EXPECT_EQ(empty->source, "LOCAL");

  auto full = ParseOperatorConfig(R"(upgradeType: ARO
configManager: {source: local, localConfigDir: /etc/configs, watchInterval: 5}
maintenance:
  controlPlaneTime: 60
  ignoredAlerts: {controlPlaneCriticals: [etcdMembersDown, ClusterOperatorDown]}
upgradeWindow: {delayTrigger: 10, timeOut: 0}
healthCheck: {ignoredCriticals: [DNSErrors05MinSRE], ignoredNamespaces: [openshift-logging]}
extDependencyAvailabilityChecks: {http: {urls: ["http://127.0.0.1:1/"], timeout: 5}}
featureGate: {enabled: [PreHealthCheck, Unknown]}
validation: {cincinnati: true}
prometheus: {url: "http://127.0.0.1:9090", clusterLabel: cluster}
alertmanager: {url: "http://127.0.0.1:9093"}
notifications: {webhooks: [{url: "http://127.0.0.1:1/hook", headers: ["X-A: b"]}]}
hooks: {capacityReservation: "true", timeout: 30}
fleet: {maxParallel: 1, waveLabel: wave, waves: [canary, main], failureThreshold: 2}
)", "config.yaml");
  ASSERT_TRUE(full.ok()) << full.status().message();
  EXPECT_EQ(full->upgrade_type, UpgradeType::kARO);
  EXPECT_EQ(full->source, "LOCAL");
  EXPECT_EQ(full->control_plane_criticals.size(), 2u);
  EXPECT_EQ(full->upgrade_window_minutes, 0);
  EXPECT_TRUE(full->pre_health_check_gate);
  EXPECT_TRUE(full->cincinnati_check);
  EXPECT_EQ(full->prometheus.cluster_label, "cluster");
  ASSERT_EQ(full->webhooks.size(), 1u);
  EXPECT_EQ(full->webhooks[0].headers[0], "X-A: b");
  EXPECT_EQ(full->waves, (std::vector<std::string>{"canary", "main"}));
  EXPECT_EQ(full->failure_threshold, 2);

  struct Case {
    std::string yaml, expected;
  };
  std::vector<Case> bad = {
      {"maintenance: {controlPlaneTim: 60}", "maintenance.controlPlaneTim: unknown key (known: controlPlaneTime, ignoredAlerts)"},
      {"upgradeWindow: {timeOut: -1}", "upgradeWindow.timeOut: must be a whole number of minutes from 0"},
      {"extDependencyAvailabilityChecks: {http: {timeout: 61}}", "extDependencyAvailabilityChecks.http.timeout: must be a whole number of seconds from 1 to 60"},
      {"configManager: {source: S3}", "configManager.source: \"S3\" is not LOCAL or OCM"},
      {"configManager: {source: OCM}", "configManager.ocmBaseUrl: Required value"},
      {"prometheus: {url: 127.0.0.1:9090}", "prometheus.url: \"127.0.0.1:9090\" is not an http:// or https:// URL"},
      {"fleet: {waves: [a]}", "fleet.waveLabel: Required value"},
      {"healthCheck: {ignoredCriticals: [1]}", "healthCheck.ignoredCriticals[0]: must be a string"},
      {"environment: {fedramp: true}", "environment: unknown key"},
  };
  for (const auto& c : bad) {
    auto got = ParseOperatorConfig(c.yaml, "config.yaml");
    ASSERT_FALSE(got.ok()) << c.yaml;
    EXPECT_NE(got.status().message().find(c.expected), std::string::npos) << got.status().message();
    EXPECT_NE(got.status().message().find("config.yaml"), std::string::npos) << got.status().message();
  }
}

TEST(OperatorConfigTest, FleetFilesNameEveryCluster) {
  auto fleet = ParseFleet(R"(clusters:
- {name: prod-1, agent: "http://127.0.0.1:9001", labels: {wave: canary}}
- {name: prod-2, agent: "https://agent.example.com", tokenFile: /etc/token}
)", "fleet.yaml");
  ASSERT_TRUE(fleet.ok()) << fleet.status().message();
  ASSERT_EQ(fleet->size(), 2u);
  EXPECT_EQ((*fleet)[0].labels.at("wave"), "canary");
  EXPECT_EQ((*fleet)[1].token_file, "/etc/token");
  for (const auto& [yaml, expected] : std::vector<std::pair<std::string, std::string>>{
           {"clusters: [{name: a, agent: 'http://x'}, {name: a, agent: 'http://y'}]", "clusters[1].name: \"a\" is listed twice"},
           {"clusters: [{name: A_1, agent: 'http://x'}]", "clusters[0].name: \"A_1\" is not a cluster name"},
           {"clusters: [{name: a, agent: 'x:1'}]", "clusters[0].agent: \"x:1\" is not an http:// or https:// URL"},
           {"clusters: [{name: a, agent: 'http://x', label: {}}]", "clusters[0].label: unknown key"},
           {"nodes: []", "nodes: unknown key"},
       }) {
    auto got = ParseFleet(yaml, "fleet.yaml");
    ASSERT_FALSE(got.ok()) << yaml;
    EXPECT_NE(got.status().message().find(expected), std::string::npos) << got.status().message();
  }
}

TEST(StateStoreTest, ConfigsLedgerAndFlagsSurviveReopening) {
  TempDir dir;
  const std::string path = (dir / "state.db").string();
  auto config = ParseUpgradeConfigYaml(kExample, "example.yaml");
  ASSERT_TRUE(config.ok());
  config->cluster = "prod-1";
  {
    auto store = StateStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status().message();
    ASSERT_TRUE((*store)->PutConfig(*config).ok());
    auto first = (*store)->Claim("prod-1", "4.14.12", "started", "2024-06-20T12:00:41Z");
    ASSERT_TRUE(first.ok());
    EXPECT_TRUE(*first);
    EXPECT_FALSE(*(*store)->Claim("prod-1", "4.14.12", "started", "2024-06-20T12:01:41Z"));
    EXPECT_TRUE(*(*store)->Claim("prod-1", "4.14.13", "started", "t"));
    ASSERT_TRUE((*store)->Unclaim("prod-1", "4.14.13", "started").ok());
    ASSERT_TRUE((*store)->SetFlag("pause.reason", "two failures").ok());
  }
  auto store = StateStore::Open(path);
  ASSERT_TRUE(store.ok());
  auto configs = (*store)->LoadConfigs();
  ASSERT_TRUE(configs.ok()) << configs.status().message();
  ASSERT_EQ(configs->size(), 1u);
  EXPECT_EQ((*configs)[0], *config);
  EXPECT_TRUE(*(*store)->Claimed("prod-1", "4.14.12", "started"));
  EXPECT_FALSE(*(*store)->Claimed("prod-1", "4.14.13", "started"));
  EXPECT_EQ(**(*store)->GetFlag("pause.reason"), "two failures");
  ASSERT_TRUE((*store)->DeleteConfig("prod-1").ok());
  EXPECT_FALSE((*(*store)->GetConfig("prod-1")).has_value());

  auto unwritable = StateStore::Open((dir / "missing" / "state.db").string());
  ASSERT_FALSE(unwritable.ok());
  EXPECT_NE(unwritable.status().message().find("missing/state.db"), std::string::npos) << unwritable.status().message();
}

// A mistyped --configs directory stops the start, once, instead of an error at every pass.
TEST(OperatorApiTest, AConfigsDirectoryThatIsNotOneStopsTheStart) {
  testing::TempDir dir;
  testing::WriteFile(dir / "fleet.yaml", "clusters:\n- {name: alpha, agent: \"http://127.0.0.1:1\"}\n");
  testing::WriteFile(dir / "a-file", "x");
  for (const std::string& configs : {(dir / "confgis").string(), (dir / "a-file").string()}) {
    auto r = testing::RunCincinnati("upgrade-operator --fleet " + (dir / "fleet.yaml").string() + " --state-dir " +
                                    (dir / "state").string() + " --configs " + configs + " --port 0");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("--configs: " + configs + " is not a directory"), std::string::npos) << r.err;
  }
  auto missing = testing::RunCincinnati("upgrade-operator --fleet " + (dir / "fleet.yaml").string() + " --state-dir " +
                                        (dir / "state").string() + " --configs " + (dir / "confgis").string() + " --port 0");
  EXPECT_NE(missing.err.find("(it does not exist)"), std::string::npos) << missing.err;
}

// The operator's API can pause every rollout: off loopback it needs a token, and its
// POSTs need a JSON content type, which no web page can send cross-site unasked.
TEST(OperatorApiTest, OffLoopbackNeedsATokenAndPostsNeedJson) {
  testing::TempDir dir;
  testing::WriteFile(dir / "fleet.yaml", "clusters:\n- {name: alpha, agent: \"http://127.0.0.1:1\"}\n");
  std::filesystem::create_directories(dir / "configs");
  const std::vector<std::string> base = {"--fleet", (dir / "fleet.yaml").string(), "--state-dir", (dir / "state").string(),
                                         "--configs", (dir / "configs").string(), "--port", "0"};
  auto refused = testing::RunCincinnati("upgrade-operator --fleet " + (dir / "fleet.yaml").string() + " --state-dir " +
                                        (dir / "state").string() + " --configs " + (dir / "configs").string() +
                                        " --listen 0.0.0.0 --port 0");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("needs --token-file"), std::string::npos) << refused.err;

  testing::WriteFile(dir / "token", "s3cret\n");
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--listen", "localhost", "--token-file", (dir / "token").string()});
  testing::ServiceProcess op("upgrade-operator", args);
  ASSERT_TRUE(op.running()) << op.log();
  auto post = [&](std::vector<std::string> headers) {
    http::RequestOptions options;
    options.method = "POST";
    options.headers = std::move(headers);
    options.timeout = std::chrono::seconds(10);
    return http::Request(op.url(std::string(kFleetPath) + "/pause"), options);
  };
  EXPECT_EQ(post({}).status, 401);
  EXPECT_EQ(post({"Authorization: Bearer s3cret", "Content-Type: text/plain"}).status, 415);
  EXPECT_EQ(post({"Authorization: Bearer s3cret"}).status, 415);
  auto paused = post({"Authorization: bearer s3cret", "Content-Type: application/json"});
  EXPECT_EQ(paused.status, 200) << paused.body;
}

}  // namespace
}  // namespace cincinnati::upgrade

namespace cincinnati::upgrade {
namespace {

// An operator on `dir`'s fleet.yaml and configs/, its state in state/.
OperatorOptions LocalOptions(const std::filesystem::path& dir) {
  OperatorOptions options;
  options.fleet_path = (dir / "fleet.yaml").string();
  options.state_dir = (dir / "state").string();
  options.configs_dir = (dir / "configs").string();
  return options;
}

// An UpgradeConfig for `cluster`, far in the future.
std::string ConfigFor(const std::string& cluster) {
  return "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nmetadata:\n  name: c\n  labels: {cluster: " +
         cluster + "}\nspec:\n  type: OSD\n  upgradeAt: \"2099-01-01T00:00:00Z\"\n  PDBForceDrainTimeout: 60\n"
         "  desired: {version: \"4.1.1\", channel: stable-4.1}\n";
}

TEST(OperatorInputsTest, ATabInAConfigIsCalledATab) {
  auto parsed = ParseUpgradeConfigYaml(
      "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nspec:\n\ttype: OSD\n", "configs/a.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("line 4"), std::string::npos) << parsed.status().message();
  EXPECT_NE(parsed.status().message().find("(a tab: YAML indents with spaces only)"), std::string::npos)
      << parsed.status().message();
}

// `upgrades` with no operator to talk to says what it tried to reach and how to fix it.
TEST(UpgradesCommandTest, NoOperatorRunningIsSaidWithTheWayOut) {
  auto r = testing::RunCincinnati("upgrades list --operator http://127.0.0.1:1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error: cannot reach the upgrade operator at http://127.0.0.1:1: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("start one with `cincinnati upgrade-operator` or pass --operator URL"), std::string::npos) << r.err;
}

// An UpgradeConfig for a cluster the fleet file does not list is shown, not only logged.
TEST(OperatorInputsTest, AConfigForAClusterNotInTheFleetIsListedAsNotInFleet) {
  testing::TempDir dir;
  testing::WriteFile(dir / "fleet.yaml", "clusters:\n- {name: alpha, agent: \"http://127.0.0.1:1\"}\n");
  testing::WriteFile(dir / "configs" / "omega.yaml", ConfigFor("omega"));
  const OperatorOptions options = LocalOptions(dir.path());
  auto op = UpgradeOperator::Open(options);
  ASSERT_TRUE(op.ok()) << op.status().message();
  (*op)->RunOnce();
  const kube::JsonValue fleet = (*op)->FleetStatus();
  const kube::JsonValue* unknown = kube::FindMember(fleet, "unknownClusters");
  ASSERT_TRUE(unknown && unknown->is_array()) << kube::WriteJson(fleet);
  ASSERT_EQ(kube::ItemsOf(*unknown).size(), 1u);
  EXPECT_EQ(kube::TextOf(kube::ItemsOf(*unknown)[0]), "omega");
  // Listed once the fleet file has it: no longer unknown.
  testing::WriteFile(dir / "fleet.yaml",
                     "clusters:\n- {name: alpha, agent: \"http://127.0.0.1:1\"}\n- {name: omega, agent: \"http://127.0.0.1:1\"}\n");
  op->reset();
  op = UpgradeOperator::Open(options);
  ASSERT_TRUE(op.ok()) << op.status().message();
  (*op)->RunOnce();
  EXPECT_EQ(kube::FindMember((*op)->FleetStatus(), "unknownClusters"), nullptr);
  EXPECT_TRUE((*op)->Get("omega").has_value());
}

// The LOCAL source's directory is untrusted input: whatever it holds (a FIFO, a
// directory or a symlink loop under a config's name, a huge file), the operator stays
// up, says what it cannot read, and never takes an unreadable file for a deletion.
TEST(OperatorInputsTest, AnUnreadableConfigIsReportedNeverTakenForADeletion) {
  namespace fs = std::filesystem;
  testing::TempDir dir;
  testing::WriteFile(dir / "fleet.yaml",
                     "clusters:\n- {name: alpha, agent: \"http://127.0.0.1:1\"}\n- {name: beta, agent: \"http://127.0.0.1:1\"}\n"
                     "- {name: gamma, agent: \"http://127.0.0.1:1\"}\n- {name: delta, agent: \"http://127.0.0.1:1\"}\n");
  auto config = ConfigFor;
  fs::create_directories(dir / "configs");
  testing::WriteFile(dir / "configs" / "alpha.yaml", config("alpha"));
  testing::WriteFile(dir / "configs" / "b.yaml", config("beta"));  // named by its label, not its file
  testing::WriteFile(dir / "configs" / "gamma.yaml", config("gamma"));
  testing::WriteFile(dir / "configs" / "delta.yaml", config("delta"));
  const OperatorOptions options = LocalOptions(dir.path());
  auto op = UpgradeOperator::Open(options);
  ASSERT_TRUE(op.ok()) << op.status().message();
  (*op)->RunOnce();
  for (const char* cluster : {"alpha", "beta", "gamma", "delta"}) EXPECT_TRUE((*op)->Get(cluster).has_value()) << cluster;

  // Each file becomes something that cannot be read as a config.
  fs::remove(dir / "configs" / "alpha.yaml");
  ASSERT_EQ(::mkfifo((dir / "configs" / "alpha.yaml").c_str(), 0600), 0);  // would block a plain read forever
  fs::remove(dir / "configs" / "b.yaml");
  fs::create_directory(dir / "configs" / "b.yaml");
  fs::remove(dir / "configs" / "gamma.yaml");
  fs::create_symlink("gamma.yaml", dir / "configs" / "gamma.yaml");  // a loop: is_regular_file() would throw
  testing::WriteFile(dir / "configs" / "delta.yaml", config("delta") + "# " + std::string(2 << 20, 'x') + "\n");
  (*op)->RunOnce();
  for (const char* cluster : {"alpha", "beta", "gamma", "delta"}) {
    EXPECT_TRUE((*op)->Get(cluster).has_value()) << cluster << "'s config was taken for deleted";
  }
  // Restarted: which cluster b.yaml is for (its label says) is not known yet.
  op->reset();
  op = UpgradeOperator::Open(options);
  ASSERT_TRUE(op.ok()) << op.status().message();
  (*op)->RunOnce();
  for (const char* cluster : {"alpha", "beta", "gamma", "delta"}) {
    EXPECT_TRUE((*op)->Get(cluster).has_value()) << cluster << "'s config was taken for deleted after a restart";
  }

  // Gone for real: deleted.
  for (const char* file : {"alpha.yaml", "b.yaml", "gamma.yaml", "delta.yaml"}) fs::remove(dir / "configs" / file);
  (*op)->RunOnce();
  for (const char* cluster : {"alpha", "beta", "gamma", "delta"}) EXPECT_FALSE((*op)->Get(cluster).has_value()) << cluster;
}

}  // namespace
}  // namespace cincinnati::upgrade
