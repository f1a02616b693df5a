// The environment layer's processes (spawn, capture, time-outs, process groups, exit
// statuses) and its file queries, listings, removals and lock hand-offs.
#include <gtest/gtest.h>
#include <fstream>
#include <sys/stat.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "env/file_system.h"
#include "env/process.h"
#include "test_util.h"

namespace cincinnati {
namespace {

using testing::TempDir;
using namespace std::chrono_literals;

env::SpawnOptions Shell(const std::string& script) {
  env::SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.clear_signal_mask = true;
  return o;
}

TEST(ProcessTest, CapturesOutputAndReportsTheExitCode) {
  env::SpawnOptions o = Shell("echo out; echo err >&2; exit 3");
  o.stdout_to = o.stderr_to = env::Redirect::Capture();
  auto p = env::Process::Spawn(o);
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::string output;
  EXPECT_TRUE((*p)->DrainOutput(10s, [&](std::string_view piece) { output += piece; }));
  const env::ExitStatus status = (*p)->Wait();
  EXPECT_TRUE(status.exited);
  EXPECT_EQ(status.code, 3);
  EXPECT_EQ(output, "out\nerr\n");
}

TEST(ProcessTest, EnvironmentWorkingDirectoryAndFileRedirection) {
  TempDir dir;
  env::SpawnOptions o = Shell("echo \"$CINCINNATI_PROCESS_TEST\"; pwd");
  o.environment = env::EnvironmentWith({{"CINCINNATI_PROCESS_TEST", "yes"}});
  o.working_directory = dir.path().string();
  o.stdout_to = env::Redirect::File((dir / "out.txt").string());
  o.stdin_to = env::Redirect::DevNull();
  auto p = env::Process::Spawn(o);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ((*p)->Wait().code, 0);
  auto text = env::ReadFile(dir / "out.txt", 4096);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "yes\n" + std::filesystem::canonical(dir.path()).string() + "\n");
}

TEST(ProcessTest, ATimeOutThenAKillOfTheGroupEndsEverythingItStarted) {
  env::SpawnOptions o = Shell("sleep 30 & sleep 30");
  o.stdout_to = o.stderr_to = env::Redirect::Capture();
  o.own_process_group = true;
  auto p = env::Process::Spawn(o);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_FALSE((*p)->DrainOutput(200ms, [](std::string_view) {}));  // the sleeps hold the pipe
  EXPECT_FALSE((*p)->WaitFor(50ms).has_value());
  (*p)->SignalGroup(SIGKILL);
  const env::ExitStatus status = (*p)->Wait();
  EXPECT_FALSE(status.exited);
  EXPECT_EQ(status.signal, SIGKILL);
  // The background sleep was in the group: the pipe's last writer is gone.
  EXPECT_TRUE((*p)->DrainOutput(10s, [](std::string_view) {}));
}

TEST(ProcessTest, AProgramThatCannotRunIsAnErrorNamingWhy) {
  env::SpawnOptions o;
  o.argv = {"/nonexistent/cincinnati-no-such-program"};
  auto p = env::Process::Spawn(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("No such file"), std::string::npos) << p.status().message();
}

TEST(FileSystemQueriesTest, StatListTreeAndRemove) {
  TempDir dir;
  env::FileSystem& fs = env::DefaultFileSystem();
  ASSERT_TRUE(fs.CreateDirectories(dir / "a/b").ok());
  ASSERT_TRUE(env::WriteNewFile(dir / "a/b/f.txt", "12345").ok());
  ASSERT_TRUE(env::WriteNewFile(dir / "top.txt", "x").ok());
  EXPECT_TRUE(fs.IsDirectory(dir / "a"));
  EXPECT_TRUE(fs.IsRegularFile(dir / "top.txt"));
  EXPECT_EQ(fs.Stat(dir / "a/b/f.txt").size, 5u);
  EXPECT_FALSE(fs.Exists(dir / "missing"));
  auto listed = fs.ListDirectory(dir.path());
  ASSERT_TRUE(listed.ok());
  std::set<std::string> names;
  for (const auto& e : *listed) names.insert(e.relative.string());
  EXPECT_EQ(names, (std::set<std::string>{"a", "top.txt"}));
  auto tree = fs.ListTree(dir.path());
  ASSERT_TRUE(tree.ok());
  std::set<std::string> all;
  for (const auto& e : *tree) all.insert(e.relative.generic_string());
  EXPECT_EQ(all, (std::set<std::string>{"a", "a/b", "a/b/f.txt", "top.txt"}));
  EXPECT_EQ(fs.ListDirectory(dir / "missing").status().code(), Status::Code::kNotFound);
  EXPECT_TRUE(fs.RemoveFile(dir / "top.txt").ok());
  EXPECT_TRUE(fs.RemoveFile(dir / "top.txt").ok());  // missing is fine
  EXPECT_TRUE(fs.RemoveTree(dir / "a").ok());
  EXPECT_FALSE(fs.Exists(dir / "a"));
}

TEST(FileLockTest, AnUnlockedFileCanBeTakenByAnotherAndTellsWhoHoldsIt) {
  TempDir dir;
  auto a = env::FileLock::Open(dir / "leader.lock", 0644);
  auto b = env::FileLock::Open(dir / "leader.lock", 0644);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(*(*a)->TryLock());
  ASSERT_TRUE((*a)->WriteHolder("replica-a\n").ok());
  EXPECT_FALSE(*(*b)->TryLock());
  EXPECT_EQ((*b)->ReadHolder(), "replica-a\n");
  (*a)->Unlock();
  EXPECT_TRUE(*(*b)->TryLock());
}

// A child that must not outlive its spawner: it gets the chosen signal (SIGKILL here, so
// not even a shell that ignores SIGTERM stays) when the thread that spawned it ends.
TEST(ProcessTest, AChildDiesWithItsSpawningThreadByTheSignalChosen) {
  TempDir dir;
  const std::string ready = (dir.path() / "ready").string();
  ASSERT_EQ(::mkfifo(ready.c_str(), 0600), 0);  // the shell says it runs through it: a read that waits for it
  std::unique_ptr<env::Process> child;
  std::thread spawner([&] {
    env::SpawnOptions o = Shell("trap '' TERM; echo up > " + ready + "; while :; do sleep 1; done");
    o.die_with_parent = true;
    o.parent_death_signal = SIGKILL;
    auto spawned = env::Process::Spawn(o);
    ASSERT_TRUE(spawned.ok()) << spawned.status().message();
    child = std::move(*spawned);
    // The shell runs, so its death signal is set: the thread may end now (one that
    // ended before the child set it would leave it none).
    std::ifstream said(ready);  // opens once the shell opens it to write
    std::string line;
    std::getline(said, line);
  });
  spawner.join();
  ASSERT_TRUE(child);
  const std::optional<env::ExitStatus> ended = child->WaitFor(60s);  // a safety net: it ends as the thread does
  ASSERT_TRUE(ended.has_value());
  EXPECT_FALSE(ended->exited);
  EXPECT_EQ(ended->signal, SIGKILL);
}

}  // namespace
}  // namespace cincinnati
