// `cincinnati agent` started with listening sockets, as systemd's socket activation
// starts a service and as a hand-over starts the new agent (LISTEN_FDS, LISTEN_PID): it
// serves the socket it is given instead of binding, keeps it from the processes it
// starts, and refuses sockets meant for another process or that are not listening,
// saying why and binding --port instead. A hand-over gives a named binary the sockets
// only when it says it takes them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "agent/hand_over.h"
#include "env/listener_passing.h"
#include "env/process.h"
#include "http_server/listening_socket.h"
#include "service_util.h"

namespace cincinnati::agent {
namespace {

using namespace std::chrono_literals;
using testing::Get;
using testing::TempDir;
using testing::WaitFor;

constexpr char kCv[] = "/apis/config.openshift.io/v1/clusterversions/version";
constexpr auto kPatience = 120s;

// An agent started through /bin/sh with `listeners` at 3.. (sh keeps its pid in the
// exec, so LISTEN_PID is the agent's); `shell_prefix` may change the variables first.
// Its output goes to a log file; it is stopped (SIGTERM, then SIGKILL) at the end.
class ActivatedAgent {
 public:
  ActivatedAgent(const std::vector<int>& listeners, const std::string& shell_prefix = "") {
    const std::string script = shell_prefix + "exec \"$0\" \"$@\" >" + (dir_ / "log").string() + " 2>&1";
    std::vector<std::string> argv = {"sh", "-c", script, CINCINNATI_BINARY, "agent", "--state-dir", (dir_ / "state").string(),
                                     "--release-document",
                                     (testing::Examples() / "ocp-4x/releases/4.12.3-amd64.json").string(),
                                     "--channel", "stable-4.13", "--upstream", "http://127.0.0.1:1/graph", "--port", "0",
                                     "--testing.ports_file", (dir_ / "ports").string()};
    auto started = env::StartWithListeners("/bin/sh", argv, env::EnvironmentWith({}), listeners, "api");
    EXPECT_TRUE(started.ok()) << started.status().message();
    pid_ = started.ok() ? *started : -1;
  }
  ~ActivatedAgent() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    if (!WaitFor([&] { return ::waitpid(pid_, nullptr, WNOHANG) == pid_; }, kPatience)) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // The API's port from the ports file (0 until written).
  int WaitForPort() {
    int port = 0;
    WaitFor([&] {
      const std::string text = testing::ReadFile(dir_ / "ports");
      if (text.rfind("main=", 0) == 0) port = std::stoi(text.substr(5));
      return port > 0;
    }, kPatience);
    return port;
  }
  std::string log() const { return testing::ReadFile(dir_ / "log"); }
  pid_t pid() const { return pid_; }

 private:
  TempDir dir_;
  pid_t pid_ = -1;
};

http_server::ListeningSocket Listener() {
  auto bound = http_server::BindListeningSocket("127.0.0.1", 0, 64);
  EXPECT_TRUE(bound.ok()) << bound.status().message();
  return bound.ok() ? std::move(bound).value() : http_server::ListeningSocket(-1);
}

TEST(AgentSocketActivationTest, AnAgentServesTheListeningSocketItIsGivenAndKeepsItToItself) {
  http_server::ListeningSocket listener = Listener();
  const uint16_t given = http_server::PortOf(listener);
  ActivatedAgent agent({listener.fd()});
  listener = http_server::ListeningSocket(-1);  // only the agent holds it now
  ASSERT_EQ(agent.WaitForPort(), given) << agent.log();
  const http::Result cv = Get("http://127.0.0.1:" + std::to_string(given) + kCv);
  EXPECT_EQ(cv.status, 200) << cv.error << agent.log();
  EXPECT_NE(agent.log().find("API on 1 listening socket(s) this process was given"), std::string::npos) << agent.log();
  // Close-on-exec once taken (fdinfo's flags are octal; O_CLOEXEC is 02000000).
  const std::string fdinfo = testing::ReadFile("/proc/" + std::to_string(agent.pid()) + "/fdinfo/3");
  const size_t flags = fdinfo.find("flags:");
  ASSERT_NE(flags, std::string::npos) << fdinfo;
  EXPECT_NE(std::stoul(fdinfo.substr(flags + 6), nullptr, 8) & 02000000, 0u) << fdinfo;
}

TEST(AgentSocketActivationTest, ListenFdsForAnotherProcessAreRefusedAndTheAgentBindsItsPort) {
  http_server::ListeningSocket listener = Listener();
  const uint16_t given = http_server::PortOf(listener);
  ActivatedAgent agent({listener.fd()}, "export LISTEN_PID=1; ");
  const int port = agent.WaitForPort();
  ASSERT_GT(port, 0) << agent.log();
  EXPECT_NE(port, given);
  EXPECT_EQ(Get("http://127.0.0.1:" + std::to_string(port) + kCv).status, 200) << agent.log();
  EXPECT_NE(agent.log().find("not serving the listening sockets this process was given: LISTEN_PID=1 is for another "
                             "process"),
            std::string::npos)
      << agent.log();
}

TEST(AgentSocketActivationTest, ASocketThatIsNotListeningIsRefusedAndTheAgentBindsItsPort) {
  const int unbound = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(unbound, 0);
  ActivatedAgent agent({unbound});
  ::close(unbound);
  const int port = agent.WaitForPort();
  ASSERT_GT(port, 0) << agent.log();
  EXPECT_EQ(Get("http://127.0.0.1:" + std::to_string(port) + kCv).status, 200) << agent.log();
  EXPECT_NE(agent.log().find("LISTEN_FDS=1: descriptor 3 is not listening; none is taken"), std::string::npos) << agent.log();
}

// A hand-over passes the listener to a binary named by the release only if that binary
// says it takes one: an older agent would find its port held.
TEST(AgentSocketActivationTest, OnlyABinaryThatSaysItTakesListenersIsGivenThem) {
  EXPECT_TRUE(TakesListeners(CINCINNATI_BINARY));
  EXPECT_FALSE(TakesListeners("/bin/true"));
  EXPECT_FALSE(TakesListeners("/nonexistent/agent"));
  TempDir dir;
  testing::WriteFile(dir / "old-agent", "#!/bin/sh\necho '--port PORT  API port (0: any free port)'\n");
  ::chmod((dir / "old-agent").c_str(), 0755);
  EXPECT_FALSE(TakesListeners((dir / "old-agent").string()));
}

}  // namespace
}  // namespace cincinnati::agent
