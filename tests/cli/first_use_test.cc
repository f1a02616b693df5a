// What a new user trips over when starting a service: a path that does not
// exist is an error at start-up, and a first refresh that fails says that no graph is
// served yet instead of "still serving the previous graph".
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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
  // `brakes list` against a service that takes no reports said "HTTP 404: " and nothing more.
  auto brakes = RunCincinnati("brakes list --url " + plain.url("/api/upgrades_info"));
  EXPECT_EQ(brakes.exit_code, 1);
  EXPECT_NE(brakes.err.find("this service takes no update reports (start it with --reports.state_dir"), std::string::npos)
      << brakes.err;
}

// A socket listening on an ephemeral 127.0.0.1 port (another program, as far as the demo
// knows); port() names it.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    fcntl(fd_, F_SETFL, O_NONBLOCK);
  }
  ~Listener() { close(fd_); }
  int port() const { return port_; }
  bool contacted() const {
    int c = accept(fd_, nullptr, nullptr);
    if (c >= 0) close(c);
    return c >= 0;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// scripts/update-demo.sh with its four ports (0 for a free one).
testing::ProcessResult RunDemo(int registry, int serve, int status, int agent) {
  testing::TempDir tmp;
  std::vector<std::unique_ptr<Listener>> free_ports;  // held, then released, for distinct free ports
  auto port = [&](int p) {
    if (p) return p;
    free_ports.push_back(std::make_unique<Listener>());
    return free_ports.back()->port();
  };
  const std::string env = "DEMO_REGISTRY_PORT=" + std::to_string(port(registry)) + " DEMO_SERVE_PORT=" +
                          std::to_string(port(serve)) + " DEMO_STATUS_PORT=" + std::to_string(port(status)) +
                          " DEMO_AGENT_PORT=" + std::to_string(port(agent)) + " CINCINNATI_BIN=" + CINCINNATI_BINARY;
  free_ports.clear();
  const fs::path script = testing::Examples().parent_path() / "scripts" / "update-demo.sh";
  const std::string cmd = env + " timeout 60 bash " + script.string() + " --check >" + (tmp / "out").string() + " 2>" +
                          (tmp / "err").string() + " </dev/null";
  const int status_code = std::system(cmd.c_str());
  return {WIFEXITED(status_code) ? WEXITSTATUS(status_code) : -1, testing::ReadFile(tmp / "out"),
          testing::ReadFile(tmp / "err")};
}

// The demo used to check only that something answered on its ports: with another agent
// on its agent port it upgraded that agent and, on exit, killed it.
TEST(UpdateDemoTest, ATakenPortIsRefusedBeforeAnythingStarts) {
  Listener other;
  auto agent = RunDemo(0, 0, 0, other.port());
  EXPECT_EQ(agent.exit_code, 1) << agent.err;
  EXPECT_EQ(agent.err, "error: port " + std::to_string(other.port()) +
                           " (for the agent) is taken on 127.0.0.1; set DEMO_AGENT_PORT to a free port\n");
  EXPECT_EQ(agent.out, "");
  auto registry = RunDemo(other.port(), 0, 0, 0);
  EXPECT_EQ(registry.exit_code, 1);
  EXPECT_NE(registry.err.find("(for the registry) is taken on 127.0.0.1; set DEMO_REGISTRY_PORT"), std::string::npos)
      << registry.err;
  EXPECT_FALSE(other.contacted()) << "the demo talked to a program it did not start";
  const int free_port = Listener().port();  // closed again: free
  auto twice = RunDemo(0, free_port, 0, free_port);
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_NE(twice.err.find("is given twice; set DEMO_AGENT_PORT"), std::string::npos) << twice.err;
}

// scripts/run.sh printed 8081 and 9081 whatever ports it was given, and never named the
// graph page.
TEST(RunScriptTest, TheBannerNamesThePageAndThePortsGiven) {
  int service_port = 0, status_port = 0;
  {
    Listener a, b;  // two distinct free ports, released before the service binds them
    service_port = a.port();
    status_port = b.port();
  }
  const fs::path script = testing::Examples().parent_path() / "scripts" / "run.sh";
  testing::ChildProcess run({"/usr/bin/env", std::string("CINCINNATI_BIN=") + CINCINNATI_BINARY, "bash", script.string(),
                             "--service.port", std::to_string(service_port), "--status.port=" + std::to_string(status_port)});
  const std::string base = "http://127.0.0.1:" + std::to_string(service_port);
  ASSERT_TRUE(WaitFor([&] { return testing::Get(base + "/").body.find("<title>Update graph</title>") != std::string::npos; },
                      std::chrono::seconds(60)))
      << run.log();
  // The page is up before the first graph is built; readiness follows.
  EXPECT_TRUE(WaitFor([&] { return testing::Get("http://127.0.0.1:" + std::to_string(status_port) + "/readyz").status == 200; },
                      std::chrono::seconds(60)))
      << run.log();
  const std::string banner = run.log();
  EXPECT_NE(banner.find("graph page: " + base + "/ "), std::string::npos) << banner;
  EXPECT_NE(banner.find("graph API:  " + base + "/api/upgrades_info/graph?channel=stable-4.13"), std::string::npos) << banner;
  EXPECT_NE(banner.find("status:     http://127.0.0.1:" + std::to_string(status_port) + "/readyz"), std::string::npos) << banner;
  EXPECT_EQ(banner.find(":8081"), std::string::npos) << banner;
  EXPECT_EQ(run.Stop(), 0) << run.log();
}

// A busy port stopped run.sh only after its whole banner, with serve's bind error and
// no word on how to choose another.
// Both busy ports are named in one run, not one per run.
TEST(RunScriptTest, ABusyPortIsSaidFirstWithTheFlagThatChoosesAnother) {
  Listener other, status_routes;  // each holds its port for the whole test
  const fs::path script = testing::Examples().parent_path() / "scripts" / "run.sh";
  testing::TempDir tmp;
  const std::string cmd = std::string("CINCINNATI_BIN=") + CINCINNATI_BINARY + " timeout 60 bash " + script.string() +
                          " --service.port " + std::to_string(other.port()) + " --status.port " +
                          std::to_string(status_routes.port()) + " >" + (tmp / "out").string() + " 2>" + (tmp / "err").string() +
                          " </dev/null";
  const int status = std::system(cmd.c_str());
  const testing::ProcessResult r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, testing::ReadFile(tmp / "out"),
                                 testing::ReadFile(tmp / "err")};
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "") << "no banner for a service that cannot start";
  EXPECT_NE(r.err.find("error: port " + std::to_string(other.port()) +
                       " on 127.0.0.1 (for the service) is taken; choose another with --service.port"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("error: port " + std::to_string(status_routes.port()) +
                       " on 127.0.0.1 (for its status routes) is taken; choose another with --status.port"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace cincinnati
