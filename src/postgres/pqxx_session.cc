#include "postgres/pqxx_session.h"

#include <fmt/format.h>

#include <sys/socket.h>

#include <algorithm>
#include <optional>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

#include <pqxx/pqxx>

#include "env/clock.h"

namespace cincinnati::postgres {
namespace {

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

PgResult Rows(const pqxx::result& r) {
  PgResult out;
  out.affected = r.affected_rows();
  for (const auto& row : r) {
    std::vector<std::string> cells;
    for (const auto& field : row) cells.emplace_back(field.is_null() ? "" : field.c_str());
    out.rows.push_back(std::move(cells));
  }
  return out;
}

// The process's one watchdog over calls in flight: a call that outlives its deadline has
// its socket shut down, which ends libpq's wait on it with "connection closed". The real
// steady clock on purpose: this bounds real I/O, as libpq's connect_timeout does.
class CallWatchdog {
 public:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    int socket;
    bool fired = false;
  };

  static CallWatchdog& Instance() {
    static CallWatchdog watchdog;
    return watchdog;
  }
  // Watches `socket` until Disarm; the entry stays valid until then.
  std::multimap<Clock::time_point, Entry>::iterator Arm(int socket, std::chrono::milliseconds deadline) {
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) thread_ = std::jthread([this](std::stop_token stop) { Watch(stop); });
    auto it = calls_.emplace(env::RealClock().Steady() + deadline, Entry{socket});
    ++armed_;  // wakes the watch: this deadline may be the soonest
    changed_.notify_one();
    return it;
  }
  // Whether the deadline had passed (the socket was shut down).
  bool Disarm(std::multimap<Clock::time_point, Entry>::iterator it) {
    std::lock_guard lock(mu_);
    const bool fired = it->second.fired;
    calls_.erase(it);
    return fired;
  }

 private:
  CallWatchdog() = default;
  void Watch(std::stop_token stop) {
    std::unique_lock lock(mu_);
    while (!stop.stop_requested()) {
      const auto now = env::RealClock().Steady();
      auto next = Clock::time_point::max();
      for (auto& [at, entry] : calls_) {
        if (entry.fired) continue;
        if (at > now) {
          next = at;
          break;
        }
        // Under mu_: the call is still armed, so its connection (and descriptor) is open.
        ::shutdown(entry.socket, SHUT_RDWR);
        entry.fired = true;
      }
      const uint64_t seen = armed_;
      if (next == Clock::time_point::max()) {
        changed_.wait(lock, stop, [&] { return armed_ != seen; });
      } else {
        changed_.wait_until(lock, stop, next, [&] { return armed_ != seen; });
      }
    }
  }

  std::mutex mu_;
  std::condition_variable_any changed_;
  std::multimap<Clock::time_point, Entry> calls_;  // by deadline
  uint64_t armed_ = 0;  // calls armed so far
  std::jthread thread_;  // last: stops (and is joined) before the rest goes
};

// A call under the watchdog, for its scope.
class Armed {
 public:
  Armed(int socket, std::chrono::milliseconds deadline) : it_(CallWatchdog::Instance().Arm(socket, deadline)) {}
  ~Armed() { Disarm(); }
  bool Disarm() {
    if (!armed_) return fired_;
    armed_ = false;
    fired_ = CallWatchdog::Instance().Disarm(it_);
    return fired_;
  }

 private:
  std::multimap<CallWatchdog::Clock::time_point, CallWatchdog::Entry>::iterator it_;
  bool armed_ = true, fired_ = false;
};


// Keeps libpqxx's exceptions inside this file: the first failure is kept, and the
// transaction is not committed.
class WorkTransaction final : public PostgresTransaction {
 public:
  WorkTransaction(pqxx::work& work, const std::string& name) : work_(work), name_(name) {}
  Result<PgResult> Exec(const std::string& sql, const std::vector<std::string>& params) override {
    if (!failure_.ok()) return failure_;
    try {
      return Rows(work_.exec_params(sql, pqxx::prepare::make_dynamic_params(params)));
    } catch (const pqxx::broken_connection& e) {
      failure_ = Status::IoError(fmt::format("{}: connection lost: {}", name_, Trimmed(e.what())));
    } catch (const std::exception& e) {
      failure_ = Status::IoError(fmt::format("{}: {}", name_, Trimmed(e.what())));
    }
    return failure_;
  }
  const Status& failure() const { return failure_; }

 private:
  pqxx::work& work_;
  const std::string& name_;
  Status failure_;
};


class PqxxSession final : public SessionBackend {
 public:
  PqxxSession(std::string conninfo, std::string setup, std::string name, std::chrono::milliseconds deadline)
      : conninfo(std::move(conninfo)), setup(std::move(setup)), name(std::move(name)), deadline(deadline) {}

  Result<PgResult> Exec(const std::string& sql, const std::vector<std::string>& params) override;
  Status Transaction(const std::vector<std::pair<std::string, std::vector<std::string>>>& statements) override;
  Status InTransaction(const std::function<Status(PostgresTransaction&)>& work) override;
  void Close() override { conn.reset(); }
  bool connected() const override;

 private:
  std::string conninfo, setup, name;
  std::chrono::milliseconds deadline;
  std::unique_ptr<pqxx::connection> conn;

  // Opens a connection (bounded by connect_timeout) and runs `setup` on it.
  void Connect() {
    auto c = std::make_unique<pqxx::connection>(conninfo);
    // A lost connection is this session's to reopen, never libpqxx's (deprecated in 6.x
    // along with reactivation itself, which is still on by default there).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    c->inhibit_reactivation(true);
#pragma GCC diagnostic pop
    if (!setup.empty()) {
      Armed armed(c->sock(), deadline);
      pqxx::nontransaction t(*c);
      t.exec(setup);
      t.commit();
    }
    conn = std::move(c);
  }

  template <class Work>
  Status With(Work&& work) {
    std::optional<Armed> armed;
    try {
      if (!conn || !conn->is_open()) {
        conn.reset();
        Connect();
      }
      armed.emplace(conn->sock(), deadline);
      work(*conn);
      // The work ended (its statements' failures kept by itself, InTransaction's) as the
      // deadline passed: the socket is shut down, so the connection goes.
      if (armed->Disarm()) conn.reset();
      return Status::OK();
    } catch (const std::exception& e) {
      const bool timed_out = armed && armed->Disarm();
      if (timed_out || dynamic_cast<const pqxx::broken_connection*>(&e) || (conn && !conn->is_open())) conn.reset();
      if (timed_out) return Status::IoError(fmt::format("{}: no answer within {} ms; the connection is dropped", name, deadline.count()));
      if (dynamic_cast<const pqxx::broken_connection*>(&e)) {
        return Status::IoError(fmt::format("{}: connection lost: {}", name, Trimmed(e.what())));
      }
      return Status::IoError(fmt::format("{}: {}", name, Trimmed(e.what())));
    }
  }
};

Result<PgResult> PqxxSession::Exec(const std::string& sql, const std::vector<std::string>& params) {
  PgResult out;
  CINCINNATI_RETURN_IF_ERROR(With([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    out = Rows(t.exec_params(sql, pqxx::prepare::make_dynamic_params(params)));
  }));
  return out;
}

Status PqxxSession::Transaction(const std::vector<std::pair<std::string, std::vector<std::string>>>& statements) {
  return With([&](pqxx::connection& c) {
    pqxx::work t(c);
    for (const auto& [sql, params] : statements) t.exec_params(sql, pqxx::prepare::make_dynamic_params(params));
    t.commit();
  });
}


Status PqxxSession::InTransaction(const std::function<Status(PostgresTransaction&)>& work) {
  Status outcome;
  const Status ran = With([&](pqxx::connection& c) {
    pqxx::work t(c);
    WorkTransaction tx(t, name);
    outcome = work(tx);
    if (outcome.ok() && !tx.failure().ok()) outcome = tx.failure();
    if (outcome.ok()) t.commit();  // else the destructor rolls back
  });
  if (!ran.ok()) return ran;
  return outcome;
}

bool PqxxSession::connected() const {
  try {
    return conn && conn->is_open();
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace
}  // namespace cincinnati::postgres

extern "C" __attribute__((visibility("default"))) cincinnati::postgres::SessionBackend* cincinnati_new_pqxx_session(
    int interface, const std::string& conninfo, const std::string& setup, const std::string& name,
    std::chrono::milliseconds deadline) {
  using cincinnati::postgres::NewPqxxSession;
  static_assert(std::is_same_v<decltype(&cincinnati_new_pqxx_session), NewPqxxSession>);
  if (interface != cincinnati::postgres::kPqxxSessionInterface) return nullptr;
  return new cincinnati::postgres::PqxxSession(conninfo, setup, name, deadline);
}
