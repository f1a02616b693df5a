// ClusterVersionWatches: watches of the agent's ClusterVersion, for a client that wants to
// hear of a change at once rather than poll (the upgrade operator, while an update it
// commanded runs). Kubernetes' watch, ended after its first event:
//   GET /apis/config.openshift.io/v1/clusterversions/version?watch=true&resourceVersion=N[&timeoutSeconds=T]
// answers 200 with one line, {"type":"MODIFIED","object":<the ClusterVersion>}, as soon
// as the object's metadata.resourceVersion is not N (at once when it already is not, or
// when N is absent), or with an empty body once T seconds (default 60, 1 to 300) passed
// without a change. A Kubernetes client then watches again, as it does whenever a watch
// ends. A client that sends no `watch` gets the plain GET, as before.
//
// A waiting watch holds no thread: its responder is kept here and one thread answers
// every watch, on a change or at its deadline. At most `max_watches` wait; a watch
// beyond them is answered at once with the current object, so that every client is
// bounded. EndAll() answers the waiting watches (empty) before a shutdown, so that they
// do not hold the server's grace period.
//
// Thread-safe; never throws. Changed() only records and signals: the agent calls it
// while it holds its own lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include "http_server/http_types.h"
#include "kube/json_value.h"

namespace cincinnati::agent {

class ClusterVersionWatches {
 public:
  using Respond = std::function<void(http_server::Response)>;

  // `current` returns the ClusterVersion as served (never called under Changed's caller's lock).
  ClusterVersionWatches(std::function<kube::JsonValue()> current, int64_t resource_version, size_t max_watches = 1024);
  ~ClusterVersionWatches();
  ClusterVersionWatches(const ClusterVersionWatches&) = delete;
  ClusterVersionWatches& operator=(const ClusterVersionWatches&) = delete;

  // Answers through `respond` once the resourceVersion is not `seen` (at once when it
  // is not, or without `seen`), or empty at `timeout`.
  void Wait(std::optional<int64_t> seen, std::chrono::seconds timeout, Respond respond);
  void Changed(int64_t resource_version);
  void EndAll();
  size_t waiting();

 private:
  struct Watch {
    int64_t seen;
    std::chrono::steady_clock::time_point deadline;
    Respond respond;
  };
  void Loop();
  http_server::Response Event();

  std::function<kube::JsonValue()> current_;
  const size_t max_watches_;
  std::mutex mu_;
  std::condition_variable wake_;
  int64_t resource_version_;
  std::list<Watch> watches_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace cincinnati::agent
