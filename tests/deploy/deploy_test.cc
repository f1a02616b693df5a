// The shipped Kubernetes manifests parse, name their kinds, and point every probe at a
// status route the services really serve.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "deploy/manifest_checks.h"
#include "test_util.h"

namespace cincinnati::deploy {
namespace {

namespace fs = std::filesystem;

TEST(DeployTest, ManifestsParseAndProbesUseRealRoutes) {
  fs::path dir = KubernetesDir();
  std::set<std::string> kinds;
  std::set<std::string> probe_paths;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;  // replicated/: the next tests
    std::vector<YAML::Node> docs;
    ASSERT_NO_THROW(docs = YAML::LoadAllFromFile(entry.path().string())) << entry.path();
    for (const YAML::Node& doc : docs) {
      ASSERT_TRUE(doc["apiVersion"] && doc["kind"] && doc["metadata"]["name"]) << entry.path();
      kinds.insert(doc["kind"].as<std::string>());
      if (doc["kind"].as<std::string>() != "Deployment") continue;
      for (const auto& container : doc["spec"]["template"]["spec"]["containers"]) {
        for (const char* probe : {"livenessProbe", "readinessProbe", "startupProbe"}) {
          if (container[probe]) probe_paths.insert(container[probe]["httpGet"]["path"].as<std::string>());
        }
      }
    }
  }
  for (const char* kind : {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget",
                           "ServiceMonitor", "PersistentVolumeClaim"}) {
    EXPECT_TRUE(kinds.count(kind)) << kind;
  }
  EXPECT_EQ(probe_paths, (std::set<std::string>{"/liveness", "/readiness", "/livez", "/readyz"}));
}

// ---- The manifests as data ----

}  // namespace
}  // namespace cincinnati::deploy
