#include "operator/leadership.h"

#include <unistd.h>

#include <atomic>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

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
    ForgetTermSettled();  // a new term: the operator sets its own check
    // Who leads, for a standby's answers: best effort, the lock is what counts; a failed
    // write (a full disk) is said, since standbys then name no leader.
    if (Status named = lock_->WriteHolder(holder_ + "\n"); !named.ok()) {
      spdlog::warn("leadership: this replica leads, but its name could not be written for standbys: {}", named.message());
    }
    return true;
  }
  // Nobody can take a held flock away.
  Status Renew() override { return held_ ? Status::OK() : Status::Conflict("not the leader"); }
  // The term's calls end first (TermSettled waits for them, bounded): the next leader
  // acts as soon as it locks, with no grace, so none of this term's may still run then.
  // Whatever it answers, the lock goes: a lock file has no record of a clean end.
  void Release() override {
    if (held_) {
      if (!TermSettled()) spdlog::info("leadership: released with this term's calls perhaps still running");
      lock_->Unlock();
    }
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

std::string_view ReplicaRoleName(ReplicaRole role) {
  switch (role) {
    case ReplicaRole::kStandby: return "Standby";
    case ReplicaRole::kWaitingOut: return "WaitingOut";
    case ReplicaRole::kActing: return "Acting";
    case ReplicaRole::kLapsed: return "Lapsed";
  }
  return "Standby";
}

bool ReplicaRoleMoveAllowed(ReplicaRole from, ReplicaRole to) {
  using R = ReplicaRole;
  switch (to) {
    case R::kStandby: return from != R::kStandby;
    case R::kWaitingOut: return from == R::kStandby || from == R::kLapsed;
    case R::kActing: return from == R::kWaitingOut || from == R::kLapsed;
    case R::kLapsed: return from == R::kWaitingOut || from == R::kActing;
  }
  return false;
}

bool ReplicaRoleState::Move(ReplicaRole to) const {
  if (!ReplicaRoleMoveAllowed(role_, to)) {
    spdlog::error("this replica cannot move from {} to {}: not an allowed move (a bug in the operator)", ReplicaRoleName(role_),
                  ReplicaRoleName(to));
    return false;
  }
  if (to == ReplicaRole::kLapsed) {
    spdlog::warn("the leadership was not renewed within its lease: no pass, command or call starts until it is");
  } else if (role_ == ReplicaRole::kLapsed) {
    spdlog::info("the leadership is renewed again");
  }
  role_ = to;
  return true;
}

ReplicaRole ReplicaRoleState::At(SteadyTime now) const {
  std::function<void()> ended;
  ReplicaRole role;
  {
    std::lock_guard lock(mu_);
    if (role_ == ReplicaRole::kStandby) return role_;
    const bool lapsed = lease_.count() > 0 && now - renewed_ >= lease_ - kLeaseMargin;
    const ReplicaRole due = lapsed ? ReplicaRole::kLapsed : now >= acting_from_ ? ReplicaRole::kActing : ReplicaRole::kWaitingOut;
    if (due != role_ && Move(due) && due == ReplicaRole::kLapsed) ended = term_ended_;
    role = role_;
  }
  if (ended) ended();
  return role;
}

bool ReplicaRoleState::Holds() const {
  std::lock_guard lock(mu_);
  return role_ != ReplicaRole::kStandby;
}

ReplicaRoleState::SteadyTime ReplicaRoleState::acting_from() const {
  std::lock_guard lock(mu_);
  return acting_from_;
}

void ReplicaRoleState::TookOver(SteadyTime renewed, SteadyTime acting_from, std::chrono::seconds lease) {
  std::lock_guard lock(mu_);
  if (!Move(ReplicaRole::kWaitingOut)) return;
  renewed_ = renewed;
  acting_from_ = acting_from;
  lease_ = lease;
}

void ReplicaRoleState::Renewed(SteadyTime asked) {
  std::lock_guard lock(mu_);
  if (role_ != ReplicaRole::kStandby) renewed_ = asked;
}

bool ReplicaRoleState::StepDown() {
  std::function<void()> ended;
  {
    std::lock_guard lock(mu_);
    if (role_ == ReplicaRole::kStandby || !Move(ReplicaRole::kStandby)) return false;
    ended = term_ended_;
  }
  if (ended) ended();
  return true;
}

void ReplicaRoleState::OnTermEnd(std::function<void()> ended) {
  std::lock_guard lock(mu_);
  term_ended_ = std::move(ended);
}

void Leadership::SetTermSettled(std::function<bool()> settled) {
  std::lock_guard lock(settled_mu_);
  settled_ = std::move(settled);
}

bool Leadership::TermSettled() {
  std::function<bool()> settled;
  {
    std::lock_guard lock(settled_mu_);
    settled = settled_;
  }
  return settled && settled();
}

void Leadership::ForgetTermSettled() {
  std::lock_guard lock(settled_mu_);
  settled_ = nullptr;
}

}  // namespace cincinnati::upgrade
