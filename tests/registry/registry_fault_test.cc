// Registry faults through a real HTTP proxy in front of the real docker-registry: the
// graph builder logs the cause, counts the failure, and keeps serving the last good
// graph; when the registry recovers, so does the graph builder.
#include <gtest/gtest.h>

#include "fault_proxy.h"
#include "registry_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;

using testing::FaultProxy;

double Skipped(const testing::ServiceProcess& builder) {
  return testing::MetricValue(builder, "cincinnati_gb_graph_upstream_scrape_progress{item=\"tags_skipped\"}");
}

double Errors(const testing::ServiceProcess& builder) {
  return testing::MetricValue(builder, "cincinnati_gb_graph_upstream_errors_total");
}

TEST(RegistryFaultTest, FailuresKeepTheLastGoodGraph) {
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready());
  for (const char* args : {"--version 7.0.0", "--version 7.0.1 --previous 7.0.0"}) {
    std::string tag = std::string(args).substr(10, 5);
    auto r = testing::RunCincinnati(std::string("release new ") + args + " --to " + registry.url() + "/faults/release:" + tag);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  FaultProxy proxy(registry.url());
  testing::ServiceProcess builder(
      "graph-builder", {"--upstream.registry.url", proxy.url(), "--upstream.registry.repository", "faults/release",
                        "--graph-data", (testing::Examples() / "ocp-4x/graph-data").string(), "--service.pause_secs",
                        "1", "--service.scrape_timeout", "5"});
  ASSERT_TRUE(testing::WaitFor([&] { return testing::Get(builder.url("/readiness", "status")).status == 200; }))
      << builder.log();
  const std::string good = testing::Get(builder.url("/graph")).body;
  ASSERT_NE(good.find("7.0.1+amd64"), std::string::npos);

  // 500s from the registry.
  proxy.fail_tags = true;
  ASSERT_TRUE(testing::WaitFor([&] { return Errors(builder) >= 1; }, std::chrono::seconds(30))) << builder.log();
  EXPECT_NE(builder.log().find("listing tags of faults/release: HTTP 500"), std::string::npos) << builder.log();
  EXPECT_EQ(testing::Get(builder.url("/graph")).body, good);
  proxy.fail_tags = false;

  // A registry slower than the refresh timeout.
  double before = Errors(builder);
  proxy.stall_tags_ms = 7000;
  ASSERT_TRUE(testing::WaitFor([&] { return Errors(builder) > before; }, std::chrono::seconds(30))) << builder.log();
  EXPECT_NE(builder.log().find("refresh timed out"), std::string::npos) << builder.log();
  EXPECT_EQ(testing::Get(builder.url("/graph")).body, good);
  proxy.stall_tags_ms = 0;

  // Recovery: a new release shows up again.
  auto push = [&](const std::string& version, const std::string& previous) {
    auto r = testing::RunCincinnati("release new --version " + version + " --previous " + previous + " --to " +
                                    registry.url() + "/faults/release:" + version);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  auto shows = [&](const std::string& version) {
    return testing::WaitFor([&] {
      return testing::Get(builder.url("/graph")).body.find(version + "+amd64") != std::string::npos;
    }, std::chrono::seconds(30));
  };
  push("7.0.2", "7.0.1");
  ASSERT_TRUE(shows("7.0.2")) << builder.log();
  const std::string good2 = testing::Get(builder.url("/graph")).body;

  // A new release whose blobs arrive with a wrong digest, then cut short: the tag is
  // skipped (counted, logged with the cause), never half-read into the graph, and it
  // appears once the registry serves it intact.
  for (std::atomic<bool>* fault : {&proxy.corrupt_blobs, &proxy.truncate_blobs}) {
    std::string version = fault == &proxy.corrupt_blobs ? "7.0.3" : "7.0.4";
    std::string previous = fault == &proxy.corrupt_blobs ? "7.0.2" : "7.0.3";
    const std::string before_graph = testing::Get(builder.url("/graph")).body;
    *fault = true;
    push(version, previous);
    ASSERT_TRUE(testing::WaitFor([&] {
      return Skipped(builder) == 1 && builder.log().find(":" + version + ": skipped: blob sha256:") != std::string::npos;
    }, std::chrono::seconds(40))) << builder.log();
    EXPECT_NE(builder.log().find("content does not match digest"), std::string::npos) << builder.log();
    EXPECT_EQ(testing::Get(builder.url("/graph")).body, before_graph);
    EXPECT_EQ(testing::Get(builder.url("/readiness", "status")).status, 200);
    *fault = false;
    ASSERT_TRUE(shows(version)) << builder.log();
    EXPECT_EQ(Skipped(builder), 0);
  }
  const std::string good4 = testing::Get(builder.url("/graph")).body;

  // The registry goes away entirely, then comes back.
  double errors_before = Errors(builder);
  int port = proxy.port();
  proxy.Down();
  ASSERT_TRUE(testing::WaitFor([&] { return Errors(builder) >= errors_before + 2; }, std::chrono::seconds(40)))
      << builder.log();
  EXPECT_NE(builder.log().find("Couldn't connect to server"), std::string::npos) << builder.log();
  EXPECT_EQ(testing::Get(builder.url("/graph")).body, good4);
  proxy.Up(port);
  push("7.0.5", "7.0.4");
  ASSERT_TRUE(shows("7.0.5")) << builder.log();
  EXPECT_NE(builder.log().find("graph refresh succeeded again"), std::string::npos);
  EXPECT_EQ(builder.Stop(), 0);
}

}  // namespace
}  // namespace cincinnati
