// brake_rollouts: the old brake rule (Wilson lower bound after every report,
// reports/brake_rule.h) against the sequential one (reports/sequential_brake.h fed in
// start order by reports/start_order.h), over many simulated rollouts of one edge.
//
// Each rollout: N clusters take one edge; draws as the fleet simulator's
// (fleet/fleet_random.h, the same purposes): a poll phase in the cluster's [2, 4) min
// interval, then the admin delay (exp:6h, the simulator docs' demo), then the update for
// its duration (uniform 30m-90m). A success is reported at completion; a failure at a
// uniform point of the update plus the agent's degraded grace (600 s), so failures
// arrive before the slower successes, as our agents report them (the "failures reported
// early" cases), or at completion as the simulator's clusters report them (the others). A known-bad site (a
// share of the fleet) fails every update, and failed its previous one elsewhere. The
// HTTP service is not run: 200 rollouts x 10,000 clusters x several cases through
// real HTTP would take hours; the rules here are the service's own functions.
//
// A brake stops new starts: "exposed" is the clusters started before it. Each case
// runs both rules on the same draws. Output: one table (Markdown), per case.
//
// Usage: brake_rollouts [--rollouts 200] [--clusters 10000] [--prior_mean 0.12]
//        [--prior_strength 50] [--horizon_secs 7200] [--lags_secs 0,900,...]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fleet/fleet_random.h"
#include "fleet/fleet_spec.h"
#include "reports/brake_rule.h"
#include "reports/sequential_brake.h"
#include "reports/start_order.h"

namespace {

using cincinnati::fleet::Distribution;
using cincinnati::fleet::Draw;
using cincinnati::fleet::DrawUnit;
using cincinnati::fleet::HashText;
namespace reports = cincinnati::reports;

constexpr int64_t kDegradedGrace = 600;  // agent/update_runner.h's default
constexpr int64_t kNoBrake = INT64_MAX;

struct Settings {
  int rollouts = 200;
  int clusters = 10'000;
  reports::MixturePrior prior;
  int64_t horizon_secs = 7200;
  std::vector<int64_t> lags = reports::StartOrderOptions{}.lags_secs;
};

// When a failure is reported: at completion, as the fleet simulator's clusters report
// it, or as our agent does (where it shows, plus the degraded grace), before successes.
enum class Timing { kSimulator, kAgent };

struct Case {
  const char* name;
  double failure_rate;  // of the edge itself
  double bad_sites;     // share of known-bad sites (fail every update)
  Timing timing;
};

struct Attempt {
  int64_t start = 0, reported = 0;
  bool failed = false, bad_site = false;
};

std::vector<Attempt> DrawRollout(uint64_t seed, const Case& c, int clusters) {
  const uint64_t from = HashText("4.13.1"), to = HashText("4.13.2");
  const Distribution delay{Distribution::Kind::kExponential, 6 * 3600, 0};
  const Distribution duration{Distribution::Kind::kUniform, 30 * 60, 90 * 60};
  std::vector<Attempt> out(static_cast<size_t>(clusters));
  for (uint64_t i = 0; i < out.size(); ++i) {
    Attempt& a = out[i];
    const double interval = 120 + static_cast<int64_t>(DrawUnit(seed, i, Draw::kInterval) * 120);
    const auto phase = static_cast<int64_t>(DrawUnit(seed, i, Draw::kPhase) * interval);
    a.start = phase + delay.Sample(DrawUnit(seed, i, Draw::kDelay, from));
    const int64_t length = std::max<int64_t>(1, duration.Sample(DrawUnit(seed, i, Draw::kDuration, from, to)));
    a.bad_site = DrawUnit(seed, i, Draw::kFailure, HashText("known-bad site")) < c.bad_sites;
    a.failed = a.bad_site || DrawUnit(seed, i, Draw::kFailure, from, to) < c.failure_rate;
    // Where in the update a failure shows: its own draw, so it does not track `failed`.
    const double at = DrawUnit(seed, i, Draw::kFailure, to, from);
    const bool early = a.failed && c.timing == Timing::kAgent;
    a.reported = a.start + (early ? static_cast<int64_t>(at * static_cast<double>(length)) + kDegradedGrace : length);
  }
  return out;
}

// The old rule as simulation_answers.cc applies it: counts in report order, checked
// after every report. Returns the brake's time.
int64_t OldRuleBrake(const std::vector<Attempt>& attempts) {
  std::vector<const Attempt*> order;
  order.reserve(attempts.size());
  for (const Attempt& a : attempts) order.push_back(&a);
  std::sort(order.begin(), order.end(), [](const Attempt* x, const Attempt* y) { return x->reported < y->reported; });
  reports::EdgeCounts counts;
  const reports::BrakeRule rule;
  for (const Attempt* a : order) {
    ++counts.clusters;
    counts.failures += a->failed;
    if (reports::Evaluate(counts, rule).brake) return a->reported;
  }
  return kNoBrake;
}

// The sequential rule: events are starts (announced mode), reports, and each attempt's
// horizon (when it becomes countable); checked after each that changes the counts.
int64_t SequentialBrake(const std::vector<Attempt>& attempts, bool announced, const Settings& s) {
  enum Kind : uint8_t { kStart, kReport, kHorizon };
  struct Event {
    int64_t t;
    uint32_t who;
    Kind kind;
  };
  std::vector<Event> events;
  events.reserve(attempts.size() * 3);
  for (uint32_t i = 0; i < attempts.size(); ++i) {
    if (announced) events.push_back({attempts[i].start, i, kStart});
    events.push_back({attempts[i].reported, i, kReport});
    events.push_back({attempts[i].start + s.horizon_secs, i, kHorizon});
  }
  std::sort(events.begin(), events.end(), [](const Event& x, const Event& y) {
    return x.t != y.t ? x.t < y.t : x.kind < y.kind;
  });
  reports::StartOrderSettler settler({.horizon_secs = s.horizon_secs, .starts_announced = announced, .lags_secs = s.lags});
  const reports::BrakeRule rule;
  std::vector<reports::SequentialCounts> last;
  for (const Event& e : events) {
    const Attempt& a = attempts[e.who];
    if (e.kind == kStart) settler.Start(e.who, a.start, a.bad_site, e.t);
    if (e.kind == kReport) settler.Resolve(e.who, a.start, a.failed, a.bad_site, e.t);
    const std::vector<reports::SequentialCounts> views = settler.Settle(e.t);
    last.resize(views.size(), reports::SequentialCounts{-1, -1, 0, 0});
    for (size_t v = 0; v < views.size(); ++v) {
      const reports::SequentialCounts& counts = views[v];
      if (counts.clusters == last[v].clusters && counts.failures == last[v].failures) continue;
      last[v] = counts;
      // k/n at or under the threshold never brakes (sequential_brake.h): skip the maths.
      if (counts.failures * 1.0 <= rule.threshold * static_cast<double>(counts.clusters)) continue;
      if (reports::EvaluateSequential(counts, rule, s.prior).brake) return e.t;
    }
  }
  return kNoBrake;
}

int64_t Exposed(const std::vector<Attempt>& attempts, int64_t brake) {
  int64_t n = 0;
  for (const Attempt& a : attempts) n += a.start < brake;
  return n;
}

struct Tally {
  int braked = 0;
  std::vector<int64_t> exposed;  // of braked rollouts
  void Add(const std::vector<Attempt>& attempts, int64_t brake) {
    if (brake == kNoBrake) return;
    ++braked;
    exposed.push_back(Exposed(attempts, brake));
  }
  std::string Exposure() {
    if (exposed.empty()) return "-";
    std::sort(exposed.begin(), exposed.end());
    double mean = 0;
    for (int64_t x : exposed) mean += static_cast<double>(x);
    mean /= static_cast<double>(exposed.size());
    char text[64];
    std::snprintf(text, sizeof text, "%.0f (median %lld)", mean, static_cast<long long>(exposed[exposed.size() / 2]));
    return text;
  }
};

void RunCase(const Case& c, const Settings& s) {
  Tally old_rule, reports_only, announced;
  for (int r = 0; r < s.rollouts; ++r) {
    const uint64_t seed = 1000 + static_cast<uint64_t>(r);
    const std::vector<Attempt> attempts = DrawRollout(seed, c, s.clusters);
    old_rule.Add(attempts, OldRuleBrake(attempts));
    reports_only.Add(attempts, SequentialBrake(attempts, false, s));
    announced.Add(attempts, SequentialBrake(attempts, true, s));
  }
  auto share = [&](const Tally& t) { return 100.0 * t.braked / s.rollouts; };
  std::printf("| %s | %.1f %% | %.1f %% | %.1f %% | %s | %s | %s |\n", c.name, share(old_rule), share(reports_only),
              share(announced), old_rule.Exposure().c_str(), reports_only.Exposure().c_str(), announced.Exposure().c_str());
  std::fflush(stdout);
}

bool ParseArgs(int argc, char** argv, Settings& s) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const double v = std::strtod(argv[i + 1], nullptr);
    if (flag == "--lags_secs") {  // comma-separated
      s.lags.clear();
      for (char* p = argv[i + 1]; *p != '\0'; p += *p == ',') s.lags.push_back(std::strtoll(p, &p, 10));
      continue;
    }
    if (flag == "--rollouts") s.rollouts = static_cast<int>(v);
    else if (flag == "--clusters") s.clusters = static_cast<int>(v);
    else if (flag == "--prior_mean") s.prior.mean = v;
    else if (flag == "--prior_strength") s.prior.strength = v;
    else if (flag == "--horizon_secs") s.horizon_secs = static_cast<int64_t>(v);
    else return false;
  }
  return argc % 2 == 1 && s.rollouts > 0 && s.clusters > 0 &&
         reports::ValidateMixturePrior(s.prior, reports::BrakeRule{}).ok();
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  if (!ParseArgs(argc, argv, s)) {
    std::fprintf(stderr, "usage: brake_rollouts [--rollouts N] [--clusters N] [--prior_mean P] [--prior_strength S] "
                         "[--horizon_secs H] [--lags_secs A,B,...]\n");
    return 2;
  }
  std::printf("%d rollouts of %d clusters each; threshold 5 %%, confidence 95 %%, min 20 clusters; prior Beta mean %.3g "
              "strength %.3g; horizon %llds\n\n",
              s.rollouts, s.clusters, s.prior.mean, s.prior.strength, static_cast<long long>(s.horizon_secs));
  std::printf("| edge | braked: old | new, reports only | new, starts announced | exposed before brake: old | "
              "new, reports only | new, starts announced |\n|---|---|---|---|---|---|---|\n");
  const Case cases[] = {
      {"true 3 %", 0.03, 0, Timing::kSimulator},
      {"true 4 %", 0.04, 0, Timing::kSimulator},
      {"true 5 % (the threshold)", 0.05, 0, Timing::kSimulator},
      {"true 10 %", 0.10, 0, Timing::kSimulator},
      {"true 20 %", 0.20, 0, Timing::kSimulator},
      {"true 1 %, 2 % known-bad sites", 0.01, 0.02, Timing::kSimulator},
      {"true 3 %, failures reported early", 0.03, 0, Timing::kAgent},
      {"true 4 %, failures reported early", 0.04, 0, Timing::kAgent},
      {"true 10 %, failures reported early", 0.10, 0, Timing::kAgent},
      {"true 20 %, failures reported early", 0.20, 0, Timing::kAgent},
      {"true 1 %, 2 % known-bad sites, failures reported early", 0.01, 0.02, Timing::kAgent},
  };
  for (const Case& c : cases) RunCase(c, s);
  return 0;
}
