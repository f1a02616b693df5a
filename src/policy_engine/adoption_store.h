// AdoptionStore: the adoption samples of policy engines that run side by side behind one
// balancer, shared through PostgreSQL so that each counts the whole fleet. Round-robin
// spreads each cluster's polls over every engine: summing their counts would count a
// cluster once per engine, and one engine's counts depend on its share. So each engine
// writes, per version, a sketch of the ids it saw (reports/fleet_sketch.h), and counts
// the union of every engine's recent sketches: a cluster seen by all counts once.
//
// Table `adoption_sketches(engine, version, at, sketch BYTEA, PRIMARY KEY(engine,
// version))`, created if missing. Exchange(): in one transaction, deletes this engine's
// rows and inserts its sketches at `now`; deletes anyone's rows older than a day (an
// engine that stopped); then reads every row at most `fresh` seconds old, merges per
// version and estimates (a row that does not parse is skipped and logged). Engines that
// stopped drop out once their rows are older than `fresh`.
//
// The engine's name: host name, process id and a random suffix, logged at start. A
// statement times out after 5 s, a connection attempt after 5 s, a dead peer after
// about 5 s (keepalives, TCP user timeout). Exchange() runs on the adoption sampler's
// thread (adoption_history.h), never on a request's. Thread-safe (one Exchange at a
// time).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "postgres/postgres_session.h"
#include "reports/fleet_sketch.h"
#include "reports/poll_sightings.h"

namespace cincinnati::server {

struct AdoptionStoreOptions {
  std::string conninfo = "";  // a postgresql:// URL or key=value words
  std::string engine = "";    // empty: host name, process id, random suffix
  std::optional<SketchKey> key = std::nullopt;  // nullopt: DefaultSketchKey() (fleet_sketch.h says why that is safe)
  int64_t expiry = 86400;     // rows older than this (seconds) are deleted
};

class AdoptionStore {
 public:
  explicit AdoptionStore(AdoptionStoreOptions options);

  using Counts = std::vector<std::pair<std::string, uint64_t>>;
  // Shares `mine` as this engine's sketches at `now` (Unix seconds) and returns the
  // fleet's counts by version, from every engine's rows at most `fresh` seconds old: at
  // most 256 versions, the rest summed into "other". An error when the database fails.
  Result<Counts> Exchange(const std::vector<PollSightings::VersionSketch>& mine, int64_t now, int64_t fresh);

  const std::string& engine() const { return options_.engine; }
  const SketchKey& key() const { return *options_.key; }

 private:
  Status EnsureTable();  // under mu_
  Result<Counts> ReadFleet(int64_t since);  // under mu_

  AdoptionStoreOptions options_;
  std::mutex mu_;
  postgres::PostgresSession session_;  // under mu_
  bool table_ready_ = false;           // under mu_
  std::string last_skipped_;           // under mu_: a bad row is logged once
};

}  // namespace cincinnati::server
