// UpgradeOperator's part in leadership (upgrade_operator.h, "Replicas"): electing,
// taking over, stepping down, and a standby's view of the state.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "operator/upgrade_operator.h"

namespace cincinnati::upgrade {
namespace {

// controller-runtime's name and labels for the same fact, so that existing dashboards
// and alerts on a leader-elected operator read it.
constexpr const char* kLeaderMetric = "leader_election_master_status";
const Labels kLeaderLabels = {{"name", "upgrade-operator"}};

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
  std::lock_guard lock(mu_);
  configs_ = FleetConfigs(std::move(*saved));
  const auto now = options_.clock->Steady();
  // Its agent calls may be longer than the HTTP ports' (replicas share their settings).
  const auto grace = replica_.leadership->PredecessorGrace(std::max(kLongestCall, options_.agent_timeout));
  const auto acting_from = now + grace;
  for (auto& [name, state] : clusters_) {
    state->backoff = std::chrono::seconds(0);
    state->note.clear();
    state->last_error.clear();
    state->calls->Reset();  // an earlier term's answers are not this term's
    SetDue(*state, acting_from);  // every cluster at once: the last leader's schedule is not known
  }
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
    // At most once a second, and only when asked: reading every config costs about
    // 0.5 s of CPU at 10,000 clusters, and a standby is rarely asked.
    std::lock_guard lock(mu_);
    const auto now = options_.clock->Steady();
    if (passes_.in_flight > 0 || (replica_.standby_read != env::Clock::SteadyTime{} && now - replica_.standby_read < std::chrono::seconds(1))) return;
    replica_.standby_read = now;
  }
  auto saved = store_->LoadConfigs();
  if (!saved.ok()) return;  // the last view stays; the leader's API answers anyway
  std::lock_guard lock(mu_);
  // Taken over meanwhile: the new term's state, read after its epoch, stays.
  if (replica_.role.Holds() || passes_.in_flight > 0) return;
  configs_ = FleetConfigs(std::move(*saved));
}

}  // namespace cincinnati::upgrade
