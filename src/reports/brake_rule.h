// BrakeRule: when the reports of an update edge say, with stated confidence, that it
// fails too often, and the graph builder should brake it.
//
// Counted per edge over distinct clusters: n clusters reported an attempt on the edge,
// k of them a failure that counts. The edge is braked when n >= min_clusters and the
// Wilson score interval's lower bound of the failure rate k/n, at one-sided
// `confidence`, is above `threshold`. Why Wilson: it stays meaningful at small n and at
// k = 0 (the normal approximation gives bounds below zero or of zero width there), and
// its lower bound tends to k/n from below as n grows, so an edge whose true failure rate
// is under the threshold is not braked by volume alone. With the defaults (20 clusters,
// 5 %, 95 %) an edge needs 3 failures of 20, 9 of 100, 62 of 1,000; an edge that fails
// 20 % of the time is braked after about 20 reports. Pure; never throws.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace cincinnati::reports {

struct BrakeRule {
  int64_t min_clusters = 20;  // distinct clusters with a report on the edge
  double threshold = 0.05;    // failure rate the lower bound must exceed
  double confidence = 0.95;   // one-sided confidence of the lower bound
};
Status ValidateBrakeRule(const BrakeRule& rule);  // InvalidArgument naming the setting

// z such that P(Z > z) = 1 - confidence for a standard normal Z (0.95 -> 1.6449).
double OneSidedZ(double confidence);
// The Wilson score interval's lower bound of k/n at `z`; 0 when n is 0.
double WilsonLowerBound(int64_t failures, int64_t clusters, double z);

struct EdgeCounts {
  int64_t clusters = 0;  // distinct clusters that reported an attempt on the edge
  int64_t failures = 0;  // distinct clusters among them with a counted failure
};
struct BrakeVerdict {
  bool brake = false;
  double lower_bound = 0;
};
BrakeVerdict Evaluate(const EdgeCounts& counts, const BrakeRule& rule);

}  // namespace cincinnati::reports
