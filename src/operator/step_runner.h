// The step runner, as the MUO's: an upgrade is an ordered list of idempotent steps, each
// returning done, not done or an error. Every pass starts from the first step; a done
// step lets the runner go on, anything else stops the pass. Each step owns one condition
// of the history entry, written with the MUO's texts ("<T> has started",
// "<T> still in progress", the error text, "<T> is completed").
//
// Steps never block: a step that has to wait returns "not done" and is asked again on the
// next pass. Pure: the runner only calls the steps and writes the history entry.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "operator/upgrade_config.h"

namespace cincinnati::upgrade {

enum class StepOutcome { kDone, kNotDone, kError };

struct StepResult {
  StepOutcome outcome = StepOutcome::kDone;
  std::string message;  // kError: the error; kNotDone, kDone: optional detail (what was skipped)
  static StepResult Done() { return {StepOutcome::kDone, ""}; }
  static StepResult NotDone(std::string why = "") { return {StepOutcome::kNotDone, std::move(why)}; }
  static StepResult Error(std::string why) { return {StepOutcome::kError, std::move(why)}; }
};

template <typename Context>
struct Step {
  std::string name;       // the reference's function name, e.g. "PreUpgradeHealthCheck"
  std::string condition;  // its condition type, e.g. "ClusterHealthyBeforeUpgrade"
  std::function<StepResult(Context&)> run;
};

struct RunOutcome {
  Phase phase = Phase::kUpgrading;  // kUpgraded when every step is done
  std::string error;                // the failing step's error
  std::string step;                 // the step the pass stopped at (empty when all done)
};

// Writes the condition of a step's outcome (the texts above).
void RecordStep(UpgradeHistory& history, const std::string& condition, const StepResult& result, const std::string& now);
void RecordStepStarted(UpgradeHistory& history, const std::string& condition, const std::string& now);

template <typename Context>
RunOutcome RunSteps(const std::vector<Step<Context>>& steps, Context& context, UpgradeHistory& history, const std::string& now) {
  for (const auto& step : steps) {
    RecordStepStarted(history, step.condition, now);
    StepResult result = step.run(context);
    RecordStep(history, step.condition, result, now);
    if (result.outcome == StepOutcome::kError) return {Phase::kUpgrading, result.message, step.name};
    if (result.outcome == StepOutcome::kNotDone) return {Phase::kUpgrading, "", step.name};
  }
  return {Phase::kUpgraded, "", ""};
}

}  // namespace cincinnati::upgrade
