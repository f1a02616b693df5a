// What a new user trips over when starting a service (issue 17): a path that does not
// exist is an error at start-up, and a first refresh that fails says that no graph is
// served yet instead of "still serving the previous graph".
#include <gtest/gtest.h>

#include "service_util.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::RunCincinnati;
using testing::ServiceProcess;
using testing::WaitFor;

const fs::path kExample = testing::Examples() / "ocp-4x";

TEST(FirstUseTest, AMissingGraphDataDirectoryIsAnErrorAtStartUp) {
  for (const char* service : {"serve", "graph-builder"}) {
    auto r = RunCincinnati(std::string(service) + " --releases " + (kExample / "releases").string() +
                           " --graph-data /nonexistent/graph-data --service.port 0 --status.port 0");
    EXPECT_NE(r.exit_code, 0) << service;
    EXPECT_NE(r.err.find("--graph-data: /nonexistent/graph-data does not exist (or give --graph-data-image or "
                         "--graph-data-git for a remote source)"),
              std::string::npos)
        << service << ": " << r.err;
  }
  auto releases = RunCincinnati("serve --releases /nonexistent/releases --graph-data " +
                                (kExample / "graph-data").string() + " --service.port 0 --status.port 0");
  EXPECT_NE(releases.exit_code, 0);
  EXPECT_NE(releases.err.find("--releases: /nonexistent/releases does not exist"), std::string::npos) << releases.err;
}

TEST(FirstUseTest, AFirstFailedRefreshSaysNoGraphIsServedYet) {
  testing::TempDir dir;
  fs::copy(kExample / "graph-data", dir / "graph-data", fs::copy_options::recursive);
  fs::remove(dir / "graph-data" / "version");  // broken: every refresh fails
  ServiceProcess builder("graph-builder", {"--releases", (kExample / "releases").string(), "--graph-data",
                                           (dir / "graph-data").string(), "--service.pause_secs", "1"});
  ASSERT_TRUE(WaitFor([&] { return builder.log().find("graph refresh failed") != std::string::npos; })) << builder.log();
  EXPECT_NE(builder.log().find("graph refresh failed, no graph is served yet: "), std::string::npos) << builder.log();
  EXPECT_EQ(builder.log().find("still serving the previous graph"), std::string::npos) << builder.log();
}

// A registry given without a scheme is https; a plain-HTTP one answers TLS with junk.
TEST(FirstUseTest, APlainHttpRegistryWithoutASchemeGetsAHint) {
  const fs::path seed = testing::Examples() / "seed";
  ServiceProcess plain("serve", {"--releases", (seed / "releases").string(), "--graph-data",
                                 (seed / "graph-data").string()});  // any plain-HTTP server will do
  ASSERT_TRUE(WaitFor([&] { return testing::Get(plain.url("/readyz", "status")).status == 200; })) << plain.log();
  const std::string host = "127.0.0.1:" + std::to_string(plain.port("main"));
  auto r = RunCincinnati("release info " + host + "/org/release:1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("if it is plain HTTP, write it as http://HOST:PORT/..."), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cincinnati
