// StorageHealth: what the agent's writes to its state directory met, for /metrics and
// logs. Every write of state (the ClusterVersion, the update's progress, payload
// downloads) reports its outcome here; a full disk is counted apart from other I/O
// errors, and `full()` says whether the last failed write found no space and no write
// has succeeded since.
//
// Thread-safety: every method may be called from any thread (atomics).
#pragma once

#include <atomic>
#include <cstdint>

#include "core/status.h"

namespace cincinnati::agent {

class StorageHealth {
 public:
  // The outcome of a write: OK, NoSpace, or another error (IoError and the rest).
  // Returns true when this changes whether the storage is failing (for logging once).
  bool Record(const Status& write);

  int64_t no_space_errors() const { return no_space_.load(); }
  int64_t io_errors() const { return io_.load(); }
  bool full() const { return full_.load(); }
  bool failing() const { return failing_.load(); }

 private:
  std::atomic<int64_t> no_space_{0}, io_{0};
  std::atomic<bool> full_{false}, failing_{false};
};

}  // namespace cincinnati::agent
