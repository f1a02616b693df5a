// SequentialBrake: a brake rule whose false-brake probability holds over the whole
// rollout, however often it is checked.
//
// The test: a one-sided mixture sequential probability ratio test for a binomial rate,
// H0: p <= p0 (p0 = the rule's threshold). After n attempts with k failures,
//   L_n = ∫ (p/p0)^k ((1-p)/(1-p0))^(n-k) π(p) dp,
// π a Beta(a, b) prior truncated to (p0, 1]. For every p > p0 the integrand is a
// nonnegative supermartingale under any true rate q <= p0 (one step multiplies it by
// q·p/p0 + (1-q)(1-p)/(1-p0) <= 1), so the mixture is one too, and by Ville's
// inequality P(L_n ever >= 1/alpha) <= alpha, alpha = 1 - confidence: checked after
// every report, an edge whose true failure rate is at most the threshold is braked with
// probability at most alpha over the whole (even unending) rollout. This is Robbins'
// mixture likelihood ratio; see Howard, Ramdas, McAuliffe and Sekhon, "Time-uniform,
// nonparametric, nonasymptotic confidence sequences". The settings keep their meaning:
// brake when the failure rate is credibly above `threshold`, at `confidence`, with at
// least `min_clusters` counted attempts (fewer only makes brakes rarer).
//
// Closed form: L_n = B(a+k, b+n-k)·Q(a+k, b+n-k, p0) / (B(a, b)·Q(a, b, p0)) /
// (p0^k (1-p0)^(n-k)), Q the regularized upper incomplete beta; computed in logs
// (log-Beta from lgamma, Q from Boost.Math), so it stays finite at n = 10^6. L_n grows
// with k at fixed n (every integrand does), and L_n <= 1 whenever k/n <= p0 (every
// integrand is at most 1 there), so such an edge is never braked.
//
// The prior: Beta with mean `mean` (0.12) and strength a+b = `strength` (50; the
// settings brakes.prior_mean and brakes.prior_strength once wired), truncated to
// (p0, 1]: most of its mass on 6-20 %. Why: the mixture spends its alpha where the prior
// puts mass. Edges failing 40 % are braked after 8-10 attempts by any prior; the ones
// that take long are those a little above the threshold, so the mass goes there (a
// uniform prior on (p0, 1] spends most of it on rates no edge that is hard to judge
// has): 190 attempts at a steady 10 % (the other priors tried: up to 300), 30 at 20 %,
// 560 at 8 %. Chosen on bench/brake_rollouts.cc's exposure (the table in
// docs/reports-and-brakes.md); the prior moves exposure by a few percent, the order
// attempts are counted in (start_order.h) by much more. An evaluation costs about 3 µs
// (two incomplete betas), at n = 30 as at n = 10^6. Pure; never throws.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "reports/brake_rule.h"

namespace cincinnati::reports {

struct MixturePrior {
  double mean = 0.12;    // Beta's mean before truncation; above the threshold
  double strength = 50;  // a + b
};
Status ValidateMixturePrior(const MixturePrior& prior, const BrakeRule& rule);  // InvalidArgument

// log L_n for k failures of n at threshold p0 under `prior` (0 at n = 0; finite or
// -infinity, never NaN for valid arguments).
double LogMixtureRatio(int64_t failures, int64_t clusters, double threshold, const MixturePrior& prior);

struct SequentialCounts {
  int64_t clusters = 0;           // attempts counted, in start order (start_order.h)
  int64_t failures = 0;           // of them, failures (stuck ones included)
  int64_t excluded = 0;           // attempts of known-bad sites, not counted
  int64_t excluded_failures = 0;  // of them, failures
};
struct SequentialVerdict {
  bool brake = false;
  double log_ratio = 0;      // log L_n; brake when >= log(1/alpha)
  double edge_rate = 0;      // failures / clusters counted
  double baseline_rate = 0;  // failures / attempts among known-bad sites (0 when none)
};
SequentialVerdict EvaluateSequential(const SequentialCounts& counts, const BrakeRule& rule,
                                     const MixturePrior& prior = {});

}  // namespace cincinnati::reports
