#include "signing/upstream_trust.h"

#include <fmt/format.h>

#include <algorithm>

namespace cincinnati::server {

UpstreamTrust::UpstreamTrust(TrustedKeys keys, bool require, http_server::Family<http_server::Counter>& results)
    : keys_(std::move(keys)), require_(require), results_(results) {
  // Every result from the start, so that a first refusal is an increase, not a new series.
  results_.With({"accepted"});
  results_.With({"unsigned"});
  for (SignatureVerdict v : {SignatureVerdict::kMissing, SignatureVerdict::kMalformed, SignatureVerdict::kUnknownKey,
                             SignatureVerdict::kInvalid, SignatureVerdict::kExpired, SignatureVerdict::kRolledBack}) {
    results_.With({std::string(SignatureReason(v))});
  }
}

UpstreamTrust::Verdict UpstreamTrust::Refuse(SignatureVerdict why, std::string message) {
  results_.With({std::string(SignatureReason(why))}).Increment();
  Verdict verdict;
  verdict.refusal = fmt::format("{}: {}", SignatureReason(why), message);
  return verdict;
}

UpstreamTrust::Verdict UpstreamTrust::Check(const std::string* header, std::string_view body, const AnswerScope& scope, int64_t now,
                                            bool rollback, const std::string* withheld) {
  if (header == nullptr) {
    if (!require_ && !seen_signed_.load()) {
      results_.With({"unsigned"}).Increment();
      return Verdict{.taken = true};
    }
    if (withheld != nullptr) return Refuse(SignatureVerdict::kExpired, WithheldMessage(*withheld));
    return Refuse(SignatureVerdict::kMissing,
                  fmt::format("the answer is unsigned, and {}",
                              require_ ? "upstream.cincinnati.require_signature is on (the default with upstream.cincinnati.public_keys)"
                                       : "this upstream signed its answers before (restart the policy engine if it stopped "
                                         "signing on purpose)"));
  }
  const SignatureCheck check = CheckAnswerSignature(header, body, scope, keys_, now, 0);
  if (check.verdict != SignatureVerdict::kAccepted) return Refuse(check.verdict, check.message);
  if (rollback) {
    std::lock_guard lock(mu_);
    if (check.facts.generation < newest_generation_ && check.facts.signed_at <= newest_signed_at_) {
      return Refuse(SignatureVerdict::kRolledBack,
                    fmt::format("a new graph of generation {}, signed at {}, is older than generation {} signed at {}: a replayed "
                                "answer (restart the policy engine if its upstream's graphs were renumbered on purpose)",
                                check.facts.generation, check.facts.signed_at, newest_generation_, newest_signed_at_));
    }
    // The highest generation stays the mark: a lower one signed later is taken, but does
    // not lower it.
    if (check.facts.generation > newest_generation_) {
      newest_generation_ = check.facts.generation;
      newest_signed_at_ = check.facts.signed_at;
    } else if (check.facts.generation == newest_generation_) {
      newest_signed_at_ = std::max(newest_signed_at_, check.facts.signed_at);
    }
  }
  results_.With({"accepted"}).Increment();
  seen_signed_ = true;
  return Verdict{.taken = true, .is_signed = true, .facts = check.facts};
}

}  // namespace cincinnati::server
