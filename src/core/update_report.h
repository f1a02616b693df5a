// UpdateReport: what an agent says about one update attempt when it starts and once it
// has ended, and its wire form, the JSON object an agent POSTs to the update service's {prefix}/v1/reports
// (the fleet reports how updates went, and the service brakes a bad edge):
//
//   {"clusterID":"<UUID>","attempt":"<1-64 hex digits>","from":"4.13.1","to":"4.13.2",
//    "arch":"amd64","channel":"stable-4.13","result":"Completed"|"Failed"|"Started",
//    "component":"network","reason":"ClusterOperatorDegraded",
//    "started":"2026-01-03T03:41:12Z","ended":"2026-01-03T04:01:40Z"}
//
// A "Started" report says an attempt has begun (so the service can count attempts in
// the order they started, reports/start_order.h): it has no end ("ended":"", 0 in
// memory), no component and no reason; the same attempt's final report follows.
//
// A report is untrusted input to the service, so decoding is strict and total: at most
// kMaxUpdateReportBytes, a JSON object with exactly these keys, each once, each a
// string of its form (UUID; lowercase hex; SemVer without build metadata, one
// spelling per release, with from != to; an arch and a
// channel of [a-z0-9._-]; a component as a DNS-1123 subdomain or ""; a reason in
// CamelCase, required when Failed; RFC 3339 UTC with seconds, started <= ended; "" as
// the end of a Started report, and only there). The
// cluster id is lower-cased, so that case cannot make one attempt count twice.
// EncodeUpdateReport writes the keys in the order above; Decode(Encode(r)) == r for
// every valid r. Pure; never throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati {

inline constexpr size_t kMaxUpdateReportBytes = 4096;

enum class UpdateResult { kCompleted, kFailed, kStarted };
std::string_view UpdateResultName(UpdateResult r);

struct UpdateReport {
  std::string cluster_id;  // lower-case UUID
  std::string attempt;     // the agent's id of the attempt: (cluster_id, attempt) is unique
  std::string from, to;    // versions
  std::string arch, channel;
  UpdateResult result = UpdateResult::kCompleted;
  std::string component;   // the failing component ("" when none is known)
  std::string reason;      // the failure's reason, as the agent's Failing condition words it
  int64_t started = 0;     // Unix seconds
  int64_t ended = 0;       // 0 in a Started report
  bool operator==(const UpdateReport&) const = default;
};

std::string EncodeUpdateReport(const UpdateReport& report);
Result<UpdateReport> DecodeUpdateReport(std::string_view json);
// The checks Decode applies, for a report built in memory (the agent's, before it queues it).
Status ValidateUpdateReport(const UpdateReport& report);

// A channel as a report may name it: 1 to 63 characters of [a-z0-9._-], starting and
// ending with a letter or digit (the agent leaves out any other).
bool IsReportChannel(std::string_view channel);

// "YYYY-MM-DDTHH:MM:SSZ" exactly (what EncodeUpdateReport writes), years 1970-9999.
Result<int64_t> ParseUtcSeconds(std::string_view text);

}  // namespace cincinnati
