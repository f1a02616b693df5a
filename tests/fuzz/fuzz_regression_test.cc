// Replays every committed fuzz input (fuzz/seeds/<entry>/ and the crashes fuzzing
// found, fuzz/regressions/<entry>/) and the upstream fixtures through the fuzz entries
// in the normal test build, so a fixed crash stays fixed under g++ and the ASan suite.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "entries.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;

const fs::path kFuzz = fs::path(CINCINNATI_EXAMPLES).parent_path() / "fuzz";

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fuzz::Entry Find(const std::string& name) {
  for (const auto& e : fuzz::Entries()) {
    if (name == e.name) return e.entry;
  }
  return nullptr;
}

size_t Replay(fuzz::Entry entry, const fs::path& dir, const std::string& extension = "") {
  size_t n = 0;
  if (!fs::is_directory(dir)) return 0;
  for (const auto& f : fs::recursive_directory_iterator(dir)) {
    if (!f.is_regular_file() || (!extension.empty() && f.path().extension() != extension)) continue;
    std::string data = Slurp(f.path());
    SCOPED_TRACE(f.path().string());
    entry(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    ++n;
  }
  return n;
}

TEST(FuzzRegressionTest, EveryEntryHasSeedsAndATarget) {
  std::string targets = Slurp(kFuzz / "CMakeLists.txt");
  for (const auto& e : fuzz::Entries()) {
    EXPECT_GT(Replay(e.entry, kFuzz / "seeds" / e.name), 0u) << e.name << " has no seeds";
    EXPECT_NE(targets.find(std::string(" ") + e.name), std::string::npos) << e.name << " has no fuzz target";
  }
}

TEST(FuzzRegressionTest, CrashesFoundByFuzzingStayFixed) {
  size_t replayed = 0;
  for (const auto& e : fuzz::Entries()) replayed += Replay(e.entry, kFuzz / "regressions" / e.name);
  // Every directory under regressions/ names an entry (a typo would skip its inputs).
  for (const auto& d : fs::directory_iterator(kFuzz / "regressions")) {
    if (d.is_directory()) { EXPECT_NE(Find(d.path().filename().string()), nullptr) << d.path(); }
  }
  EXPECT_GT(replayed, 0u);
}

TEST(FuzzRegressionTest, UpstreamFixturesPass) {
  const fs::path fixtures = CINCINNATI_FIXTURES;
  EXPECT_GT(Replay(Find("graph_json"), fixtures / "policy-engine-golden", ".json"), 5u);
  EXPECT_GT(Replay(Find("graph_json"), fixtures / "plugins", ".json"), 0u);
  EXPECT_GT(Replay(Find("graph_data_yaml"), cincinnati::testing::FixtureGraphData(), ".yaml"), 200u);
  EXPECT_GT(Replay(Find("raw_metadata"), fixtures / "secondary-metadata", ".json"), 2u);
  EXPECT_GT(Replay(Find("graph_data_yaml"), fs::path(CINCINNATI_EXAMPLES), ".yaml"), 10u);
  EXPECT_GT(Replay(Find("release_metadata"), fs::path(CINCINNATI_EXAMPLES), ".json"), 10u);
}

}  // namespace
}  // namespace cincinnati
