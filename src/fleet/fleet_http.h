// FleetHttp: many requests in flight from one thread, for a fleet simulation (libcurl's
// multi interface). Thousands of simulated clusters share a few kept-alive connections
// to the service, and the simulation's one thread drives them between its events, so
// cluster state needs no lock.
//
// Contract:
// - Requests go in lanes, each with its own number of slots, so that slow requests of
//   one kind (reports, which the service commits to disk) never hold up another (graph
//   requests, which decide what clusters do). At most lanes[i] requests of lane i are in
//   flight (Full(i) says when); connections to the service are reused across requests
//   (keep-alive, at most one per slot).
// - GETs send `Accept: application/json` and, unless told otherwise,
//   `Accept-Encoding: gzip` as the cluster-version operator does; a gzip body is handed
//   back as it came (`gzip` set), to be inflated only when it must be read (Inflate).
//   POSTs send their body as application/json. A request with `poll_receipt` sends it as
//   Cincinnati-Poll-Receipt (empty too: asking for a first one); a response's header of
//   that name comes back in FleetResponse::poll_receipt.
// - `skip_body(etag)` is asked once the headers of a 200 are in, unless the request says
//   otherwise: when it says true (the caller already knows that answer), the body is
//   dropped as it arrives.
// - Limits: a body over `max_body_bytes` ends its transfer with an error; each request
//   times out after `timeout`.
// - Nothing throws; transport failures come back as Response::error.
// Not thread-safe: one thread submits and runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cincinnati::fleet {

struct FleetRequest {
  uint32_t tag = 0;  // the caller's: handed back with the response
  std::string url{};
  std::string body{};  // non-empty: POST
  std::string if_none_match{};
  bool gzip = true;
  bool may_skip_body = true;  // false: the body is wanted even when skip_body knows the ETag
  std::optional<std::string> poll_receipt{};  // nullopt: no such header
};

struct FleetResponse {
  uint32_t tag = 0;
  long status = 0;  // 0: no response (see error)
  std::string error;
  std::string etag;
  std::string poll_receipt;   // "": none
  std::string body;
  bool gzip = false;          // body is gzip-compressed
  bool body_skipped = false;  // skip_body said so
  double seconds = 0;         // real time from Submit to the end of the transfer
};

// `text` percent-encoded for a query string (RFC 3986 unreserved characters stay).
std::string QueryEscape(std::string_view text);

// A gzip body inflated, capped at `max_bytes`.
Result<std::string> Inflate(std::string_view gzip, size_t max_bytes);

class FleetHttp {
 public:
  FleetHttp(std::vector<int> lanes, std::function<bool(std::string_view etag)> skip_body,
            std::chrono::milliseconds timeout = std::chrono::seconds(60), size_t max_body_bytes = size_t{64} << 20);
  ~FleetHttp();
  FleetHttp(const FleetHttp&) = delete;
  FleetHttp& operator=(const FleetHttp&) = delete;

  bool Full(size_t lane) const;
  size_t in_flight() const;
  void Submit(FleetRequest request, size_t lane);  // when !Full(lane)
  // Moves transfers on, waiting at most `wait` for one to progress; appends finished ones.
  void Run(std::chrono::milliseconds wait, std::vector<FleetResponse>& done);
  uint64_t connections_opened() const { return connections_; }

  // For the transfer callbacks.
  struct Slot;
  bool SkipBody(std::string_view etag) const;
  size_t max_body() const { return max_body_; }

 private:
  void Finish(Slot& slot, int curl_code, std::vector<FleetResponse>& done);

  void* multi_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<std::vector<size_t>> free_;  // per lane
  std::function<bool(std::string_view)> skip_body_;
  std::chrono::milliseconds timeout_;
  size_t max_body_;
  uint64_t connections_ = 0;
  void* get_headers_ = nullptr;
  void* get_plain_headers_ = nullptr;
  void* post_headers_ = nullptr;
};

}  // namespace cincinnati::fleet
