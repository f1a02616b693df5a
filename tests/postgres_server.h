// PostgresServer: a real PostgreSQL server (Debian's postgresql package) for one test,
// in a temporary directory, reached only through a Unix socket there (no TCP port, so
// parallel tests never collide), with trust authentication, stopped (fast shutdown)
// when the object dies. PostgreSQL refuses to run as root: as root (CI containers) it
// runs as the `postgres` user that the package creates. Every wait is bounded.
#pragma once

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "postgres/postgres_session.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati::testing {

class PostgresServer {
 public:
  PostgresServer() {
    const std::filesystem::path bin = BinDir();
    if (bin.empty()) {
      error_ = "no PostgreSQL server under /usr/lib/postgresql (scripts/deps.sh installs postgresql)";
      return;
    }
    const std::filesystem::path home = dir_ / "pg";
    std::filesystem::create_directories(home);
    if (::geteuid() == 0) {
      const passwd* user = ::getpwnam("postgres");
      if (!user || ::chown(home.c_str(), user->pw_uid, user->pw_gid) != 0) {
        error_ = "running as root, and no postgres user to run PostgreSQL as";
        return;
      }
    }
    socket_dir_ = home.string();
    const std::string data = (home / "data").string();
    {
      ChildProcess initdb(AsPostgres({(bin / "initdb").string(), "-D", data, "--auth=trust", "--no-sync", "-U", "postgres", "-E", "UTF8"}));
      const bool ended = WaitFor([&] { return !initdb.running(); }, std::chrono::seconds(120));
      if (!ended || initdb.Stop() != 0) {
        error_ = "initdb failed: " + initdb.log();
        return;
      }
    }
    server_ = std::make_unique<ChildProcess>(AsPostgres({(bin / "postgres").string(), "-D", data, "-k", socket_dir_, "-c",
                                                         "listen_addresses=", "-p", "5432", "-c", "max_connections=200"}));
    postgres::PostgresSession probe(url(), "", "probe");
    ready_ = WaitFor([&] { return server_->running() && probe.Exec("SELECT 1").ok(); }, std::chrono::seconds(60));
    if (!ready_) error_ = "PostgreSQL did not start: " + server_->log();
  }
  ~PostgresServer() { Stop(); }

  bool ready() const { return ready_; }
  const std::string& error() const { return error_; }
  std::string log() const { return server_ ? server_->log() : error_; }
  // A libpq URL of database `db` as the superuser.
  std::string url(const std::string& db = "postgres") const {
    return "postgresql:///" + db + "?host=" + socket_dir_ + "&port=5432&user=postgres";
  }
  // Runs SQL as the superuser (e.g. pg_terminate_backend, as a DBA or a lost network would).
  Result<postgres::PgResult> Exec(const std::string& sql) {
    postgres::PostgresSession admin(url(), "", "admin");
    return admin.Exec(sql);
  }
  // The first column of the first row of `sql` as a number; -1 when there is none (an
  // error, no row, NULL or not a number).
  int64_t Number(const std::string& sql) {
    auto rows = Exec(sql);
    int64_t v = -1;
    if (!rows.ok() || rows->rows.empty() || rows->rows[0].empty()) return -1;
    const std::string& text = rows->rows[0][0];
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    return ec == std::errc() && end == text.data() + text.size() ? v : -1;
  }
  // The postmaster's pid (-1 when not running).
  pid_t pid() const { return server_ ? server_->pid() : -1; }
  // Stops (SIGSTOP) or continues (SIGCONT) the whole server, the postmaster and every
  // process it started: a server that holds its connections open and answers nothing,
  // as a hung host or a paused VM would. Returns how many processes were signalled.
  int Freeze() { return SignalServer(SIGSTOP); }
  int Thaw() { return SignalServer(SIGCONT); }
  void Stop() {
    if (!server_) return;
    Thaw();  // a stopped server cannot shut down
    if (server_->pid() > 0) ::kill(server_->pid(), SIGINT);  // fast shutdown: ends every session
    server_->Stop();
    server_.reset();
  }

 private:
  int SignalServer(int signal) {
    const pid_t postmaster = pid();
    if (postmaster <= 0) return 0;
    int signalled = ::kill(postmaster, signal) == 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string name = entry.path().filename().string();
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;  // not a process
      // Read through an istream, which turns a failed read (the process ended meanwhile:
      // ESRCH) into a failed stream rather than the exception its buffer throws.
      std::string stat;
      std::ifstream in(entry.path() / "stat");
      if (!std::getline(in, stat)) continue;
      const size_t close = stat.rfind(')');  // "pid (comm) state ppid ...": comm may hold spaces
      if (close == std::string::npos || close + 4 >= stat.size()) continue;
      pid_t parent = -1;
      const char* start = stat.data() + close + 4;  // past ") S "
      std::from_chars(start, stat.data() + stat.size(), parent);
      if (parent == postmaster) signalled += ::kill(std::stoi(name), signal) == 0;
    }
    return signalled;
  }
  static std::filesystem::path BinDir() {
    std::filesystem::path best;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
      if (std::filesystem::exists(entry.path() / "bin/postgres") && entry.path() > best) best = entry.path();
    }
    return best.empty() ? best : best / "bin";
  }
  static std::vector<std::string> AsPostgres(std::vector<std::string> argv) {
    if (::geteuid() != 0) return argv;
    std::vector<std::string> out = {"/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }

  TempDir dir_;
  std::string socket_dir_, error_;
  std::unique_ptr<ChildProcess> server_;
  bool ready_ = false;
};

}  // namespace cincinnati::testing
