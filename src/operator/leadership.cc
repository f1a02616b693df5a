#include "operator/leadership.h"

#include <unistd.h>

#include <atomic>

#include <fmt/format.h>

#include "env/file_system.h"

namespace cincinnati::upgrade {
namespace {

class FileLock final : public Leadership {
 public:
  FileLock(std::unique_ptr<env::FileLock> lock, std::string holder) : lock_(std::move(lock)), holder_(std::move(holder)) {}

  Result<bool> TryAcquire() override {
    if (held_) return true;
    CINCINNATI_ASSIGN_OR_RETURN(bool locked, lock_->TryLock());
    if (!locked) return false;
    held_ = true;
    // Who leads, for a standby's answers: best effort, the lock is what counts.
    (void)lock_->WriteHolder(holder_ + "\n");
    return true;
  }
  // Nobody can take a held flock away.
  Status Renew() override { return held_ ? Status::OK() : Status::Conflict("not the leader"); }
  void Release() override {
    if (held_) lock_->Unlock();
    held_ = false;
  }
  std::string Leader() override {
    if (held_) return holder_;
    const std::string text = lock_->ReadHolder(256);
    return text.substr(0, text.find('\n'));
  }
  std::chrono::seconds lease() const override { return std::chrono::seconds(0); }
  std::chrono::milliseconds PredecessorGrace(std::chrono::seconds) override { return std::chrono::milliseconds(0); }

 private:
  std::unique_ptr<env::FileLock> lock_;
  std::string holder_;
  std::atomic<bool> held_{false};  // Leader() is asked from the API threads
};

}  // namespace

Result<std::unique_ptr<Leadership>> LockFileLeadership(const std::string& lock_path, std::string holder) {
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<env::FileLock> lock, env::FileLock::Open(lock_path, 0644));
  return std::unique_ptr<Leadership>(std::make_unique<FileLock>(std::move(lock), std::move(holder)));
}

std::string DefaultReplicaName() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return fmt::format("{}:{}", host[0] ? host : "unknown-host", ::getpid());
}

}  // namespace cincinnati::upgrade
