// The table of the update's phase moves (agent/update_phases.h): exactly the moves the
// runner makes, every phase reachable, and no way to Completed but through Applying.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "agent/update_phases.h"

namespace cincinnati::agent {
namespace {

using P = UpdatePhase;
const std::vector<P> kAll = {P::kIdle,     P::kVerifying,   P::kDownloading, P::kLoading,
                             P::kApplying, P::kHandingOver, P::kCompleted,   P::kFailed};

TEST(UpdatePhasesTest, OnlyTheMovesTheRunnerMakesAreAllowed) {
  const std::map<P, std::set<P>> allowed_from = {
      {P::kVerifying, {P::kIdle, P::kVerifying, P::kDownloading, P::kLoading, P::kApplying, P::kHandingOver,
                       P::kCompleted, P::kFailed}},
      {P::kDownloading, {P::kVerifying, P::kLoading, P::kApplying, P::kHandingOver}},
      {P::kLoading, {P::kDownloading}},
      {P::kApplying, {P::kLoading, P::kHandingOver}},
      {P::kHandingOver, {P::kApplying, P::kHandingOver}},
      {P::kCompleted, {P::kApplying}},
      {P::kFailed, {P::kVerifying, P::kDownloading, P::kLoading}},
      {P::kIdle, {P::kVerifying, P::kDownloading, P::kLoading, P::kFailed}},
  };
  for (P from : kAll) {
    for (P to : kAll) {
      EXPECT_EQ(UpdatePhaseMoveAllowed(from, to), allowed_from.at(to).count(from) == 1)
          << UpdatePhaseName(from) << " -> " << UpdatePhaseName(to);
    }
  }
}

TEST(UpdatePhasesTest, EveryPhaseIsReachedAndCompletedOnlyThroughApplying) {
  // From Idle, following allowed moves, every phase is reached.
  std::set<P> seen = {P::kIdle};
  std::vector<P> todo = {P::kIdle};
  while (!todo.empty()) {
    P from = todo.back();
    todo.pop_back();
    for (P to : kAll) {
      if (UpdatePhaseMoveAllowed(from, to) && seen.insert(to).second) todo.push_back(to);
    }
  }
  EXPECT_EQ(seen.size(), kAll.size());
  // An update is never Completed, nor Applying, without having been Loading (verified
  // and downloaded): remove Loading and neither can be reached from Idle.
  seen = {P::kIdle};
  todo = {P::kIdle};
  while (!todo.empty()) {
    P from = todo.back();
    todo.pop_back();
    for (P to : kAll) {
      if (to != P::kLoading && UpdatePhaseMoveAllowed(from, to) && seen.insert(to).second) todo.push_back(to);
    }
  }
  EXPECT_EQ(seen.count(P::kApplying), 0u);
  EXPECT_EQ(seen.count(P::kCompleted), 0u);
  EXPECT_FALSE(UpdatePhaseMoveAllowed(P::kApplying, P::kFailed));  // a component's trouble waits, never fails
}

// What only one phase has goes with it: given with the move, gone with the next one,
// and another phase's data is refused. The stored document keeps its flat fields.
TEST(UpdatePhasesTest, ThePhasesDataMovesWithThePhase) {
  UpdateProgress progress;
  UpdateStatus status;
  ASSERT_TRUE(MoveUpdatePhase(progress, P::kVerifying, status));
  EXPECT_FALSE(MoveUpdatePhase(progress, P::kDownloading, status, FailedPhase{"R", "M", 7}));
  EXPECT_EQ(progress.phase, P::kVerifying);
  ASSERT_TRUE(status.failure);
  EXPECT_EQ(status.failure->reason, "UpdatePhaseInvalid");
  ASSERT_TRUE(MoveUpdatePhase(progress, P::kFailed, status, FailedPhase{"ImageVerificationFailed", "no key", 60}));
  ASSERT_TRUE(progress.failed());
  EXPECT_EQ(progress.failed()->retry_at, 60);
  const JsonValue stored = ToJson(progress);
  EXPECT_EQ(kube::TextOf(*kube::FindMember(stored, "failedReason")), "ImageVerificationFailed");
  EXPECT_EQ(kube::IntegerOf(*kube::FindMember(stored, "retryAt")), 60);
  auto back = UpdateProgressFromJson(stored);
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->failed());
  EXPECT_EQ(back->failed()->message, "no key");
  ASSERT_TRUE(MoveUpdatePhase(progress, P::kVerifying, status));
  EXPECT_FALSE(progress.failed()) << "a retry starts over";
  EXPECT_EQ(kube::TextOf(*kube::FindMember(ToJson(progress), "failedReason")), "");

  auto handing_over = UpdateProgressFromJson(*kube::ParseJson(R"({"phase":"HandingOver","handOverId":"abc"})"));
  ASSERT_TRUE(handing_over.ok());
  ASSERT_TRUE(handing_over->handing_over());
  EXPECT_EQ(handing_over->handing_over()->id, "abc");
  EXPECT_EQ(kube::TextOf(*kube::FindMember(ToJson(*handing_over), "handOverId")), "abc");
}

// Each phase the update enters is one line of the agent's log, naming the release: the
// log used to say nothing between "signal 15 received" and "handed over to ...".
TEST(UpdatePhasesTest, EachPhaseIsLoggedOnceNamingTheRelease) {
  std::ostringstream out;
  auto logger = std::make_shared<spdlog::logger>("phases", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_pattern("%v");
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  UpdateProgress progress;
  progress.version = "4.1.1";
  progress.image = "quay.io/r@sha256:1";
  UpdateStatus status;
  for (P to : {P::kVerifying, P::kDownloading, P::kLoading, P::kApplying, P::kHandingOver, P::kHandingOver,
               P::kApplying, P::kCompleted}) {
    EXPECT_TRUE(MoveUpdatePhase(progress, to, status));
  }
  spdlog::set_default_logger(previous);
  EXPECT_EQ(out.str(),
            "update: verifying the signatures of 4.1.1 (quay.io/r@sha256:1)\n"
            "update: downloading 4.1.1 (quay.io/r@sha256:1)\n"
            "update: loading the payload of 4.1.1 (quay.io/r@sha256:1)\n"
            "update: applying 4.1.1 (quay.io/r@sha256:1): the agent first, then each component in order\n"
            "update: handing over to the new release's agent for 4.1.1 (quay.io/r@sha256:1)\n"
            "update: applying 4.1.1 (quay.io/r@sha256:1): the agent first, then each component in order\n"
            "update: completed: 4.1.1 (quay.io/r@sha256:1) is applied and every component reports it\n");
}

}  // namespace
}  // namespace cincinnati::agent
