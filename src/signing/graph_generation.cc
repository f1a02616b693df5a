#include "signing/graph_generation.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <utility>
#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/answer_signature.h"
#include "core/date_time.h"
#include "core/strings.h"
#include "env/file_system.h"
#include "postgres/postgres_session.h"

namespace cincinnati::server {
namespace {

constexpr int64_t kMaxLeadMs = static_cast<int64_t>(kMaxGenerationLead) * 1000;

bool ParseNumber(std::string_view text, uint64_t& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

// The file: "<generation> <hash>[ <given-up number>]\n".
Result<std::unique_ptr<GraphGeneration>> GraphGeneration::Open(std::string state_file, env::Clock& clock) {
  std::unique_ptr<GraphGeneration> g(new GraphGeneration(state_file, clock));
  if (state_file.empty()) return g;
  auto text = env::ReadFile(state_file, 4096);
  if (!text.ok()) {
    if (text.status().code() == Status::Code::kNotFound) return g;  // a first start
    return text.status();
  }
  std::string_view line(*text);
  line = line.substr(0, line.find('\n'));
  const std::vector<std::string_view> fields = Split(line, ' ');
  if ((fields.size() != 2 && fields.size() != 3) || !ParseNumber(fields[0], g->last_) ||
      (fields.size() == 3 && !ParseNumber(fields[2], g->abandoned_))) {
    return Status::InvalidArgument(fmt::format("{}: not '<generation> <hash>'; remove it only if no agent checks signatures", state_file));
  }
  g->last_hash_ = std::string(fields[1]);
  g->last_given_ = g->last_;
  return g;
}

std::unique_ptr<GraphGeneration> GraphGeneration::InMemory(env::Clock& clock) {
  return std::unique_ptr<GraphGeneration>(new GraphGeneration("", clock));
}

GraphGeneration::GraphGeneration(std::string state_file, env::Clock& clock) : state_file_(std::move(state_file)), clock_(clock) {}

GraphGeneration::~GraphGeneration() = default;

Result<std::unique_ptr<GraphGeneration>> GraphGeneration::Shared(const std::string& conninfo, env::Clock& clock) {
  std::unique_ptr<GraphGeneration> g(new GraphGeneration("", clock));
  g->shared_ = std::make_unique<postgres::PostgresSession>(postgres::WithClientLimits(conninfo, "cincinnati-graph-builder"),
                                                           "SET statement_timeout = 10000",
                                                           "graph generation on PostgreSQL " + postgres::RedactedConninfo(conninfo));
  // The row exists before anyone numbers: every later number locks it. Replicas starting
  // together take turns creating it ("CinGen01").
  CINCINNATI_RETURN_IF_ERROR(g->shared_->InTransaction([](postgres::PostgresTransaction& tx) {
    CINCINNATI_RETURN_IF_ERROR(tx.Exec("SELECT pg_advisory_xact_lock(4857303196722499633)").status());
    CINCINNATI_RETURN_IF_ERROR(tx.Exec("CREATE TABLE IF NOT EXISTS graph_generation(id INTEGER PRIMARY KEY, number BIGINT NOT NULL, "
                                       "hash TEXT NOT NULL, abandoned BIGINT NOT NULL)")
                                   .status());
    return tx.Exec("INSERT INTO graph_generation VALUES(1, 0, '', 0) ON CONFLICT (id) DO NOTHING").status();
  }));
  return g;
}

Result<uint64_t> GraphGeneration::ForShared(std::string_view hash, int64_t now_ms) {
  const uint64_t kept_last = last_, kept_abandoned = abandoned_, kept_given_up = given_up_.load();
  const std::string kept_hash = last_hash_;
  uint64_t number = 0;
  const Status done = shared_->InTransaction([&](postgres::PostgresTransaction& tx) {
    CINCINNATI_ASSIGN_OR_RETURN(postgres::PgResult row,
                                tx.Exec("SELECT number, hash, abandoned, (extract(epoch FROM clock_timestamp()) * 1000)::bigint "
                                        "FROM graph_generation WHERE id = 1 FOR UPDATE"));
    int64_t database_ms = 0;
    if (row.rows.size() != 1 || row.rows[0].size() != 4 || !ParseNumber(row.rows[0][0], last_) ||
        !ParseNumber(row.rows[0][2], abandoned_) || std::from_chars(row.rows[0][3].data(), row.rows[0][3].data() + row.rows[0][3].size(), database_ms).ec != std::errc()) {
      return Status::IoError("graph_generation: no row 1 of three numbers");
    }
    last_hash_ = row.rows[0][1];
    const uint64_t row_number = last_, row_abandoned = abandoned_;
    const std::string row_hash = last_hash_;
    // The database's clock is a second opinion all replicas share. A replica whose clock
    // is behind it must not give up the shared number as "ahead" (Next), pulling down
    // what every replica serves: it numbers past the row. One whose clock is ahead of it
    // numbers by the database's clock, not its own.
    const bool behind = database_ms - now_ms > kMaxLeadMs, ahead = now_ms - database_ms > kMaxLeadMs;
    if (behind && last_ > static_cast<uint64_t>(now_ms + kMaxLeadMs)) {
      number = hash == last_hash_ ? last_ : last_ + 1;
      spdlog::error("graph generation: this clock is {} s behind the database's; numbered {}, past the shared row", (database_ms - now_ms) / 1000,
                    number);
    } else {
      if (ahead) spdlog::error("graph generation: this clock is {} s ahead of the database's; numbered by the database's", (now_ms - database_ms) / 1000);
      number = Next(hash, ahead ? database_ms : now_ms);
    }
    if (number == row_number && hash == row_hash && abandoned_ == row_abandoned) return Status::OK();
    return tx.Exec("UPDATE graph_generation SET number = $1, hash = $2, abandoned = $3 WHERE id = 1",
                   {std::to_string(number), std::string(hash), std::to_string(abandoned_)})
        .status();
  });
  if (!done.ok()) {
    last_ = kept_last;
    abandoned_ = kept_abandoned;
    last_hash_ = kept_hash;
    given_up_ = kept_given_up;
    return done;
  }
  last_ = number;
  last_hash_ = std::string(hash);
  return number;
}

int64_t GraphGeneration::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now().time_since_epoch()).count();
}

uint64_t GraphGeneration::For(std::string_view hash) {
  std::lock_guard lock(mu_);
  const int64_t now_ms = std::max<int64_t>(0, NowMs());
  if (shared_) {
    Result<uint64_t> number = ForShared(hash, now_ms);
    if (number.ok()) {
      if (std::exchange(shared_failing_, false)) spdlog::warn("graph generation: the shared row answers again");
      last_given_ = *number;
      return *number;
    }
    if (!std::exchange(shared_failing_, true)) {
      spdlog::error("graph generation: {}; numbered by this replica's last number and its clock until it answers",
                    number.status().message());
    }
  }
  const uint64_t next = Next(hash, now_ms);
  if (next != last_ || hash != last_hash_) Keep(next, hash);
  last_given_ = next;
  return next;
}

uint64_t GraphGeneration::Next(std::string_view hash, int64_t now_ms) {
  const uint64_t cap = static_cast<uint64_t>(now_ms + kMaxLeadMs);
  if (last_ > cap) {
    ++given_up_;
    abandoned_ = std::max(abandoned_, last_);
    spdlog::error(
        "graph generation {} is {} s ahead of this clock ({}), more than the {} s a checker allows: it was numbered by a "
        "clock that was ahead (or this clock is behind now: then fix it). The graph is numbered {} now; an agent that took "
        "{} takes answers again once this clock passes that number, when the graph is numbered past it",
        last_, (last_ - static_cast<uint64_t>(now_ms)) / 1000, FormatUnixSeconds(now_ms / 1000), kMaxGenerationLead, cap, last_);
    return cap;
  }
  if (abandoned_ != 0 && static_cast<uint64_t>(now_ms) > abandoned_) {
    spdlog::warn("graph generation: this clock has passed {}, the number given up when it was ahead; numbered past it",
                 abandoned_);
    abandoned_ = 0;
    return std::max<uint64_t>(last_ + 1, static_cast<uint64_t>(now_ms));
  }
  if (last_ != 0 && hash == last_hash_) return last_;
  return std::max<uint64_t>(last_ + 1, static_cast<uint64_t>(now_ms));
}

void GraphGeneration::Keep(uint64_t number, std::string_view hash) {
  last_ = number;
  last_hash_ = std::string(hash);
  if (state_file_.empty()) return;
  const std::string line = abandoned_ != 0 ? fmt::format("{} {} {}\n", number, hash, abandoned_) : fmt::format("{} {}\n", number, hash);
  if (Status st = env::WriteFileDurably(state_file_, line); !st.ok()) {
    spdlog::error("graph generation {} not kept: {} (a restart with the clock set back would number graphs lower)", number,
                  st.message());
  }
}

double GraphGeneration::SecondsAhead() const {
  const int64_t ahead_ms = static_cast<int64_t>(last_given_.load()) - NowMs();
  return ahead_ms > 0 ? static_cast<double>(ahead_ms) / 1000 : 0;
}

}  // namespace cincinnati::server
