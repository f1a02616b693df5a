#include "policy_engine/adoption_store.h"

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <random>

namespace cincinnati::server {
namespace {

constexpr size_t kMaxVersions = 256;  // as a sample of one engine (poll_sightings.h)
// Serializes the table's creation across engines: concurrent CREATE TABLE IF NOT EXISTS
// can fail on PostgreSQL's catalog.
constexpr const char* kCreateLock = "SELECT pg_advisory_xact_lock(7306244891)";
constexpr const char* kCreate =
    "CREATE TABLE IF NOT EXISTS adoption_sketches (engine TEXT NOT NULL, version TEXT NOT NULL, at BIGINT NOT NULL, "
    "sketch BYTEA NOT NULL, PRIMARY KEY (engine, version))";

std::string EngineName() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::random_device random;
  return fmt::format("{}:{}:{:08x}", host[0] ? host : "unknown-host", ::getpid(), random());
}

std::string Hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "\\x";
  out.reserve(2 + 2 * bytes.size());
  for (unsigned char c : bytes) out += {kDigits[c >> 4], kDigits[c & 15]};
  return out;
}

int Nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A BYTEA column in its hex output form ("\x...").
Result<FleetSketch> SketchOfHex(const std::string& text) {
  if (!text.starts_with("\\x") || text.size() % 2 != 0) return Status::InvalidArgument("not a hex bytea");
  std::string bytes;
  bytes.reserve(text.size() / 2 - 1);
  for (size_t i = 2; i < text.size(); i += 2) {
    const int high = Nibble(text[i]), low = Nibble(text[i + 1]);
    if (high < 0 || low < 0) return Status::InvalidArgument("not a hex bytea");
    bytes += static_cast<char>(high * 16 + low);
  }
  return FleetSketch::FromBytes(bytes);
}

// The largest kMaxVersions by estimate keep their names; the rest are merged as "other".
AdoptionStore::Counts Estimates(std::map<std::string, FleetSketch> merged) {
  std::vector<std::pair<std::string, double>> estimates;
  for (const auto& entry : merged) estimates.emplace_back(entry.first, entry.second.Estimate());
  std::sort(estimates.begin(), estimates.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  AdoptionStore::Counts out;
  FleetSketch other;
  bool any_other = false;
  for (const auto& entry : estimates) {
    if (entry.first == "other" || out.size() >= kMaxVersions) {
      other.Merge(merged[entry.first]);
      any_other = true;
    } else {
      out.emplace_back(entry.first, static_cast<uint64_t>(std::llround(entry.second)));
    }
  }
  if (any_other) out.emplace_back("other", static_cast<uint64_t>(std::llround(other.Estimate())));
  return out;
}

}  // namespace

AdoptionStore::AdoptionStore(AdoptionStoreOptions options)
    : options_(std::move(options)),
      session_(postgres::WithClientLimits(options_.conninfo, "cincinnati-adoption"), "SET statement_timeout = 5000; SET bytea_output = 'hex'",
               "adoption store") {
  if (options_.engine.empty()) options_.engine = EngineName();
  if (!options_.key) options_.key = DefaultSketchKey();
  spdlog::info("adoption: engine {} shares its samples through {}", options_.engine,
               postgres::RedactedConninfo(options_.conninfo));
}

Status AdoptionStore::EnsureTable() {
  if (table_ready_) return Status::OK();
  CINCINNATI_RETURN_IF_ERROR(session_.Transaction({{kCreateLock, {}}, {kCreate, {}}}));
  table_ready_ = true;
  return Status::OK();
}

Result<AdoptionStore::Counts> AdoptionStore::Exchange(const std::vector<PollSightings::VersionSketch>& mine,
                                                      int64_t now, int64_t fresh) {
  std::lock_guard lock(mu_);
  CINCINNATI_RETURN_IF_ERROR(EnsureTable());
  const std::string at = std::to_string(now);
  std::vector<std::pair<std::string, std::vector<std::string>>> statements = {
      {"DELETE FROM adoption_sketches WHERE engine = $1", {options_.engine}},
      {"DELETE FROM adoption_sketches WHERE at < $1", {std::to_string(now - options_.expiry)}},
  };
  for (const auto& v : mine) {
    if (v.count == 0) continue;
    statements.push_back({"INSERT INTO adoption_sketches (engine, version, at, sketch) VALUES ($1, $2, $3, $4::bytea)",
                          {options_.engine, v.version, at, Hex(v.sketch.Bytes())}});
  }
  Status written = session_.Transaction(statements);
  if (!written.ok()) {
    table_ready_ = false;  // perhaps dropped: created again next time
    return written;
  }
  return ReadFleet(now - fresh);
}

Result<AdoptionStore::Counts> AdoptionStore::ReadFleet(int64_t since) {
  CINCINNATI_ASSIGN_OR_RETURN(postgres::PgResult rows,
                              session_.Exec("SELECT engine, version, sketch FROM adoption_sketches WHERE at >= $1",
                                            {std::to_string(since)}));
  std::map<std::string, FleetSketch> merged;
  for (const auto& row : rows.rows) {
    if (row.size() != 3) continue;
    Result<FleetSketch> sketch = SketchOfHex(row[2]);
    if (!sketch.ok()) {
      const std::string what = fmt::format("engine {} version {}: {}", row[0], row[1], sketch.status().message());
      if (what != last_skipped_) spdlog::warn("adoption: skipped a sketch ({})", what);
      last_skipped_ = what;
      continue;
    }
    merged[row[1]].Merge(*sketch);
  }
  return Estimates(std::move(merged));
}

}  // namespace cincinnati::server
