// The replicated set (deploy/kubernetes/replicated/), checked without a cluster (no
// kubectl) against the binary and against itself (deploy/manifest_checks.h): every flag
// is one its role takes, every Secret key a pod uses exists, every *_file flag reads a file
// a Secret mounts, Services select their pods and ports, and the policy engines' upstream
// is the graph builders' Service. Each check is also run on a broken copy of the
// manifests, so that none of them can pass vacuously.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>

#include "deploy/manifest_checks.h"

namespace cincinnati::deploy {
namespace {

class ReplicatedDeployTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_THROW(manifests_ = Load(KubernetesDir() / "replicated"));
    ASSERT_FALSE(manifests_.empty());
  }
  // A copy with `fn` applied to the first document of this kind and name.
  Manifests Broken(const std::string& kind, const std::string& name, const std::function<void(YAML::Node&)>& fn) {
    Manifests copy = Clone(manifests_);
    for (Manifest& m : copy) {
      if (Kind(m) == kind && Name(m) == name) {
        fn(m.doc);
        return copy;
      }
    }
    ADD_FAILURE() << "no " << kind << " " << name;
    return copy;
  }
  static void ReplaceArg(YAML::Node& doc, const std::string& prefix, const std::string& with) {
    YAML::Node args = doc["spec"]["template"]["spec"]["containers"][0]["args"];
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].Scalar().rfind(prefix, 0) == 0) {
        args[i] = with;
        return;
      }
    }
    ADD_FAILURE() << "no argument " << prefix;
  }
  Manifests manifests_;
};

TEST_F(ReplicatedDeployTest, ManifestsParseAndNameTheirKinds) {
  std::map<std::string, int> kinds;
  for (const Manifest& m : manifests_) {
    EXPECT_TRUE(m.doc["apiVersion"] && m.doc["kind"] && m.doc["metadata"]["name"]) << m.file;
    ++kinds[Kind(m)];
  }
  EXPECT_EQ(kinds["Deployment"], 2);
  EXPECT_EQ(kinds["PodDisruptionBudget"], 2);
  EXPECT_GE(kinds["Service"], 2);
  EXPECT_EQ(kinds["StatefulSet"], 1);  // the optional PostgreSQL
  EXPECT_TRUE(Find(manifests_, "Secret", "cincinnati-shared"));
  EXPECT_TRUE(Find(manifests_, "PersistentVolumeClaim", "cincinnati-data"));
  const Manifest* gb = Find(manifests_, "Deployment", "cincinnati-graph-builder");
  const Manifest* pe = Find(manifests_, "Deployment", "cincinnati-policy-engine");
  ASSERT_TRUE(gb && pe);
  EXPECT_EQ(gb->doc["spec"]["replicas"].as<int>(), 2);
  EXPECT_EQ(pe->doc["spec"]["replicas"].as<int>(), 3);
}

TEST_F(ReplicatedDeployTest, EveryFlagIsOneOfItsRolesFlags) {
  EXPECT_EQ(Join(FlagProblems(manifests_)), "");
  // The single pod's too.
  EXPECT_EQ(Join(FlagProblems(Load(KubernetesDir()))), "");
  EXPECT_NE(Join(FlagProblems(Broken("Deployment", "cincinnati-graph-builder",
                                     [](YAML::Node& d) { ReplaceArg(d, "--reports.token_file", "--reports.tokenfile=/x"); }))),
            "");
  EXPECT_NE(Join(FlagProblems(Broken("Deployment", "cincinnati-policy-engine",
                                     [](YAML::Node& d) { ReplaceArg(d, "--upstream.cincinnati.url", "--brakes.url_base=https://x"); }))),
            "")
      << "a graph builder's flag on a policy engine";
  EXPECT_NE(Join(FlagProblems(Broken("Deployment", "cincinnati-policy-engine",
                                     [](YAML::Node& d) { ReplaceArg(d, "--reports.enabled", "true"); }))),
            "");
}

TEST_F(ReplicatedDeployTest, EverySecretKeyAPodUsesExists) {
  EXPECT_EQ(Join(SecretKeyProblems(manifests_)), "");
  EXPECT_NE(Join(SecretKeyProblems(Broken("Secret", "cincinnati-shared",
                                          [](YAML::Node& d) { d["stringData"].remove("receipt-key"); }))),
            "");
  EXPECT_NE(Join(SecretKeyProblems(Broken("Secret", "cincinnati-postgres",
                                          [](YAML::Node& d) { d["stringData"].remove("password"); }))),
            "")
      << "an environment variable's secretKeyRef";
  EXPECT_NE(Join(SecretKeyProblems(Broken("Deployment", "cincinnati-graph-builder",
                                          [](YAML::Node& d) { d["spec"]["template"]["spec"]["volumes"][1]["secret"]["secretName"] = "other"; }))),
            "");
}

TEST_F(ReplicatedDeployTest, FileFlagsReadTheFilesTheSecretMounts) {
  EXPECT_EQ(Join(FileFlagProblems(manifests_)), "");
  EXPECT_NE(Join(FileFlagProblems(Broken("Deployment", "cincinnati-policy-engine",
                                         [](YAML::Node& d) {
                                           ReplaceArg(d, "--reports.receipt_key_file", "--reports.receipt_key_file=/etc/cincinnati/shared/receipt_key");
                                         }))),
            "")
      << "a file name the Secret volume does not project";
  EXPECT_NE(Join(FileFlagProblems(Broken("Deployment", "cincinnati-graph-builder",
                                         [](YAML::Node& d) {
                                           d["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][1]["mountPath"] = "/etc/secrets";
                                         }))),
            "")
      << "the Secret mounted elsewhere";
  EXPECT_NE(Join(FileFlagProblems(Broken("Deployment", "cincinnati-graph-builder",
                                         [](YAML::Node& d) { ReplaceArg(d, "--reports.state_dir", "--reports.state_dir=/var/lib/cincinnati/reports"); }))),
            "")
      << "state on the read-only data volume";
  EXPECT_NE(Join(FileFlagProblems(Broken("Deployment", "cincinnati-graph-builder",
                                         [](YAML::Node& d) { ReplaceArg(d, "--reports.token_file", "--reports.token_file=/var/lib/cincinnati/token"); }))),
            "")
      << "a token on a volume that is not a Secret";
}

TEST_F(ReplicatedDeployTest, ServicesAndBudgetsSelectTheirPodsAndPorts) {
  EXPECT_EQ(Join(SelectorProblems(manifests_)), "");
  EXPECT_NE(Join(SelectorProblems(Broken("Service", "cincinnati-policy-engine",
                                         [](YAML::Node& d) { d["spec"]["selector"]["app.kubernetes.io/component"] = "policy"; }))),
            "");
  EXPECT_NE(Join(SelectorProblems(Broken("Service", "cincinnati-policy-engine",
                                         [](YAML::Node& d) { d["spec"]["ports"][0]["targetPort"] = 8080; }))),
            "");
  EXPECT_NE(Join(SelectorProblems(Broken("PodDisruptionBudget", "cincinnati-graph-builder",
                                         [](YAML::Node& d) { d["spec"]["selector"]["matchLabels"].remove("app.kubernetes.io/component"); }))),
            "")
      << "a budget over both tiers";
  EXPECT_NE(Join(SelectorProblems(Broken("Deployment", "cincinnati-graph-builder",
                                         [](YAML::Node& d) { d["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"] = "gb"; }))),
            "");
}

TEST_F(ReplicatedDeployTest, ProbesAskTheStatusListener) {
  EXPECT_EQ(Join(ProbeProblems(manifests_)), "");
  EXPECT_EQ(Join(ProbeProblems(Load(KubernetesDir()))), "");
  EXPECT_NE(Join(ProbeProblems(Broken("Deployment", "cincinnati-graph-builder",
                                      [](YAML::Node& d) { d["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"] = 8080; }))),
            "");
  EXPECT_NE(Join(ProbeProblems(Broken("Deployment", "cincinnati-policy-engine",
                                      [](YAML::Node& d) { d["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["path"] = "/liveness"; }))),
            "");
  EXPECT_NE(Join(ProbeProblems(Broken("Deployment", "cincinnati-policy-engine",
                                      [](YAML::Node& d) { ReplaceArg(d, "--service.port", "--service.port=8082"); }))),
            "");
}

TEST_F(ReplicatedDeployTest, PolicyEnginesReachTheGraphBuildersService) {
  EXPECT_EQ(Join(WiringProblems(manifests_)), "");
  auto url = [&](const std::string& value) {
    return Join(WiringProblems(Broken("Deployment", "cincinnati-policy-engine",
                                      [&](YAML::Node& d) { ReplaceArg(d, "--upstream.cincinnati.url", "--upstream.cincinnati.url=" + value); })));
  };
  EXPECT_NE(url("http://cincinnati-graph-builders:8080/api/upgrades_info/graph"), "") << "no such Service";
  EXPECT_NE(url("http://cincinnati-policy-engine:80/api/upgrades_info/graph"), "") << "itself";
  EXPECT_NE(url("http://cincinnati-graph-builder:8090/api/upgrades_info/graph"), "") << "the graph-data port";
  EXPECT_NE(url("http://cincinnati-graph-builder:8080/graph"), "") << "the path prefix left out";
  EXPECT_EQ(url("http://cincinnati-graph-builder.cincinnati.svc.cluster.local:8080/api/upgrades_info/graph"), "");
  EXPECT_NE(Join(WiringProblems(Broken("Deployment", "cincinnati-policy-engine",
                                       [](YAML::Node& d) {
                                         d["spec"]["template"]["spec"]["volumes"][0]["secret"]["items"][1]["key"] = "brakes-admin-token";
                                       }))),
            "")
      << "reports forwarded with another token";
  EXPECT_NE(Join(WiringProblems(Broken("Deployment", "cincinnati-policy-engine",
                                       [](YAML::Node& d) { ReplaceArg(d, "--reports.receipt_key_file", "-v"); }))),
            "")
      << "no receipt key";
  EXPECT_NE(Join(WiringProblems(Broken("Deployment", "cincinnati-graph-builder", [](YAML::Node& d) { d["spec"]["replicas"] = 1; }))), "");
}

TEST_F(ReplicatedDeployTest, ThePlaceholderDatabaseIsTheOptionalPostgres) {
  EXPECT_EQ(Join(PostgresProblems(manifests_)), "");
  EXPECT_NE(Join(PostgresProblems(Broken("Service", "cincinnati-postgres",
                                         [](YAML::Node& d) { d["spec"]["ports"][0]["port"] = 5433; }))),
            "");
  EXPECT_NE(Join(PostgresProblems(Broken("Secret", "cincinnati-shared", [](YAML::Node& d) {
              d["stringData"]["postgres-url"] = "postgresql://cincinnati:x@postgres:5432/cincinnati";
            }))),
            "");
}

}  // namespace
}  // namespace cincinnati::deploy
