#include "agent/storage_health.h"

namespace cincinnati::agent {

bool StorageHealth::Record(StorageArea area, const Status& write) {
  const size_t i = static_cast<size_t>(area);
  if (write.ok()) {
    full_[i] = false;
    return failing_[i].exchange(false);
  }
  const bool no_space = write.code() == Status::Code::kNoSpace;
  (no_space ? no_space_ : io_).fetch_add(1);
  full_[i] = no_space;
  return !failing_[i].exchange(true);
}

}  // namespace cincinnati::agent
