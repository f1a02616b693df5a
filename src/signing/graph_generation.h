// GraphGeneration: the number of the graph a service serves, which only grows. Signed
// answers carry it, and a checker refuses an answer of an older generation than one it
// has taken. A graph whose bytes differ from the last one's gets max(last + 1, the clock
// in milliseconds); the same bytes keep their number (a restart that builds the same
// graph does not move it). With a state file the number and its graph's hash are written
// durably before the graph is served, so that neither a restart nor a clock set back by
// less than kMaxGenerationLead makes the number go back; without one, the clock alone
// keeps it growing.
//
// A number never runs ahead of the clock. Checkers (agents, policy engines) refuse a
// generation more than kMaxGenerationLead (core/answer_signature.h) ahead of their own
// clock, so a service whose clock was once ahead (an NTP mis-step, a VM restored with a
// bad clock) would otherwise lock every checker out with the number it kept. When the
// number held is more than that lead ahead of the clock, at start or at any later call,
// it is given up: the graph is numbered now + kMaxGenerationLead, which is no lower than
// any number a checker with a right clock could have taken (it took none more than the
// lead ahead of its clock, and the clock has only moved on since), so none of those sees
// a rollback. A checker whose own clock was ahead too, and took the given-up number,
// refuses the new one as rolled back; the given-up number is kept (in the state file),
// and once the clock passes it the graph is numbered past it, so such a checker takes
// answers again without anyone deleting files. Each give-up is logged and counted.
// A clock set back by more than the lead looks the same here as one that was ahead and
// was corrected: the number is given up then too, and checkers with right clocks that
// took it see a rollback for as long as this clock stays behind (docs/clocks-ahead.md
// says why that is the lesser harm: a right clock is never set back that far).
//
// Shared by replicas (Shared: a row of table graph_generation on PostgreSQL): each
// number is taken in a transaction that locks the row, with the same rules, so every
// graph builder behind one address gives the same bytes the same number, a graph that
// differs from the last one any replica numbered a higher one, and a restarted replica
// continues from the row. When the database cannot be reached the number is given from
// this process's last one and the clock (logged), as without a file.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/status.h"
#include "env/clock.h"

namespace cincinnati::postgres {
class PostgresSession;
}

namespace cincinnati::server {

class GraphGeneration {
 public:
  // `state_file` empty: no file. A file that cannot be read is an error (a generation
  // that might go back must not be guessed).
  static Result<std::unique_ptr<GraphGeneration>> Open(std::string state_file, env::Clock& clock);
  // No file: the clock alone.
  static std::unique_ptr<GraphGeneration> InMemory(env::Clock& clock);
  // On PostgreSQL (`conninfo`), shared with every replica that names it; the table is
  // created when missing.
  static Result<std::unique_ptr<GraphGeneration>> Shared(const std::string& conninfo, env::Clock& clock);
  ~GraphGeneration();

  // The generation of the graph whose content hash is `hash`. A state file that cannot
  // be written is logged, and the number is still given (the clock keeps it growing).
  uint64_t For(std::string_view hash);

  // How many seconds the number last given is ahead of the clock now (0 when it is not).
  double SecondsAhead() const;
  // Numbers given up because they were too far ahead of the clock.
  uint64_t given_up() const { return given_up_.load(); }

 private:
  GraphGeneration(std::string state_file, env::Clock& clock);
  int64_t NowMs() const;
  uint64_t Next(std::string_view hash, int64_t now_ms);  // under mu_
  void Keep(uint64_t number, std::string_view hash);      // under mu_
  // The number from the shared row (under mu_); an error leaves the local state as it was.
  Result<uint64_t> ForShared(std::string_view hash, int64_t now_ms);

  const std::string state_file_;
  env::Clock& clock_;
  std::unique_ptr<postgres::PostgresSession> shared_;  // under mu_; null: not shared
  bool shared_failing_ = false;                         // under mu_: the outage is logged once
  mutable std::mutex mu_;
  uint64_t last_ = 0;  // under mu_
  std::string last_hash_;
  uint64_t abandoned_ = 0;  // under mu_: the highest number given up, until the clock passes it
  std::atomic<uint64_t> last_given_{0};
  std::atomic<uint64_t> given_up_{0};
};

}  // namespace cincinnati::server
