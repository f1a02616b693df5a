// The arrows between modules point down. The client half (agent, operator) and the
// shared modules below them include nothing of the update service's half (graph
// builder, policy, insight, the page, the cluster directory, reports, the two services,
// what they share and their signing), the operator includes nothing of the agent, and
// the libraries the agent and the operator link carry no graph builder, Graphviz or
// libgit2 (nor SQLite, for the agent).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = fs::path(CINCINNATI_TEST_SOURCE_DIR).parent_path() / "src";

// "dir/file.h" of every `#include "..."` of every file in `dir`, by file.
std::map<std::string, std::vector<std::string>> IncludesOf(const std::string& dir) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& entry : fs::directory_iterator(kSource / dir)) {
    std::ifstream in(entry.path());
    std::string line;
    const std::string file = dir + "/" + entry.path().filename().string();
    while (std::getline(in, line)) {
      if (line.rfind("#include \"", 0) == 0) out[file].push_back(line.substr(10, line.find('"', 10) - 10));
    }
  }
  return out;
}

bool StartsWithAny(const std::string& include, const std::vector<std::string>& prefixes) {
  for (const std::string& p : prefixes) {
    if (include.rfind(p, 0) == 0) return true;
  }
  return false;
}

// The update service's half: what no cluster-side module may include.
const std::vector<std::string> kServiceHalf = {"builder/", "policy/", "insight/", "ui/", "directory/", "reports/", "service/",
                                               "signing/", "graph_builder/", "policy_engine/"};

TEST(ModuleArrowsTest, TheClientHalfIncludesNothingOfTheServiceHalf) {
  for (const char* dir : {"agent", "operator", "adm", "component", "kube", "graph_client", "config_api", "prometheus", "env",
                          "http_server", "sqlite", "postgres"}) {
    for (const auto& [file, includes] : IncludesOf(dir)) {
      for (const std::string& include : includes) {
        EXPECT_FALSE(StartsWithAny(include, kServiceHalf)) << file << " includes " << include;
      }
    }
  }
}

// `adm upgrade` is a client of the agent's API, as `oc adm upgrade` is of the CVO's: it
// reads the ClusterVersion document, never the agent's code.
TEST(ModuleArrowsTest, TheOperatorAndTheSharedModulesIncludeNothingOfTheAgent) {
  for (const char* dir : {"operator", "adm", "kube", "graph_client", "config_api", "prometheus", "env", "http_server", "sqlite", "postgres"}) {
    for (const auto& [file, includes] : IncludesOf(dir)) {
      for (const std::string& include : includes) {
        EXPECT_NE(include.rfind("agent/", 0), 0u) << file << " includes " << include;
      }
    }
  }
}

// "library: dep;dep;..." lines, written when the build is configured.
std::map<std::string, std::set<std::string>> LinkClosure() {
  std::map<std::string, std::set<std::string>> out;
  std::istringstream lines(testing::ReadFile(CINCINNATI_LINK_CLOSURE));
  std::string line;
  while (std::getline(lines, line)) {
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::set<std::string>& deps = out[line.substr(0, colon)];
    std::istringstream items(line.substr(colon + 2));
    for (std::string dep; std::getline(items, dep, ';');) deps.insert(dep);
  }
  return out;
}

bool Links(const std::set<std::string>& deps, const std::string& needle) {
  for (const std::string& d : deps) {
    if (d.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(ModuleArrowsTest, TheAgentAndTheOperatorLinkOnlyWhatTheyUse) {
  const auto closure = LinkClosure();
  ASSERT_TRUE(closure.count("cincinnati_agent") && closure.count("cincinnati_operator")) << CINCINNATI_LINK_CLOSURE;
  for (const char* library : {"cincinnati_agent", "cincinnati_operator"}) {
    const std::set<std::string>& deps = closure.at(library);
    // What they do use is there (the list is not empty by mistake).
    EXPECT_TRUE(deps.count("cincinnati_http_server")) << library;
    EXPECT_TRUE(deps.count("cincinnati_graph_client")) << library;
    EXPECT_TRUE(deps.count("cincinnati_config_api")) << library;
    for (const char* absent : {"cincinnati_builder", "cincinnati_graph_builder", "cincinnati_policy_engine", "cincinnati_service",
                               "cincinnati_signing", "cincinnati_policy", "cincinnati_insight", "cincinnati_ui",
                               "cincinnati_cluster_directory", "cincinnati_reports", "LIBGVC", "LIBGIT2", "libgvc", "libgit2"}) {
      EXPECT_FALSE(Links(deps, absent)) << library << " links " << absent;
    }
  }
  EXPECT_FALSE(Links(closure.at("cincinnati_agent"), "SQLITE")) << "the agent links SQLite";
  EXPECT_FALSE(Links(closure.at("cincinnati_agent"), "cincinnati_sqlite")) << "the agent links the SQLite wrapper";
  EXPECT_FALSE(Links(closure.at("cincinnati_agent"), "cincinnati_operator"));
  EXPECT_FALSE(Links(closure.at("cincinnati_operator"), "cincinnati_agent"));
  EXPECT_TRUE(Links(closure.at("cincinnati_operator"), "SQLITE")) << "the operator's state store is SQLite";
}

}  // namespace
}  // namespace cincinnati
