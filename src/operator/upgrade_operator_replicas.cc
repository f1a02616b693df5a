// UpgradeOperator's part in leadership (upgrade_operator.h, "Replicas"): electing,
// taking over, stepping down, and a standby's view of the state.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <memory>
#include <mutex>


#include "operator/upgrade_operator.h"

namespace cincinnati::upgrade {
namespace {

// controller-runtime's name and labels for the same fact, so that existing dashboards
// and alerts on a leader-elected operator read it.
constexpr const char* kLeaderMetric = "leader_election_master_status";
const Labels kLeaderLabels = {{"name", "upgrade-operator"}};

// Replica::standby_read while a standby's read of the configs is under way.
constexpr env::Clock::SteadyTime kStandbyReading = env::Clock::SteadyTime::max();
// How long an answer of a standby waits for its read of the configs (real time: it
// bounds a wait on the database, whose own deadline is longer).
constexpr std::chrono::milliseconds kStandbyReadWait{500};

// Elections run each second: a standby's news is logged once, until it changes.
void SayOnce(std::string& said, spdlog::level::level_enum level, const std::string& text) {
  if (text == said) return;
  spdlog::log(level, "{}", text);
  said = text;
}

}  // namespace

void UpgradeOperator::SetLeaderMetric(bool leading) { metrics_.Set(kLeaderMetric, kLeaderLabels, leading ? 1 : 0); }

ReplicaRole UpgradeOperator::Role() const { return replica_.role.At(options_.clock->Steady()); }

bool UpgradeOperator::Acting() const { return Role() == ReplicaRole::kActing; }

bool UpgradeOperator::Leading() const {
  const ReplicaRole role = Role();
  return role == ReplicaRole::kWaitingOut || role == ReplicaRole::kActing;
}

Status UpgradeOperator::RequireLeader() {
  if (Leading()) return Status::OK();
  const std::string leader = replica_.leadership->Leader();
  return Status::Conflict(fmt::format("this replica ({}) stands by{}: pause and resume on the leader", options_.replica_name,
                                      leader.empty() ? "" : "; the leader is " + leader));
}

void UpgradeOperator::Elect() {
  if (replica_.role.Holds()) {
    // The lease runs from before the request: the server may have counted it from any
    // moment of the round trip.
    const auto asked = options_.clock->Steady();
    Status renewed = replica_.leadership->Renew();
    if (renewed.ok()) {
      replica_.role.Renewed(asked);
      return;
    }
    StepDown(renewed.message());
    return;
  }
  {
    // Passes of a term that ended finish first: none may write over the next term's
    // state. A replica that stops takes no leadership.
    std::lock_guard lock(mu_);
    if (passes_.in_flight > 0 || passes_.stopping) return;
  }
  auto acquired = replica_.leadership->TryAcquire();
  if (acquired.ok() && *acquired) {
    TakeOver();
    return;
  }
  if (!acquired.ok()) {
    SayOnce(replica_.election_said, spdlog::level::warn, "cannot try to lead: " + acquired.status().message());
  } else {
    const std::string leader = replica_.leadership->Leader();
    SayOnce(replica_.election_said, spdlog::level::info, "standing by: " + (leader.empty() ? std::string("another replica") : leader) + " leads");
  }
}

std::map<std::string, UpgradeConfig> UpgradeOperator::FleetConfigs(std::vector<UpgradeConfig> saved) const {
  std::map<std::string, UpgradeConfig> out;
  for (auto& c : saved) {
    if (clusters_.count(c.cluster)) out[c.cluster] = std::move(c);
  }
  return out;
}

void UpgradeOperator::TakeOver() {
  // Read after the epoch was taken: every write of the last leader is in, and it can
  // make no more.
  auto saved = store_->LoadConfigs();
  if (!saved.ok()) {
    SayOnce(replica_.election_said, spdlog::level::err, "cannot lead without the state: " + saved.status().message());
    replica_.leadership->Release();
    return;
  }
  // Reading a large fleet takes a while: renew, and count the lease from then.
  const auto asked = options_.clock->Steady();
  if (Status renewed = replica_.leadership->Renew(); !renewed.ok()) {
    spdlog::warn("lost the leadership while reading the state: {}", renewed.message());
    replica_.leadership->Release();
    return;
  }
  const auto now = options_.clock->Steady();
  // Its agent calls may be longer than the HTTP ports' (replicas share their settings).
  // Asked before mu_ is taken: a store's Release holds its own lock while the term's
  // settle check below takes mu_, so the two are only ever taken in that order.
  const auto grace = replica_.leadership->PredecessorGrace(std::max(kLongestCall, options_.agent_timeout));
  const auto acting_from = now + grace;
  std::lock_guard lock(mu_);
  configs_ = FleetConfigs(std::move(*saved));
  for (auto& [name, state] : clusters_) {
    state->backoff = std::chrono::seconds(0);
    state->note.clear();
    state->last_error.clear();
    state->calls->Reset();  // an earlier term's answers are not this term's
    state->unsaved = false;  // the store, just read, is the truth: an earlier term's unsaved write is not this term's
    SetDue(*state, acting_from);  // every cluster at once: the last leader's schedule is not known
  }
  // Hooks are fenced to the term: when it ends or lapses, the ones running are killed.
  replica_.role.OnTermEnd([this] {
    int killed = 0;
    for (auto& [name, state] : clusters_) {  // clusters_ never changes after Open
      if (state->ports.hooks) killed += state->ports.hooks->KillRunning();
    }
    if (killed > 0) spdlog::warn("the leadership term ended or lapsed: {} running hooks killed", killed);
  });
  // A clean end is recorded only when nothing of this term, or of the one before, can
  // still act: the predecessor's grace is over, no pass runs, and every call ended.
  replica_.leadership->SetTermSettled([this, acting_from] {
    if (options_.clock->Steady() < acting_from) return false;
    {
      std::lock_guard passes_lock(mu_);
      if (passes_.in_flight > 0) return false;
    }
    const auto longest = std::max(kLongestCall, options_.agent_timeout) + std::chrono::seconds(2);
    return call_runner_->WaitIdle(std::chrono::duration_cast<std::chrono::milliseconds>(longest));
  });
  replica_.role.TookOver(asked, acting_from, replica_.leadership->lease());
  replica_.election_said.clear();
  SetLeaderMetric(true);
  spdlog::info("leading as {}: the state of {} clusters read; acting in {} ms (the last leader's lease and longest call)",
               options_.replica_name, configs_.size(), grace.count());
  passes_.woken = true;
  passes_.sync_requested = true;
  passes_.wake.notify_all();
}

void UpgradeOperator::StepDown(const std::string& why) {
  if (!replica_.role.StepDown()) return;
  replica_.leadership->Release();
  SetLeaderMetric(false);
  spdlog::warn("no longer leading ({}): no pass starts until this replica leads again", why);
  std::lock_guard lock(mu_);
  passes_.woken = true;
  passes_.wake.notify_all();
}

void UpgradeOperator::RefreshStandby() {
  if (replica_.role.Holds()) return;
  {
    // At most once a second, one read at a time, and only when asked: reading every
    // config costs about 0.5 s of CPU at 10,000 clusters, and a standby is rarely asked.
    std::lock_guard lock(mu_);
    const auto now = options_.clock->Steady();
    if (replica_.standby_read == kStandbyReading) return;
    if (passes_.in_flight > 0 || (replica_.standby_read != env::Clock::SteadyTime{} && now - replica_.standby_read < std::chrono::seconds(1))) return;
    replica_.standby_read = kStandbyReading;
  }
  // Read on a call thread, waited for a moment: an answer (a scrape of /metrics, a
  // List) never waits on a database that does not answer; it shows the last view, and
  // the read, bounded by the store's deadline, lands when it can.
  struct Read {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
  };
  auto read = std::make_shared<Read>();
  call_runner_->Post([this, read] {
    auto saved = store_->LoadConfigs();
    {
      std::lock_guard lock(mu_);
      replica_.standby_read = options_.clock->Steady();
      // Failed: the last view stays (the leader's API answers anyway). Taken over
      // meanwhile: the new term's state, read after its epoch, stays.
      if (saved.ok() && !replica_.role.Holds() && passes_.in_flight == 0) configs_ = FleetConfigs(std::move(*saved));
    }
    std::lock_guard lock(read->mu);
    read->done = true;
    read->done_cv.notify_all();
  });
  std::unique_lock lock(read->mu);
  read->done_cv.wait_for(lock, kStandbyReadWait, [&] { return read->done; });
}

}  // namespace cincinnati::upgrade
