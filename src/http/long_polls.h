// LongPolls: HTTP GETs that each wait long for their answer (watches of a peer's
// object), all on one thread with libcurl's multi interface, so that thousands of them
// cost one thread and a socket each rather than a thread each.
//
// Start() begins one and returns at once (the request is sent after `delay`: a client's
// back-off before it tries again, without a thread or a timer of its own); `done` is
// called exactly once, on the polling thread, with the outcome (the same Result as Request(): status, headers, body, or an
// error naming the URL). No redirect is followed. The body is capped at
// `max_body_bytes` (an error beyond). Destroying the object ends every poll still
// running with ErrorKind::kCancelled, calls their `done`, and joins the thread; `done`
// must not destroy the LongPolls.
//
// Thread-safe; never throws.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "http/client.h"

namespace cincinnati::http {

class LongPolls {
 public:
  explicit LongPolls(size_t max_body_bytes = size_t{16} << 20);
  ~LongPolls();
  LongPolls(const LongPolls&) = delete;
  LongPolls& operator=(const LongPolls&) = delete;

  struct Poll {
    std::string url;
    std::vector<std::string> headers;  // "Name: value"
    std::string ca_path;               // as RequestOptions::ca_path
    std::chrono::milliseconds timeout{60000};
    std::chrono::milliseconds delay{0};  // sent no sooner (steady clock); the timeout counts from then
  };
  void Start(Poll poll, std::function<void(Result)> done);
  size_t running() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cincinnati::http
