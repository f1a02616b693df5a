#include "generated_graph_data.h"

#include <fstream>
#include <random>
#include <string>

#include <fmt/format.h>

#include "builder/pipeline.h"

namespace cincinnati::bench {
namespace {

constexpr int kFirstMinor = 1, kLastMinor = 25, kPatches = 100;
constexpr const char* kArches[] = {"amd64", "arm64", "ppc64le", "s390x"};

std::string V(int minor, int patch) { return fmt::format("4.{}.{}", minor, patch); }

void Write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

}  // namespace

GeneratedInput WriteGeneratedInput(const std::filesystem::path& dir) {
  GeneratedInput in{dir / "releases", dir / "graph-data"};
  std::mt19937 rng(7);
  for (int minor = kFirstMinor; minor <= kLastMinor; ++minor) {
    for (int patch = 0; patch < kPatches; ++patch) {
      std::string previous;
      for (int p = std::max(0, patch - 15); p < patch; ++p) previous += fmt::format("\"{}\",", V(minor, p));
      if (minor > kFirstMinor) {
        for (int p = kPatches - 10; p < kPatches; ++p) previous += fmt::format("\"{}\",", V(minor - 1, p));
      }
      if (!previous.empty()) previous.pop_back();
      for (const char* arch : kArches) {
        Write(in.releases / fmt::format("{}-{}.json", V(minor, patch), arch),
              fmt::format(R"({{"kind":"cincinnati-metadata-v0","version":"{}+{}","previous":[{}],)"
                          R"("metadata":{{"url":"https://access.redhat.com/errata/RHBA-2024:{:04}","description":""}}}})",
                          V(minor, patch), arch, previous, (minor * kPatches + patch) % 10000));
      }
    }
  }

  Write(in.graph_data / "version", "1.1.0\n");
  Write(in.graph_data / "raw/metadata.json", R"({"4.1.99": {"io.openshift.upgrades.graph.previous.add": "4.1.50"}})");
  for (int minor = kFirstMinor + 1; minor <= kLastMinor; ++minor) {
    for (const char* phase : {"candidate", "fast", "stable"}) {
      std::string name = fmt::format("{}-4.{}", phase, minor);
      std::string text = "name: " + name + "\nversions:\n";
      int last = phase == std::string("stable") ? kPatches - 20 : kPatches;
      for (int p = kPatches - 10; p < kPatches; ++p) text += "- " + V(minor - 1, p) + "\n";
      for (int p = 0; p < last; ++p) text += "- " + V(minor, p) + "\n";
      Write(in.graph_data / "channels" / (name + ".yaml"), text);
    }
  }
  // EUS-style channels span two whole minors (200 releases, ~165 KB answers).
  for (int minor = kFirstMinor + 2; minor <= kLastMinor; minor += 2) {
    std::string name = fmt::format("eus-4.{}", minor);
    std::string text = "name: " + name + "\nversions:\n";
    for (int p = 0; p < kPatches; ++p) text += "- " + V(minor - 1, p) + "\n";
    for (int p = 0; p < kPatches; ++p) text += "- " + V(minor, p) + "\n";
    Write(in.graph_data / "channels" / (name + ".yaml"), text);
  }
  for (int i = 0; i < 2000; ++i) {
    int minor = kFirstMinor + 1 + static_cast<int>(rng() % (kLastMinor - kFirstMinor));
    int patch = static_cast<int>(rng() % kPatches);
    std::string to = V(minor, patch);
    if (i < 500) {
      Write(in.graph_data / "blocked-edges" / fmt::format("{}-block-{}.yaml", to, i),
            fmt::format("to: {}\nfrom: 4[.]{}[.]{}[+].*\n", to, minor - 1, rng() % kPatches));
    } else {
      Write(in.graph_data / "blocked-edges" / fmt::format("{}-Risk{}.yaml", to, i % 120),
            fmt::format("to: {}\nfrom: 4[.]{}[.].*\nurl: https://issues.redhat.com/browse/OCPBUGS-{}\n"
                        "name: Risk{}\nmessage: Generated risk {} for updates into {}.\nmatchingRules:\n"
                        "- type: PromQL\n  promql:\n    promql: |\n      group(cluster_operator_conditions{{name=\"r{}\"}})\n"
                        "      or 0 * group(cluster_version)\n",
                        to, minor - 1, i, i % 120, i, to, i % 120));
    }
  }
  return in;
}

const GeneratedInput& Generated() {
  static const GeneratedInput input = [] {
    std::filesystem::path dir = std::filesystem::temp_directory_path() / "cincinnati-bench-generated-v3";
    if (!std::filesystem::exists(dir / "graph-data/version")) return WriteGeneratedInput(dir);
    return GeneratedInput{dir / "releases", dir / "graph-data"};
  }();
  return input;
}

Graph GeneratedGraph() {
  LocalBuildOptions options;
  options.releases = Generated().releases;
  options.graph_data = Generated().graph_data;
  TransformContext context;
  return BuildLocalGraph(options, context).value();
}

}  // namespace cincinnati::bench
