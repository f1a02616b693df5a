#include "operator/step_runner.h"

#include <fmt/format.h>

namespace cincinnati::upgrade {

void RecordStepStarted(UpgradeHistory& history, const std::string& condition, const std::string& now) {
  if (history.FindCondition(condition)) return;
  UpgradeCondition c;
  c.type = condition;
  c.status = "False";
  c.reason = fmt::format("{} not done", condition);
  c.message = fmt::format("{} has started", condition);
  c.start_time = now;
  history.SetCondition(std::move(c), now);
}

void RecordStep(UpgradeHistory& history, const std::string& condition, const StepResult& result, const std::string& now) {
  const UpgradeCondition* existing = history.FindCondition(condition);
  UpgradeCondition c = existing ? *existing : UpgradeCondition{condition, "False", "", "", now, "", "", ""};
  switch (result.outcome) {
    case StepOutcome::kDone: {
      // A step asked again once done (a health check after the upgrade commenced) keeps
      // saying what it skipped the first time.
      const bool was_done = c.status == "True" && c.message.starts_with(condition + " is completed");
      c.status = "True";
      c.reason = fmt::format("{} done", condition);
      if (!result.message.empty()) {
        c.message = fmt::format("{} is completed: {}", condition, result.message);
      } else if (!was_done) {
        c.message = fmt::format("{} is completed", condition);
      }
      if (c.complete_time.empty()) c.complete_time = now;
      break;
    }
    case StepOutcome::kNotDone:
      c.status = "False";
      c.message = result.message.empty() ? fmt::format("{} still in progress", condition)
                                         : fmt::format("{} still in progress: {}", condition, result.message);
      c.complete_time.clear();
      break;
    case StepOutcome::kError:
      c.status = "False";
      c.message = result.message;
      c.complete_time.clear();
      break;
  }
  history.SetCondition(std::move(c), now);
}

}  // namespace cincinnati::upgrade
