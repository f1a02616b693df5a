#include "operator/leadership.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace cincinnati::upgrade {
namespace {

class FileLock final : public Leadership {
 public:
  FileLock(int fd, std::string path, std::string holder) : fd_(fd), path_(std::move(path)), holder_(std::move(holder)) {}
  ~FileLock() override { ::close(fd_); }

  Result<bool> TryAcquire() override {
    if (held_) return true;
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) return false;
      return Status::IoError(fmt::format("locking {}: {}", path_, std::strerror(errno)));
    }
    held_ = true;
    // Who leads, for a standby's answers: best effort, the lock is what counts.
    if (::ftruncate(fd_, 0) == 0) {
      const std::string line = holder_ + "\n";
      (void)!::pwrite(fd_, line.data(), line.size(), 0);
    }
    return true;
  }
  // Nobody can take a held flock away.
  Status Renew() override { return held_ ? Status::OK() : Status::Conflict("not the leader"); }
  void Release() override {
    if (held_) ::flock(fd_, LOCK_UN);
    held_ = false;
  }
  std::string Leader() override {
    if (held_) return holder_;
    char buffer[256];
    const ssize_t n = ::pread(fd_, buffer, sizeof buffer, 0);
    std::string text(buffer, n > 0 ? static_cast<size_t>(n) : 0);
    return text.substr(0, text.find('\n'));
  }
  std::chrono::seconds lease() const override { return std::chrono::seconds(0); }
  std::chrono::milliseconds PredecessorGrace(std::chrono::seconds) override { return std::chrono::milliseconds(0); }

 private:
  int fd_;
  std::string path_, holder_;
  std::atomic<bool> held_{false};  // Leader() is asked from the API threads
};

}  // namespace

Result<std::unique_ptr<Leadership>> LockFileLeadership(const std::string& lock_path, std::string holder) {
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError(fmt::format("{}: {}", lock_path, std::strerror(errno)));
  return std::unique_ptr<Leadership>(std::make_unique<FileLock>(fd, lock_path, std::move(holder)));
}

std::string DefaultReplicaName() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return fmt::format("{}:{}", host[0] ? host : "unknown-host", ::getpid());
}

}  // namespace cincinnati::upgrade
