// What the executable loads at start: the libraries of the system that only some
// commands use (libcurl, GPGME, libgit2, Graphviz, libarchive, libdeflate, and libpq
// through the PostgreSQL module) are opened when a command first calls them, not before
// `main` (env/shared_library.h says why). Read from the dynamic loader's own account
// (LD_DEBUG=files), which names every object it maps and why.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::ProcessResult;

// Runs `cincinnati ARGS` with the loader's account of files on its stderr.
ProcessResult WithLoaderAccount(const std::string& args) {
  ::setenv("LD_DEBUG", "files", 1);
  ProcessResult r = testing::RunCincinnati(args);
  ::unsetenv("LD_DEBUG");
  return r;
}

const char* const kOnDemand[] = {"libcurl.so", "libgpgme.so", "libgit2.so",   "libgvc.so", "libcgraph.so",
                                 "libarchive.so", "libdeflate.so", "libpq.so", "libpqxx", "libcincinnati_pqxx.so"};

TEST(StartupTest, BuildingAGraphLoadsNoneOfTheLibrariesOnlyOtherCommandsUse) {
  const fs::path seed = testing::Examples() / "seed";
  ProcessResult r = WithLoaderAccount("graph build --releases " + (seed / "releases").string() + " --graph-data " +
                                      (seed / "graph-data").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"nodes\""), std::string::npos);
  // The account is there: what every command needs is loaded at start.
  ASSERT_NE(r.err.find("file=libyaml-cpp.so"), std::string::npos) << r.err;
  for (const char* library : kOnDemand) EXPECT_EQ(r.err.find(std::string("file=") + library), std::string::npos) << library;
}

TEST(StartupTest, HelpLoadsNoneOfThem) {
  ProcessResult r = WithLoaderAccount("--help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(r.err.find("file=libstdc++.so"), std::string::npos) << r.err;
  for (const char* library : kOnDemand) EXPECT_EQ(r.err.find(std::string("file=") + library), std::string::npos) << library;
}

// Drawing a picture opens Graphviz when it is first called, and the picture is whole.
TEST(StartupTest, RenderingOpensGraphvizOnFirstUse) {
  const fs::path seed = testing::Examples() / "seed";
  ProcessResult r = WithLoaderAccount("graph render --releases " + (seed / "releases").string() + " --graph-data " +
                                      (seed / "graph-data").string() + " --channel beta --format svg");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t opened = r.err.find("file=libgvc.so.6");
  ASSERT_NE(opened, std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dynamically loaded by", opened), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("<svg"), std::string::npos);
  EXPECT_NE(r.out.find("</svg>"), std::string::npos);
  EXPECT_NE(r.out.find("1.3.0"), std::string::npos);
}

}  // namespace
}  // namespace cincinnati
