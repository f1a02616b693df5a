// PollReceipts: a stateless proof that a cluster has been polling at a version, so that
// policy-engine replicas behind one load balancer admit a report whichever replica saw
// the polls (reports/report_intake.h, step 3). No replica stores anything per poll: the
// cluster carries its proof.
//
// A receipt says (first poll, last poll, polls) for one cluster id and one version, and
// is an HMAC-SHA256 (cut to 16 bytes) under a key every replica shares, over a tag, the
// id (lower-cased), the version and those fields. Its text, `1.<first>.<last>.<polls>.<mac>`
// (Unix seconds, decimal; the MAC in unpadded base64url), is at most kMaxPollReceiptBytes
// of [0-9A-Za-z._-], safe in a header. The id and version are not in the text: they come
// from the request, so a receipt is valid only with the id and version it was made for.
//
// - Next: the receipt of a poll answered at `now`. A valid `previous` for the same id and
//   version continues (first kept, last = now, polls + 1, at most 65,535); anything else
//   (none, garbage, forged, another id or version, a `first` more than kClockSkew ahead
//   of `now`) starts a new one (first = last = now, polls 1). "" when the id is no UUID
//   or the version is not plain (at most 31 characters of [0-9A-Za-z.-]): as
//   PollSightings, no receipt is kept for them.
// - Proves: what PollSightings::SeenAt says, from the receipt alone: valid for (id,
//   version), at least `min_polls` polls, first `min_age` seconds or more before `now`,
//   last within `window` of it.
// So a cluster's receipt can only grow by polls the service answered: forking one (two
// clients continuing copies of it) counts real polls only, and replaying one proves only
// what it already proved. Someone who knows a cluster's id can still poll in its name,
// as with the sightings.
//
// Parsing is total (any bytes; over kMaxPollReceiptBytes is no receipt), the MAC is
// compared in constant time. A key is at least 32 bytes: the bytes of a file
// (FromKeyFile) every replica behind one address shares, or random per process (Random:
// a single replica). Immutable after construction: thread-safe; cheap to copy. Never
// throws.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati::server {

inline constexpr std::string_view kPollReceiptHeader = "Cincinnati-Poll-Receipt";
inline constexpr size_t kMaxPollReceiptBytes = 200;
inline constexpr size_t kMinPollReceiptKeyBytes = 32;

class PollReceipts {
 public:
  static Result<PollReceipts> FromKeyFile(const std::string& path);
  static Result<PollReceipts> FromKey(std::string_view key);
  static PollReceipts Random();

  std::string Next(std::string_view previous, std::string_view id, std::string_view version, int64_t now) const;
  bool Proves(std::string_view receipt, std::string_view id, std::string_view version, int64_t now, int64_t window,
              int64_t min_age, int min_polls) const;

 private:
  struct Fields {
    int64_t first = 0, last = 0, polls = 0;
  };
  struct Keyed;  // poll_receipt.cc: SHA-256 states after the key's inner and outer pads
  explicit PollReceipts(std::shared_ptr<const Keyed> keyed) : keyed_(std::move(keyed)) {}
  // The fields of `receipt` when it is valid for (id, version); `id` lower-cased already.
  bool Read(std::string_view receipt, std::string_view id, std::string_view version, Fields& out) const;
  std::string Write(std::string_view id, std::string_view version, const Fields& fields) const;
  std::string Mac(std::string_view id, std::string_view version, const Fields& fields) const;

  std::shared_ptr<const Keyed> keyed_;
};

}  // namespace cincinnati::server
