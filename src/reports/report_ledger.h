// ReportLedger: the graph builder's durable record of update reports and of what they
// say per edge (issue 31). A SQLite file (WAL, synchronous=FULL: a committed batch
// survives kill -9 and power loss) with two tables:
//   reports(cluster, attempt, ..., PRIMARY KEY(cluster, attempt))   every report once
//   edge_clusters(from_version, to_version, cluster, failed, component, first_failure,
//                 PRIMARY KEY(from_version, to_version, cluster))     distinct clusters per edge
// A report is recorded at most once per (cluster, attempt): a resend is a duplicate and
// changes nothing. Per edge it counts distinct clusters and, among them, those with a
// counted failure: a Failed report whose reason is one of `counted_reasons` (by default
// a component that degraded or stayed unavailable; a refusal before anything was
// applied, such as a signature that does not verify, says more about the cluster's site
// than about the edge). A cluster that failed an edge and later completed it stays
// counted as failed: it needed rescuing. RestartEdge starts an edge's count afresh
// (a brake was cleared): from then on only reports received after the restart, of
// attempts that started after it, count (table edge_epochs). A report dated more than
// kMaxClockSkew after it was received is kept but never counted. The counts are also kept in memory (rebuilt
// from the file by Open), so reading them costs no I/O; memory is O(edges x components),
// and the file grows by about 300 bytes per report. Thread-safe; never throws.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/update_report.h"
#include "reports/brake_rule.h"

struct sqlite3;

namespace cincinnati::reports {

inline constexpr int64_t kMaxClockSkew = 300;  // seconds

struct EdgeState {
  std::string from, to;
  EdgeCounts counts;
  int64_t first_failure = 0;                          // Unix seconds of the earliest counted failure; 0: none
  std::map<std::string, int64_t> failed_components;   // component ("" unknown) -> failed clusters
};

class ReportLedger {
 public:
  struct Options {
    std::vector<std::string> counted_reasons = {"ClusterOperatorDegraded", "ClusterOperatorNotAvailable"};
  };
  static Result<std::unique_ptr<ReportLedger>> Open(const std::string& path, Options options);
  static Result<std::unique_ptr<ReportLedger>> Open(const std::string& path) { return Open(path, Options{}); }
  ~ReportLedger();
  ReportLedger(const ReportLedger&) = delete;
  ReportLedger& operator=(const ReportLedger&) = delete;

  enum class Outcome { kRecorded, kDuplicate };
  // Records a batch in one transaction (all or nothing); outcome[i] is batch[i]'s. Every
  // report must pass ValidateUpdateReport. `received`: Unix seconds, the service's clock.
  Result<std::vector<Outcome>> Record(const std::vector<UpdateReport>& batch, int64_t received);

  EdgeState Edge(const std::string& from, const std::string& to) const;
  std::vector<EdgeState> Edges() const;  // every edge with a report, by (from, to)
  int64_t reports() const;               // recorded reports (duplicates not counted)
  bool Counted(const UpdateReport& report) const;  // a failure that counts against its edge
  // Counts the edge again from the reports of attempts started at or after `since`.
  Status RestartEdge(const std::string& from, const std::string& to, int64_t since);

 private:
  ReportLedger(sqlite3* db, std::string path, Options options);
  Status Load();
  Status Exec(const char* sql);

  sqlite3* db_;
  std::string path_;
  Options options_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, EdgeState> edges_;
  std::map<std::pair<std::string, std::string>, int64_t> epochs_;  // edge -> counted from (Unix seconds)
  int64_t reports_ = 0;
};

}  // namespace cincinnati::reports
