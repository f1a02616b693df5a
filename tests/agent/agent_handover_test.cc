// Updates under hand-over, kill -9 and a full disk, end to end on real parts (the
// fixture of update_test_fixture.h): the agent always hands over to a new process,
// resumes whatever moment it is killed at, and never completes a wrong update.
#include <poll.h>
#include <sys/syscall.h>

#include "update_test_fixture.h"

namespace cincinnati::agent {

using kube::WriteJson;
using kube::TextOf;
using kube::BoolOf;
using kube::SetMember;
namespace {

using namespace update_test;

// Every update hands over: the agent applies its own manifests, then re-executes itself
// and the new process goes on from the state directory on the same port. Forty updates
// in a row (ten under the sanitizers; `scripts/test.sh --stress N` repeats them), the
// first half with no component connected (the update then waits on them, and the next
// request starts another one), the second half with components that complete each
// update: every time a new process answers, and nothing is left listening in its way.
#ifdef CINCINNATI_SANITIZED
constexpr int kHandOvers = 10;  // the sanitizers look for memory errors in each, not for a rare race
#else
constexpr int kHandOvers = 40;
#endif

TEST_F(UpdateTest, TheHandOverAlwaysHandsOver) {
  const std::string first = Push("4.1.1", "4.1.0"), second = Push("4.1.2", "4.1.1");
  Sign(first);
  Sign(second);
  auto agent = StartAgent();
  const std::string api = agent->url("");
  int64_t pid = AgentPid(api);
  ASSERT_GT(pid, 0);
  std::vector<std::unique_ptr<testing::ChildProcess>> components;
  for (int round = 0; round < kHandOvers; ++round) {
    SCOPED_TRACE("hand-over " + std::to_string(round + 1));
    if (round == kHandOvers / 2) {
      for (const char* name : {"ingress", "dns"}) {
        components.push_back(std::make_unique<testing::ChildProcess>(std::vector<std::string>{
            CINCINNATI_BINARY, "component", "--agent", api, "--name", name, "--version", "4.1.0", "--rollout-seconds", "0"}));
      }
    }
    const bool odd = round % 2;
    Request(*agent, odd ? second : first, odd ? "4.1.2" : "4.1.1", /*force=*/true);
    int64_t next = 0;
    ASSERT_TRUE(WaitFor([&] {
      next = AgentPid(api);
      return next > 0 && next != pid;
    }, kPatience)) << "no agent answers after the hand-over\n" << agent->log();
    pid = next;
    if (round >= kHandOvers / 2) {  // with components, each update completes before the next
      ASSERT_TRUE(WaitFor([&] {
        const JsonValue cv = Json(Get(api + kCv).body);
        return TextOf(At(HistoryEntry(cv, 0), {"state"})) == "Completed" &&
               TextOf(At(HistoryEntry(cv, 0), {"version"})) == (odd ? "4.1.2" : "4.1.1");
      }, kPatience)) << WriteJson(Json(Get(api + kCv).body), 2);
    }
  }
  EXPECT_EQ(agent->log().find("cannot listen"), std::string::npos) << agent->log();
  EXPECT_EQ(testing::Count(agent->log(), "handed over to"), static_cast<size_t>(kHandOvers));
}

// The old agent was killed after it recorded the hand-over and before its successor
// started (or the agent restarted in place): the agent that finds the hand-over under
// way, without its id, hands over again instead of taking itself for the new agent.
TEST_F(UpdateTest, AHandOverCutShortIsDoneAgain) {
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  auto agent = StartAgent();
  const std::string api = agent->url("");
  const int port = std::stoi(api.substr(api.rfind(':') + 1));
  Request(*agent, target, "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "ingress") == "4.1.1"; }, kPatience)) << agent->log();
  StopAgentAt(api);

  // The state as the kill left it: the agent's own group applied, the hand-over recorded.
  const fs::path progress_file = state_ / "agent" / "agentstate" / "update.json";
  JsonValue progress = Json(testing::ReadFile(progress_file));
  SetMember(progress, "phase", JsonValue("HandingOver"));
  SetMember(progress, "nextGroup", JsonValue(int64_t(0)));
  SetMember(progress, "handOverId", JsonValue("the-agent-that-never-started"));
  WriteFile(progress_file, WriteJson(progress, 2));

  agent = StartAgent({}, port, /*hands_over=*/true);
  const int64_t restarted = agent->pid();
  int64_t successor = 0;
  ASSERT_TRUE(WaitFor([&] {
    successor = AgentPid(api);
    return successor > 0 && successor != restarted;
  }, kPatience)) << agent->log();
  EXPECT_NE(agent->log().find("handing over again"), std::string::npos) << agent->log();
  ASSERT_TRUE(WaitFor([&] {
    return TextOf(At(Json(Get(api + "/apis/agent.cincinnati.openshift.io/v1/updateprogress").body), {"phase"})) == "Applying";
  }, kPatience));
  Report(*agent, "ingress", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "dns") == "4.1.1"; }, kPatience)) << WriteJson(Cv(*agent), 2);
}

// A small tmpfs mounted for the test (needs CAP_SYS_ADMIN); unmounted at the end.
class SmallDisk {
 public:
  explicit SmallDisk(size_t bytes) {
    mounted_ = ::mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, fmt::format("size={}", bytes).c_str()) == 0;
    error_ = mounted_ ? "" : std::strerror(errno);
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  fs::path path() const { return dir_.path(); }
  // Fills the disk but for `spare` bytes.
  void FillAllBut(size_t spare) {
    const std::string block(4096, 'f');
    int fd = ::open((dir_ / "filler").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    while (::write(fd, block.data(), block.size()) == static_cast<ssize_t>(block.size())) {
    }
    ::close(fd);
    std::error_code ec;
    fs::resize_file(dir_ / "filler", fs::file_size(dir_ / "filler", ec) - spare, ec);
  }
  void Free() { fs::remove(dir_ / "filler"); }

 private:
  TempDir dir_;
  bool mounted_ = false;
  std::string error_;
};

// The agent's state on a disk that fills up: the download fails with the disk's own
// words (never as a bad payload), the metric says so, nothing of the release is applied
// and the history does not move; once there is room again the retry completes.
TEST_F(UpdateTest, AFullDiskNeverCompletesAWrongUpdate) {
  SmallDisk disk(size_t{4} << 20);
  if (!disk.mounted()) {
    GTEST_SKIP() << "mounting a tmpfs needs CAP_SYS_ADMIN (" << disk.error()
                 << "); PayloadDownloadTest.AFullDiskIsSaidAndAPayloadChangedOnDiskIsFetchedAgain covers the same with "
                    "an injected full disk";
  }
  // A payload of about 1 MiB: larger than the room left below.
  WriteFile(manifests_ / "0000_70_big_01-configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: openshift-big\n  annotations:\n"
            "    include.release.openshift.io/self-managed-high-availability: \"true\"\ndata:\n  blob: '" +
                std::string(1 << 20, 'b') + "'\n");
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  auto agent = std::make_unique<ServiceProcess>(
      "agent", std::vector<std::string>{"--state-dir", (disk.path() / "agent").string(), "--release-image", installed_,
                                        "--upstream", "http://127.0.0.1:1/graph", "--channel", "stable-4.1",
                                        "--verification.keys", key_.keys(), "--verification.stores",
                                        "file://" + store_.path().string(), "--poll-interval", "600", "--update-retry", "1",
                                        "--port", "0"});
  ASSERT_TRUE(agent->running()) << agent->log();
  agent_urls_.push_back(agent->url(""));
  ASSERT_TRUE(WaitFor([&] { return Get(agent->url("/readyz")).status == 200; })) << agent->log();
  for (const char* name : {"ingress", "dns"}) {
    ASSERT_EQ(Send("PUT", agent->url(kOperators + std::string(name)), R"({"metadata":{"name":")" + std::string(name) + "\"}}").status, 200);
    Report(*agent, name, "4.1.0");
  }
  disk.FillAllBut(256 * 1024);
  Request(*agent, target, "4.1.1");
  JsonValue cv;
  ASSERT_TRUE(WaitFor([&] {
    cv = Cv(*agent);
    return ConditionText(cv, "ReleaseAccepted", "message").find("No space left on device") != std::string::npos;
  }, kPatience)) << WriteJson(cv, 2) << agent->log();
  EXPECT_EQ(ConditionText(cv, "ReleaseAccepted", "status"), "False");
  EXPECT_EQ(ConditionText(cv, "ReleaseAccepted", "reason"), "RetrievePayload");
  EXPECT_EQ(HistorySize(cv), 1u);
  EXPECT_EQ(TextOf(At(cv, {"status", "desired", "version"})), "4.1.0");
  EXPECT_EQ(DesiredOf(*agent, "ingress"), "") << "nothing of the release was applied";
  const std::string metrics = Get(agent->url("/metrics")).body;
  EXPECT_GE(testing::MetricValue(metrics, "cincinnati_agent_storage_errors_total{kind=\"no_space\"}"), 1) << metrics;

  disk.Free();  // room again: the retry goes through
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "ingress") == "4.1.1"; }, kPatience)) << WriteJson(Cv(*agent), 2) << agent->log();
  Report(*agent, "ingress", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "dns") == "4.1.1"; }, kPatience));
  Report(*agent, "dns", "4.1.1");
  ASSERT_TRUE(WaitFor([&] {
    cv = Cv(*agent);
    return TextOf(At(HistoryEntry(cv, 0), {"state"})) == "Completed" && TextOf(At(HistoryEntry(cv, 0), {"version"})) == "4.1.1";
  }, kPatience)) << WriteJson(cv, 2);
  auto big = Json(Get(agent->url("/apis/agent.cincinnati.openshift.io/v1/objects/configmap.openshift-big.big")).body);
  EXPECT_EQ(TextOf(At(big, {"data", "blob"})).size(), size_t{1} << 20) << "applied whole";
  const JsonValue progress = Json(Get(agent->url("/apis/agent.cincinnati.openshift.io/v1/updateprogress")).body);
  EXPECT_EQ(TextOf(At(progress, {"phase"})), "Completed");
  EXPECT_EQ(TextOf(At(progress, {"failedReason"})), "") << "the old failure is cleared: " << WriteJson(progress, 2);
  EXPECT_EQ(testing::MetricValue(Get(agent->url("/metrics")).body, "cincinnati_agent_storage_full"), 0);
  StopAgentAt(agent->url(""));
}

// The processes whose command line has `arg` as one of its arguments. A hand-over's new
// agent is found this way from the moment it is forked (before exec its command line is
// the old agent's), whether or not it has bound its port yet.
std::vector<pid_t> ProcessesWithArgument(const std::string& arg) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    // read(2), not a stream: a process that exits mid-read makes the read fail with
    // ESRCH, which libstdc++'s filebuf turns into an exception.
    std::string cmdline;
    if (int fd = ::open((entry.path() / "cmdline").c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
      char buffer[4096];
      for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;) cmdline.append(buffer, static_cast<size_t>(n));
      ::close(fd);
    }
    size_t start = 0;
    for (size_t end; (end = cmdline.find('\0', start)) != std::string::npos; start = end + 1) {
      if (cmdline.compare(start, end - start, arg) == 0) {
        pid_t pid = 0;
        std::from_chars(name.data(), name.data() + name.size(), pid);
        pids.push_back(pid);
        break;
      }
    }
  }
  return pids;
}

// Waits until `pid` has exited (a zombie counts), at most `limit`: a pidfd becomes
// readable at that moment, so this is an event, not a poll.
void WaitForExit(pid_t pid, std::chrono::milliseconds limit) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return;  // gone already
  pollfd event{fd, POLLIN, 0};
  ::poll(&event, 1, static_cast<int>(limit.count()));
  ::close(fd);
}

// kill -9 of every agent on `state_dir` until none is left (an agent killed while
// handing over may already have forked its successor).
void KillAgentsOn(const std::string& state_dir) {
  for (int tries = 0; tries < 10; ++tries) {
    const std::vector<pid_t> pids = ProcessesWithArgument(state_dir);
    if (pids.empty()) return;
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    // Waits for each to exit (a killed child of the test then stays a zombie, with an
    // empty cmdline, until reaped); the scan again finds a successor forked meanwhile.
    for (pid_t pid : pids) WaitForExit(pid, std::chrono::seconds(5));
  }
  ADD_FAILURE() << "agents on " << state_dir << " survive kill -9";
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// kill -9 of the agent at a random moment after the request (verifying, downloading,
// handing over, applying): each restart resumes, the history and objects stay whole,
// and no component is asked to roll out the same version twice.
TEST_F(UpdateTest, KillNineAtAnyStepResumesWithoutRepeatingARollout) {
  auto agent = StartAgent();
  const std::string api = agent->url("");
  const int port = std::stoi(api.substr(api.rfind(':') + 1));
  std::vector<std::unique_ptr<testing::ChildProcess>> components;
  for (const char* name : {"ingress", "dns"}) {
    components.push_back(std::make_unique<testing::ChildProcess>(std::vector<std::string>{
        CINCINNATI_BINARY, "component", "--agent", api, "--name", name, "--version", "4.1.0", "--rollout-seconds", "0.4"}));
  }
  std::mt19937 rng(4242);
  std::string previous = "4.1.0";
  for (int round = 1; round <= 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string version = "4.1." + std::to_string(round);
    const std::string image = Push(version, previous);
    Sign(image);
    Request(*agent, image, version);
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 900));
    // Every agent on the state directory dies: the one started here and, when the kill
    // lands during a hand-over, the new one it started too.
    agent->Kill();
    KillAgentsOn((state_ / "agent").string());
    // Killed during a hand-over, the restarted agent hands over again at once.
    agent = StartAgent({}, port, /*hands_over=*/true);
    JsonValue cv;
    ASSERT_TRUE(WaitFor([&] {
      cv = Cv(*agent);
      return TextOf(At(HistoryEntry(cv, 0), {"state"})) == "Completed" && TextOf(At(HistoryEntry(cv, 0), {"version"})) == version;
    }, kPatience)) << WriteJson(cv, 2) << agent->log();
    EXPECT_EQ(HistorySize(cv), static_cast<size_t>(round + 1)) << WriteJson(cv, 2);
    EXPECT_TRUE(BoolOf(At(HistoryEntry(cv, 0), {"verified"})));
    previous = version;
  }
  for (auto& c : components) {
    const std::string log = c->log();
    for (int round = 1; round <= 3; ++round) {
      EXPECT_EQ(Count(log, "rolling out 4.1." + std::to_string(round) + " "), 1u) << log;
    }
  }
}

// The agent as a container's first process (a PID namespace of its own): handing over
// by starting a new process and exiting would end the container, so it becomes the
// new agent in place, and the update goes on.
TEST_F(UpdateTest, AsProcessOneTheAgentHandsOverInPlace) {
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  TempDir ports;
  testing::ChildProcess agent(std::vector<std::string>{
      "/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child", CINCINNATI_BINARY, "agent", "--state-dir",
      (state_ / "agent").string(), "--release-image", installed_, "--upstream", "http://127.0.0.1:1/graph", "--channel",
      "stable-4.1", "--verification.keys", key_.keys(), "--verification.stores", "file://" + store_.path().string(),
      "--poll-interval", "600", "--port", "0", "--testing.ports_file", (ports / "ports").string()});
  ASSERT_TRUE(WaitFor([&] { return !testing::ReadFile(ports / "ports").empty() || !agent.running(); })) << agent.log();
  if (!agent.running()) GTEST_SKIP() << "no PID namespace here (unshare needs CAP_SYS_ADMIN): " << agent.log();
  struct KillOnExit {  // an assertion that ends the test early leaves no agent behind
    std::string dir;
    ~KillOnExit() { KillAgentsOn(dir); }
  } kill_on_exit{(state_ / "agent").string()};
  const std::string text = testing::ReadFile(ports / "ports");
  const std::string api = "http://127.0.0.1:" + text.substr(5, text.find('\n') - 5);
  ASSERT_TRUE(WaitFor([&] { return Get(api + "/readyz").status == 200; })) << agent.log();
  EXPECT_EQ(AgentPid(api), 1);
  ASSERT_EQ(Send("PATCH", api + kCv, R"({"spec":{"desiredUpdate":{"image":")" + target + R"(","version":"4.1.1"}}})").status,
            200);
  ASSERT_TRUE(WaitFor([&] {
    const JsonValue object = Json(Get(api + kOperators + "ingress").body);
    return TextOf(At(object, {"metadata", "annotations", "agent.cincinnati.openshift.io/desired-version"})) == "4.1.1";
  }, kPatience)) << agent.log();
  EXPECT_NE(agent.log().find("in place (this is process 1), with 1 listening socket(s)"), std::string::npos) << agent.log();
  for (pid_t pid : ProcessesWithArgument((state_ / "agent").string())) {
    if (pid == agent.pid()) continue;  // unshare itself
    EXPECT_EQ(testing::ReadFile(fmt::format("/proc/{}/comm", pid)), "cincinnati\n") << "the name survives the exec in place";
  }
  EXPECT_TRUE(agent.running()) << "the container lives on";
  EXPECT_EQ(AgentPid(api), 1);
  // Stopped as a container runtime stops it: SIGTERM to its first process.
  for (pid_t pid : ProcessesWithArgument((state_ / "agent").string())) {
    if (pid != agent.pid()) ::kill(pid, SIGTERM);
  }
  EXPECT_TRUE(WaitFor([&] { return !agent.running(); })) << agent.log();
}

}  // namespace
}  // namespace cincinnati::agent
