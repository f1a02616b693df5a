// GraphGeneration: the number of the graph a service serves, which only grows (issue
// 32): signed answers carry it, and an agent refuses an answer of an older generation
// than one it has accepted. A graph whose bytes differ from the last one's gets
// max(last + 1, the clock in milliseconds); the same bytes keep their number (a restart
// that builds the same graph does not move it). With a state file the last number and
// its graph's hash are written durably before the graph is served, so that neither a
// restart nor a clock set back makes the number go back; without one, the clock alone
// keeps it growing across restarts. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/status.h"
#include "env/clock.h"

namespace cincinnati::server {

class GraphGeneration {
 public:
  // `state_file` empty: no file. A file that cannot be read is an error (a generation
  // that might go back must not be guessed).
  static Result<std::unique_ptr<GraphGeneration>> Open(std::string state_file, env::Clock& clock);
  // No file: the clock alone.
  static std::unique_ptr<GraphGeneration> InMemory(env::Clock& clock);

  // The generation of the graph whose content hash is `hash`. A state file that cannot
  // be written is logged, and the number is still given (the clock keeps it growing).
  uint64_t For(std::string_view hash);

 private:
  GraphGeneration(std::string state_file, env::Clock& clock) : state_file_(std::move(state_file)), clock_(clock) {}

  const std::string state_file_;
  env::Clock& clock_;
  std::mutex mu_;
  uint64_t last_ = 0;  // under mu_
  std::string last_hash_;
};

}  // namespace cincinnati::server
