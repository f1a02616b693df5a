// Leadership: which replica of the upgrade operator acts. Replicas that share one state
// store elect one leader; the others are standbys that serve the read API from the store
// and take over when the leader goes.
//
// Contract, for the operator that drives it (once a second, on one thread):
//  - TryAcquire(): leads if nobody does and returns true. From then on the store accepts
//    this replica's writes under a new epoch (a fencing token that only grows) and
//    refuses the writes of every earlier leader, so the state must be read after it: a
//    write the old leader committed before is seen, one it tries after is refused.
//  - Renew(): the leader's heartbeat. An error means leadership is lost or cannot be
//    confirmed: the replica steps down at once (its writes are refused anyway).
//  - Release(): gives leadership up (a clean stop), so that a standby takes over at its
//    next try rather than after the lease. Before it lets go, it asks the term's settle
//    check (SetTermSettled, set by the operator for each term it acts in): when that says
//    every side effect the term started is over (and so is its predecessor's grace), the
//    term is recorded as ended cleanly, by the holder of its epoch while it still holds
//    it, so that the next leader need not wait out a grace for it. Without the check, or
//    when it says no, nothing is recorded and the next leader waits as after a kill -9.
//  - Leader(): who leads as far as this replica knows ("" unknown), for answers and logs.
//  - lease(): how long after the start of its last successful Renew (or TryAcquire) a
//    leader may start a side effect; the operator stops 2 s before (kLeaseMargin).
//  - PredecessorGrace(longest_call): after TryAcquire succeeded, how long the previous
//    leader may still act: the rest of its lease from its last renewal, less the margin,
//    plus the longest call it may have started; zero when there was none, or when it
//    cannot act any more (a process lock is only ever freed by its process ending).
//    The new leader starts no pass before that, so two replicas never act at once, a
//    leader cut off from the database included; a kill -9 costs that wait, a term ended
//    cleanly (Release above) none.
//  - Leader(): known from the start: a standby reads who leads when it is opened and at
//    each election round it loses, so that its first answers name the leader.
// Implementations: LockFileLeadership below (one host: the SQLite default) and the
// PostgreSQL session lock (postgres_state.h). Never throws.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati::upgrade {

// How often the operator renews, or tries to take, leadership.
inline constexpr std::chrono::seconds kElectionPeriod{1};
// A leader starts no side effect in the last seconds of its lease.
inline constexpr std::chrono::seconds kLeaseMargin{2};
// The longest a call to a peer runs once started (the HTTP ports' time limit; hooks are
// longer and must be idempotent, as the managed-upgrade operator's are).
inline constexpr std::chrono::seconds kLongestCall{10};

class Leadership {
 public:
  virtual ~Leadership() = default;
  virtual Result<bool> TryAcquire() = 0;
  virtual Status Renew() = 0;
  virtual void Release() = 0;
  virtual std::string Leader() = 0;
  virtual std::chrono::seconds lease() const = 0;
  virtual std::chrono::milliseconds PredecessorGrace(std::chrono::seconds longest_call) = 0;

  // Release()'s question for the term under way: are all its side effects over? It may
  // wait a while (bounded) for calls to end. Dropped when a new term is taken.
  void SetTermSettled(std::function<bool()> settled);

 protected:
  // The check for this term (false without one), and forgetting it (a new term).
  bool TermSettled();
  void ForgetTermSettled();

 private:
  std::mutex settled_mu_;
  std::function<bool()> settled_;  // under settled_mu_
};

// One leader per state directory: an exclusive flock on `lock_path`, which the kernel
// releases when the process dies however it dies. A second operator started on the same
// directory stands by instead of acting twice on the same clusters.
Result<std::unique_ptr<Leadership>> LockFileLeadership(const std::string& lock_path, std::string holder);

// "host:pid": a replica's default name.
std::string DefaultReplicaName();

// A replica's role in the fail-over, one state with one table of moves:
//   Standby -> WaitingOut           it took the leadership; its predecessor may still act
//   WaitingOut -> Acting            the predecessor's grace is over
//   WaitingOut | Acting -> Lapsed   not renewed within its lease less kLeaseMargin
//   Lapsed -> WaitingOut | Acting   renewed after all
//   WaitingOut | Acting | Lapsed -> Standby   it stepped down, released or lost the leadership
// A replica starts passes, agent commands and calls only while Acting, and answers as
// the leader (pause, resume) while WaitingOut or Acting. The moves that time makes
// (the grace ends, the lease lapses) are made when the role is read, so that a
// renewal hanging on its database stops every side effect on time. A move that ends
// or suspends the term (to Lapsed or Standby) calls the term-end action (OnTermEnd),
// outside the state's lock, on the thread that made the move: the operator kills the
// hooks it runs there, so that no hook of an ended term runs on.
enum class ReplicaRole { kStandby, kWaitingOut, kActing, kLapsed };
std::string_view ReplicaRoleName(ReplicaRole role);
bool ReplicaRoleMoveAllowed(ReplicaRole from, ReplicaRole to);

// The role and the times it is read against. Thread-safe: the election thread moves
// it, passes and API threads read it.
class ReplicaRoleState {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  ReplicaRole At(SteadyTime now) const;
  bool Holds() const;  // not Standby: it holds the leadership, lapsed or not
  SteadyTime acting_from() const;
  // Standby -> WaitingOut: renewed at `renewed`, acting from `acting_from`; `lease`
  // zero is a lock nobody takes away (it never lapses).
  void TookOver(SteadyTime renewed, SteadyTime acting_from, std::chrono::seconds lease);
  void Renewed(SteadyTime asked);  // the lease counts from `asked`
  bool StepDown();  // -> Standby; false when it stood by already (nothing to give up)
  // What to do when the term ends or lapses (must not block for long; no lock held).
  void OnTermEnd(std::function<void()> ended);

 private:
  bool Move(ReplicaRole to) const;  // every move, under mu_: refuses and logs one not in the table

  mutable std::mutex mu_;
  mutable ReplicaRole role_ = ReplicaRole::kStandby;
  SteadyTime renewed_{};
  SteadyTime acting_from_{};
  std::chrono::seconds lease_{0};
  std::function<void()> term_ended_;  // under mu_; called outside it
};

}  // namespace cincinnati::upgrade
