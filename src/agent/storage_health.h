// StorageHealth: what the agent's writes to its state directory met, for /metrics and
// logs. Every write of state (the ClusterVersion, the update's progress), every
// payload download and every update report queued reports its outcome here, by area. A full disk is counted apart
// from other I/O errors. `full()` says whether, in some area, the last failed write
// found no space and no write of that area has succeeded since: a small state write
// that fits does not hide a payload that does not.
//
// Thread-safety: every method may be called from any thread (atomics).
#pragma once

#include <atomic>
#include <cstdint>

#include "core/status.h"

namespace cincinnati::agent {

enum class StorageArea { kState, kPayloads, kReports };

class StorageHealth {
 public:
  // The outcome of a write in `area`: OK, NoSpace, or another error (IoError and the
  // rest). Returns true when this changes whether that area is failing (log once).
  bool Record(StorageArea area, const Status& write);

  int64_t no_space_errors() const { return no_space_.load(); }
  int64_t io_errors() const { return io_.load(); }
  bool full() const { return full_[0].load() || full_[1].load() || full_[2].load(); }

 private:
  std::atomic<int64_t> no_space_{0}, io_{0};
  std::atomic<bool> full_[3] = {false, false, false}, failing_[3] = {false, false, false};
};

}  // namespace cincinnati::agent
