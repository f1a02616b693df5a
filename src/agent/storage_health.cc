#include "agent/storage_health.h"

namespace cincinnati::agent {

bool StorageHealth::Record(const Status& write) {
  if (write.ok()) {
    full_ = false;
    return failing_.exchange(false);
  }
  const bool no_space = write.code() == Status::Code::kNoSpace;
  (no_space ? no_space_ : io_).fetch_add(1);
  full_ = no_space;
  return !failing_.exchange(true);
}

}  // namespace cincinnati::agent
