#include "operator/postgres_state.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <vector>
#include <mutex>
#include <optional>

#include "postgres/postgres_session.h"

namespace cincinnati::upgrade {
using postgres::PostgresSession;
using postgres::PgResult;

namespace {

// Advisory locks are keyed by one 64-bit number, the same in every replica: "CinLead1"
// and "CinSchem" in ASCII.
constexpr int64_t kLeaderLockKey = 0x43696e4c65616431;
constexpr int64_t kSchemaLockKey = 0x43696e536368656d;

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS configs (cluster TEXT PRIMARY KEY, document TEXT NOT NULL)",
    ("CREATE TABLE IF NOT EXISTS notifications (cluster TEXT NOT NULL, version TEXT NOT NULL, event TEXT NOT NULL, "
     "sent_at TEXT NOT NULL, PRIMARY KEY (cluster, version, event))"),
    "CREATE TABLE IF NOT EXISTS flags (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ("CREATE TABLE IF NOT EXISTS leader (id INT PRIMARY KEY CHECK (id = 1), epoch BIGINT NOT NULL, holder TEXT NOT NULL, "
     "since TIMESTAMPTZ, renewed_at TIMESTAMPTZ)"),
    "INSERT INTO leader (id, epoch, holder) VALUES (1, 0, '') ON CONFLICT (id) DO NOTHING",
    // Whether the term of `epoch` ended cleanly (Release); a database of an older
    // version gains it.
    "ALTER TABLE leader ADD COLUMN IF NOT EXISTS ended_cleanly BOOLEAN NOT NULL DEFAULT false",
};

// The client's bound on a store statement: its statement_timeout (10 s) and a margin.
constexpr std::chrono::milliseconds kStoreCallDeadline{12000};

// Every fenced write starts with this: the row exists only while $1 is the epoch, and
// FOR SHARE holds the next leader's bump until the write commits.
constexpr const char* kFence = "WITH fence AS (SELECT 1 FROM leader WHERE id = 1 AND epoch = $1 FOR SHARE) ";

// A bigint column as text; nullopt for NULL ("") or anything else.
std::optional<int64_t> Int64(const std::string& text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// What the leadership and the store share: the epoch this replica leads under.
struct Fence {
  std::atomic<int64_t> epoch{-1};  // -1: not leading; no write is accepted
  std::mutex mu;
  std::string leader;  // the holder last read from the leader row
};

class PostgresStore final : public StateStore {
 public:
  PostgresStore(const std::string& conninfo, std::string name, std::string holder, std::shared_ptr<Fence> fence)
      : name_(std::move(name)), holder_(std::move(holder)), fence_(std::move(fence)) {
    for (size_t i = 0; i < kSessions; ++i) {
      sessions_.push_back(std::make_unique<PostgresSession>(conninfo, "SET statement_timeout = 10000", name_, kStoreCallDeadline));
      idle_.push_back(sessions_.back().get());
    }
  }

  using Rows = std::vector<std::vector<std::string>>;

  Result<std::vector<UpgradeConfig>> LoadConfigs() override {
    CINCINNATI_ASSIGN_OR_RETURN(Rows rows, Read("SELECT cluster, document FROM configs ORDER BY cluster", {}));
    std::vector<UpgradeConfig> out;
    for (const auto& row : rows) {
      CINCINNATI_ASSIGN_OR_RETURN(UpgradeConfig config, DecodeStoredConfig(name_, row[0], row[1]));
      out.push_back(std::move(config));
    }
    return out;
  }
  Result<std::optional<UpgradeConfig>> GetConfig(const std::string& cluster) override {
    CINCINNATI_ASSIGN_OR_RETURN(Rows rows, Read("SELECT document FROM configs WHERE cluster = $1", {cluster}));
    if (rows.empty()) return std::optional<UpgradeConfig>();
    CINCINNATI_ASSIGN_OR_RETURN(UpgradeConfig config, DecodeStoredConfig(name_, cluster, rows[0][0]));
    return std::optional<UpgradeConfig>(std::move(config));
  }
  Status PutConfig(const UpgradeConfig& config) override {
    return Write("INSERT INTO configs (cluster, document) SELECT $2, $3 FROM fence "
                 "ON CONFLICT (cluster) DO UPDATE SET document = excluded.document",
                 {config.cluster, kube::WriteJson(ToJson(config))})
        .status();
  }
  Status DeleteConfig(const std::string& cluster) override {
    return Write("DELETE FROM configs WHERE cluster = $2 AND EXISTS (SELECT 1 FROM fence)", {cluster}).status();
  }
  Result<bool> Claim(const std::string& cluster, const std::string& version, const std::string& event, const std::string& now) override {
    CINCINNATI_ASSIGN_OR_RETURN(size_t claimed, Write("INSERT INTO notifications (cluster, version, event, sent_at) "
                                                      "SELECT $2, $3, $4, $5 FROM fence ON CONFLICT DO NOTHING",
                                                      {cluster, version, event, now}));
    return claimed > 0;
  }
  Status Unclaim(const std::string& cluster, const std::string& version, const std::string& event) override {
    return Write("DELETE FROM notifications WHERE cluster = $2 AND version = $3 AND event = $4 AND EXISTS (SELECT 1 FROM fence)",
                 {cluster, version, event})
        .status();
  }
  Result<bool> Claimed(const std::string& cluster, const std::string& version, const std::string& event) override {
    CINCINNATI_ASSIGN_OR_RETURN(Rows rows, Read("SELECT 1 FROM notifications WHERE cluster = $1 AND version = $2 AND event = $3",
                                                        {cluster, version, event}));
    return !rows.empty();
  }
  Result<std::vector<LedgerEntry>> Ledger(const std::string& cluster) override {
    CINCINNATI_ASSIGN_OR_RETURN(Rows rows, Read("SELECT cluster, version, event, sent_at FROM notifications WHERE cluster = $1 "
                                                        "ORDER BY sent_at, event",
                                                        {cluster}));
    std::vector<LedgerEntry> out;
    for (const auto& r : rows) out.push_back({r[0], r[1], r[2], r[3]});
    return out;
  }
  Result<std::optional<std::string>> GetFlag(const std::string& key) override {
    CINCINNATI_ASSIGN_OR_RETURN(Rows rows, Read("SELECT value FROM flags WHERE key = $1", {key}));
    if (rows.empty()) return std::optional<std::string>();
    return std::optional<std::string>(rows[0][0]);
  }
  Status SetFlag(const std::string& key, const std::string& value) override {
    return Write("INSERT INTO flags (key, value) SELECT $2, $3 FROM fence ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                 {key, value})
        .status();
  }
  Status ClearFlag(const std::string& key) override {
    return Write("DELETE FROM flags WHERE key = $2 AND EXISTS (SELECT 1 FROM fence)", {key}).status();
  }
  Result<std::vector<std::pair<std::string, std::string>>> Flags(const std::string& prefix) override {
    CINCINNATI_ASSIGN_OR_RETURN(Rows rows, Read("SELECT key, value FROM flags WHERE left(key, length($1)) = $1 ORDER BY key", {prefix}));
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& r : rows) out.emplace_back(r[0], r[1]);
    return out;
  }

 private:
  Result<Rows> Read(const std::string& sql, const std::vector<std::string>& args) {
    Borrowed session(*this);
    CINCINNATI_ASSIGN_OR_RETURN(PgResult r, session->Exec(sql, args));
    return std::move(r.rows);
  }

  // Runs a fenced statement (`args` are $2 on; $1 is the epoch) and returns the rows it
  // changed; a Conflict when the fence stopped it.
  Result<size_t> Write(const std::string& sql, std::vector<std::string> args) {
    const int64_t epoch = fence_->epoch.load();
    if (epoch < 0) return Fenced();
    args.insert(args.begin(), std::to_string(epoch));
    Borrowed session(*this);
    CINCINNATI_ASSIGN_OR_RETURN(PgResult written, session->Exec(std::string(kFence) + sql, args));
    if (written.affected > 0) return written.affected;
    // Nothing changed: already so (a claim made before), or not the leader any more.
    CINCINNATI_ASSIGN_OR_RETURN(PgResult leads, session->Exec("SELECT 1 FROM leader WHERE id = 1 AND epoch = $1", {args[0]}));
    if (leads.rows.empty()) return Fenced();
    return size_t{0};
  }
  Status Fenced() {
    std::lock_guard lock(fence_->mu);
    const bool known = !fence_->leader.empty() && fence_->leader != holder_;
    return Status::Conflict(fmt::format("{}: this replica does not lead{}", name_, known ? " (the leader is " + fence_->leader + ")" : ""));
  }

  // A few connections, so that passes on many threads write at once (and the server
  // commits them together) rather than one after the other; one statement at a time on
  // each.
  static constexpr size_t kSessions = 8;
  class Borrowed {
   public:
    explicit Borrowed(PostgresStore& store) : store_(store) {
      std::unique_lock lock(store_.mu_);
      store_.free_.wait(lock, [&] { return !store_.idle_.empty(); });
      session_ = store_.idle_.back();
      store_.idle_.pop_back();
    }
    ~Borrowed() {
      {
        std::lock_guard lock(store_.mu_);
        store_.idle_.push_back(session_);
      }
      store_.free_.notify_one();
    }
    PostgresSession* operator->() const { return session_; }

   private:
    PostgresStore& store_;
    PostgresSession* session_ = nullptr;
  };

  std::string name_, holder_;
  std::shared_ptr<Fence> fence_;
  std::vector<std::unique_ptr<PostgresSession>> sessions_;
  std::mutex mu_;
  std::condition_variable free_;
  std::vector<PostgresSession*> idle_;  // sessions not borrowed (under mu_)
};

class PostgresLeadership final : public Leadership {
 public:
  PostgresLeadership(const std::string& conninfo, std::string name, std::string holder, std::chrono::seconds lease,
                     std::shared_ptr<Fence> fence)
      // Each call on the lock session is bounded by the lease (client side too): a renewal
      // that cannot be answered fails, and the replica steps down, rather than hang.
      : session_(conninfo, fmt::format("SET statement_timeout = {0}; SET idle_session_timeout = {0}", lease.count() * 1000), name,
                 std::chrono::duration_cast<std::chrono::milliseconds>(lease)),
        holder_(std::move(holder)),
        lease_(lease),
        fence_(std::move(fence)) {}

  Result<bool> TryAcquire() override {
    std::lock_guard lock(mu_);
    if (fence_->epoch >= 0) return true;
    bool acquired = false;
    int64_t epoch = -1;
    std::string leader;
    Status s = [&]() -> Status {
      CINCINNATI_ASSIGN_OR_RETURN(PgResult lock, session_.Exec("SELECT pg_try_advisory_lock($1)", {std::to_string(kLeaderLockKey)}));
      acquired = !lock.rows.empty() && lock.rows[0][0] == "t";
      if (acquired) {
        // How long ago the last leader renewed (milliseconds; "" if nobody ever led), and
        // whether its term ended cleanly.
        CINCINNATI_ASSIGN_OR_RETURN(PgResult last, session_.Exec("SELECT floor(extract(epoch FROM now() - renewed_at) * 1000)::bigint, "
                                                                "ended_cleanly FROM leader WHERE id = 1"));
        // None: nobody led before, or its term ended cleanly. A negative age (the server's
        // clock stepped back) is 0.
        const bool clean = !last.rows.empty() && last.rows[0][1] == "t";
        const std::optional<int64_t> age = last.rows.empty() || clean ? std::nullopt : Int64(last.rows[0][0]);
        CINCINNATI_ASSIGN_OR_RETURN(PgResult bumped, session_.Exec("UPDATE leader SET epoch = epoch + 1, holder = $1, since = now(), "
                                                                  "renewed_at = now(), ended_cleanly = false WHERE id = 1 RETURNING epoch",
                                                                  {holder_}));
        if (bumped.rows.empty()) return Status::Internal("the leader row is missing");
        epoch = Int64(bumped.rows[0][0]).value_or(-1);
        if (epoch < 0) return Status::Internal("the leader row has no epoch");
        leader = holder_;
        ForgetTermSettled();  // a new term: the operator sets its own check
        predecessor_age_.reset();
        if (age) predecessor_age_ = std::chrono::milliseconds(std::max<int64_t>(*age, 0));
      } else {
        CINCINNATI_ASSIGN_OR_RETURN(PgResult row, session_.Exec("SELECT CASE WHEN ended_cleanly THEN '' ELSE holder END FROM leader WHERE id = 1"));
        if (!row.rows.empty()) leader = row.rows[0][0];
      }
      return Status::OK();
    }();
    if (!s.ok()) {
      session_.Close();  // whatever it held goes with it
      return s;
    }
    {
      std::lock_guard fence_lock(fence_->mu);
      fence_->leader = leader;
    }
    fence_->epoch = epoch;
    return acquired;
  }

  Status Renew() override {
    std::lock_guard lock(mu_);
    const int64_t epoch = fence_->epoch.load();
    if (epoch < 0) return Status::Conflict("not the leader");
    std::string holder;
    int64_t current = -1;
    Status s = [&]() -> Status {
      // The lock lives only as long as the connection that took it: never a new one.
      if (!session_.connected()) return Status::IoError("the session that held the leadership lock is gone");
      CINCINNATI_ASSIGN_OR_RETURN(PgResult renewed, session_.Exec("UPDATE leader SET renewed_at = now() WHERE id = 1 AND epoch = $1",
                                                                 {std::to_string(epoch)}));
      if (renewed.affected == 1) {
        current = epoch;
        return Status::OK();
      }
      CINCINNATI_ASSIGN_OR_RETURN(PgResult row, session_.Exec("SELECT epoch, holder FROM leader WHERE id = 1"));
      if (row.rows.empty()) return Status::Internal("the leader row is missing");
      current = Int64(row.rows[0][0]).value_or(-1);
      holder = row.rows[0][1];
      return Status::OK();
    }();
    if (s.ok() && current == epoch) return Status::OK();
    // Lost, or not confirmed: give it up for good (closing the session frees the lock).
    fence_->epoch = -1;
    session_.Close();
    if (!s.ok()) {
      std::lock_guard fence_lock(fence_->mu);
      if (fence_->leader == holder_) fence_->leader.clear();
      return s;
    }
    std::lock_guard fence_lock(fence_->mu);
    fence_->leader = holder;
    return Status::Conflict(fmt::format("{} leads now (epoch {})", holder, current));
  }

  void Release() override {
    std::lock_guard lock(mu_);
    const int64_t epoch = fence_->epoch.exchange(-1);  // the store refuses this replica's writes from now on
    if (epoch >= 0 && session_.connected() && TermSettled()) EndCleanly(epoch);
    // Unlocked before the session ends: the server frees a closed session's locks only
    // when its backend has exited, a moment after the close, and a successor trying
    // right after this returns would find the lock still held.
    if (epoch >= 0 && session_.connected()) {
      auto unlocked = session_.Exec("SELECT pg_advisory_unlock_all()");
      if (!unlocked.ok()) spdlog::debug("leadership: unlocking before the session ends: {}", unlocked.status().message());
    }
    session_.Close();  // ends the session: whatever lock is left goes with it
    std::lock_guard fence_lock(fence_->mu);
    if (fence_->leader == holder_) fence_->leader.clear();  // not this replica any more; who is, unknown
  }

  std::string Leader() override {
    std::lock_guard lock(fence_->mu);
    return fence_->leader;
  }
  // Who leads, read once (on start): a standby names the leader before its first round.
  void ReadLeader() {
    std::lock_guard lock(mu_);
    if (fence_->epoch >= 0) return;
    auto row = session_.Exec("SELECT holder FROM leader WHERE id = 1 AND holder <> '' AND NOT ended_cleanly");
    if (!row.ok() || row->rows.empty()) return;  // unknown until the first round
    std::lock_guard fence_lock(fence_->mu);
    fence_->leader = row->rows[0][0];
  }

  std::chrono::seconds lease() const override { return lease_; }
  std::chrono::milliseconds PredecessorGrace(std::chrono::seconds longest_call) override {
    std::lock_guard lock(mu_);
    if (!predecessor_age_) return std::chrono::milliseconds(0);
    const auto acts_for = std::chrono::duration_cast<std::chrono::milliseconds>(lease_ - kLeaseMargin + longest_call);
    return std::max(std::chrono::milliseconds(0), acts_for - *predecessor_age_);
  }

 private:
  // Records that the term of `epoch` ended cleanly: on the lock session, which still
  // holds the lock, and only while `epoch` is the current one, so that only its holder
  // can, and the next leader's bump is ordered after it (under mu_).
  void EndCleanly(int64_t epoch) {
    auto ended = session_.Exec("UPDATE leader SET ended_cleanly = true WHERE id = 1 AND epoch = $1",
                               {std::to_string(epoch)});
    if (!ended.ok()) {
      spdlog::warn("leadership: could not record the clean end of term {}; the next leader waits out its grace: {}", epoch,
                   ended.status().message());
    } else if (ended->affected == 1) {
      spdlog::info("leadership: term {} ended cleanly; the next leader acts at once", epoch);
    }
  }

  std::mutex mu_;
  std::optional<std::chrono::milliseconds> predecessor_age_;  // at the last TryAcquire that led
  PostgresSession session_;
  std::string holder_;
  std::chrono::seconds lease_;
  std::shared_ptr<Fence> fence_;
};

Status CreateSchema(const std::string& conninfo, const std::string& name) {
  PostgresSession setup(conninfo, "SET statement_timeout = 30000", name);
  // The lease is idle_session_timeout, new in PostgreSQL 14.
  CINCINNATI_ASSIGN_OR_RETURN(PgResult version, setup.Exec("SELECT current_setting('server_version_num')::int"));
  if (version.rows.empty() || Int64(version.rows[0][0]).value_or(0) < 140000) {
    return Status::InvalidArgument(fmt::format("{}: PostgreSQL 14 or later is needed (the leadership lease is its "
                                               "idle_session_timeout); this server is {}",
                                               name, version.rows.empty() ? "unknown" : version.rows[0][0]));
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> statements = {
      {"SELECT pg_advisory_xact_lock($1)", {std::to_string(kSchemaLockKey)}}};
  for (const char* sql : kSchema) statements.push_back({sql, {}});
  return setup.Transaction(statements);
}

}  // namespace

Result<PostgresState> OpenPostgresState(const std::string& url, const std::string& holder, std::chrono::seconds lease) {
  if (lease <= kLeaseMargin) return Status::InvalidArgument(fmt::format("the leadership lease must be longer than {} s", kLeaseMargin.count()));
  const std::string conninfo = postgres::WithClientLimits(url, "cincinnati-upgrade-operator");
  const std::string name = "PostgreSQL " + postgres::RedactedConninfo(url);
  CINCINNATI_RETURN_IF_ERROR(CreateSchema(conninfo, name));
  auto fence = std::make_shared<Fence>();
  PostgresState state;
  state.store = std::make_unique<PostgresStore>(conninfo, name, holder, fence);
  auto leadership = std::make_unique<PostgresLeadership>(conninfo, name, holder, lease, fence);
  leadership->ReadLeader();
  state.leadership = std::move(leadership);
  return state;
}

}  // namespace cincinnati::upgrade
