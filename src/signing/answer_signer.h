// AnswerSigner: the header lines of a service's graph answers (the signature's
// format in core/answer_signature.h):
//   Cincinnati-Graph-Generation: G            (always: graph_generation.h)
//   Cincinnati-Graph-Fresh: F                 (always)
//   Cincinnati-Signature: v=1; ...            (when signing)
// formatted once per distinct (answer, query, generation, freshness), kept, and handed to
// every response that needs them as one shared view (Response::head_lines): serving a
// signed answer costs a lookup, with no hashing of the body, no allocation and no header
// map insertion per request. The answer's ETag names its bytes, and is a hash already
// (View::etag(): a SHA-256 prefix in hex): the lookup takes 16 of its digits as they are
// and mixes in the query's few bytes, eight at a time, with a random seed (so that which
// queries share a bucket cannot be chosen from outside); a hit compares the whole.
//
// Freshness: a signature expires `validity` after `fresh_as_of`, the moment the graph's
// source last vouched for it (a graph builder's last successful refresh, passed down a
// chain as Cincinnati-Graph-Fresh: each service takes the older of its own last fetch
// and its upstream's), not after the request. A service cut off from its source, or a
// graph builder whose refreshes fail, keeps serving its last good graph, but checking
// agents see its answers expire `validity` later.
//
// Bounded: at most 14,336 kept entries (at most about 1.3 KiB each: the lines, and a
// query of at most kMaxKeptScope bytes; about 18 MiB in all, and 2 MiB for the sets), in
// 2,048 sets of 7 found by hash, each under a lock of its own, so that concurrent
// requests rarely wait for one another. A hit moves its entry to the front of its set; a
// new entry takes the front, and the set's least recently used leaves. So what is asked
// often stays, and a flood of distinct queries (unknown channels) costs a signature each
// but evicts in turn.
//
// Laid out for memory, not for instructions: on a server the kept entries of hundreds
// of distinct answers (a phased channel's per-cluster answers) are cold, and waiting on
// memory was most of what signing added to a request. A lookup reads one set's lock,
// hashes and pointers (128 bytes), then one entry that holds its ETag, query (a cluster
// id bound to the answer aside) and lines in one run of memory. A node-based map behind
// a shard's mutex waited in turn on the mutex, its bucket, the node before, the node,
// the entry and the lines. A caller with other work to do takes the lookup's first
// steps ahead (PrefetchSet, PrefetchEntry), so that the set and the entry arrive while
// it works; the sets sit in one 2 MiB huge page (if the kernel gives one), so that
// finding one rarely misses the TLB. Without keys it keeps only the unsigned lines of
// the newest (generation, freshness).
//
// Never an expired signature: an answer whose signature would expire at or before the
// moment it is signed (its source stopped answering for longer than the validity) goes
// out with the generation lines and Cincinnati-Signature-Withheld (core/answer_signature.h),
// counted in withheld_count() and logged once per freshness. Services refuse at start a validity no longer than the time between their
// source's answers (cli/service_signing.h), so this happens only when the source stops.
// Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/answer_signature.h"
#include "service/view_cache.h"

namespace cincinnati::server {

// What an answer's signature vouches for besides its bytes and query: the graph's
// generation, when its source last vouched for it, the latest moment an upstream's own
// signature allows (0: no limit; a policy engine never signs an answer valid for longer
// than the upstream answer it came from), and whether it was made for one cluster alone.
struct AnswerSource {
  uint64_t generation = 0;
  int64_t fresh_as_of = 0;  // Unix seconds
  int64_t not_after = 0;    // Unix seconds; 0: none
  bool per_cluster = false;
};

// "Cincinnati-Graph-Generation: G\r\nCincinnati-Graph-Fresh: F\r\n".
std::string GenerationLines(uint64_t generation, int64_t fresh_as_of);
// The channel, arch, version and id of a query (views into `params`).
AnswerScope QueryScope(const Parameters& params);

class AnswerSigner {
 public:
  // No keys: answers go unsigned (HeadLines still gives the generation lines).
  AnswerSigner(std::vector<std::shared_ptr<const SigningKey>> keys, std::chrono::seconds validity);
  // The signer of a service that does not sign: the generation lines alone.
  static std::shared_ptr<AnswerSigner> Unsigned();

  bool signing() const { return !keys_.empty(); }
  // The head lines for `view` answering `scope` (as the query gave it; the id is bound
  // only when `source.per_cluster`), signed at `now` (Unix seconds), valid `validity`
  // after `source.fresh_as_of` and never after `source.not_after`. On a signing failure,
  // the unsigned lines and the error. A query longer than kMaxKeptScope is signed but
  // not kept, so that odd queries cannot fill memory.
  struct Lines {
    std::shared_ptr<const std::string_view> text;  // the lines, kept alive by the pointer
    Status error;
  };
  // A lookup's first two steps, taken ahead for a request that has other work to do
  // (assembling its body), so that waiting on memory overlaps that work: PrefetchSet
  // hashes the key and starts fetching its set; PrefetchEntry, some work later, finds
  // the kept entry there and starts fetching it. HeadLines then finds both in the cache.
  // Measured in bench/signing_cost.sh: of what signing added to a per-cluster request,
  // most was waiting on these two fetches one after the other. Both do nothing without keys.
  class Lookup {
   public:
    Lookup() = default;

   private:
    friend class AnswerSigner;
    explicit Lookup(uint64_t hash) : hash_(hash) {}
    uint64_t hash_ = 0;
  };
  Lookup PrefetchSet(const View& view, const AnswerScope& scope, const AnswerSource& source) const noexcept;
  void PrefetchEntry(const Lookup& lookup) const noexcept;
  // `lookup`: PrefetchSet's for the same view, scope and source, or null. The lines are
  // right whatever it is (the whole key is compared), but one made for other arguments
  // would keep a new entry where it is not found again.
  Lines HeadLines(const View& view, const AnswerScope& scope, const AnswerSource& source, int64_t now,
                  const Lookup* lookup = nullptr);
  static constexpr size_t kMaxKeptScope = 256;
  // The ids of the keys it signs with, for the logs.
  std::string KeyIds() const;
  // Signatures made so far (each a SHA-256 of the answer and an Ed25519 signature per key).
  uint64_t signed_count() const { return signed_.load(std::memory_order_relaxed); }
  // Answers served unsigned because their signature would already have expired.
  uint64_t withheld_count() const { return withheld_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kWays = 7;
  static constexpr size_t kSets = 2048;  // 2,048 x 7 = 14,336 entries
  // What a kept entry is for, compared whole on a lookup (the hash only finds it), and
  // its lines, all in one allocation: the ETag and the lines (those of up to two keys)
  // are held in the entry itself, not behind other pointers, so that a hit reads one
  // run of memory.
  static constexpr size_t kMaxKeptEtag = 62;  // View::etag() is 34 bytes; a longer one is not kept
  static constexpr size_t kInlineLines = 448;
  struct Entry : std::enable_shared_from_this<Entry> {
    Entry() = default;
    Entry(const Entry&) = delete;  // `lines` may point into the entry itself
    Entry& operator=(const Entry&) = delete;
    void SetLines(const std::string& text);
    std::string_view etag() const { return {etag_bytes.data(), etag_size}; }
    bool Matches(std::string_view etag, const AnswerScope& scope, std::string_view id, const AnswerSource& source) const;

    AnswerSource source;
    uint8_t etag_size = 0;
    std::array<char, kMaxKeptEtag> etag_bytes;
    std::string channel, arch, version, id;
    std::string_view lines;  // in inline_lines, or in long_lines when longer
    std::array<char, kInlineLines> inline_lines;
    std::string long_lines;
  };
  // Its lock, and the ways, most recently used first (an empty way has no entry), in the
  // 128 bytes a lookup reads; the entries' owners, in no order, after them (read only to
  // keep one). The lock is a word in the set's own first line, not a mutex elsewhere: a
  // lookup holds it for a few comparisons, and taking it fetches what it guards.
  struct alignas(128) Set {
    std::atomic<uint32_t> lock{0};
    std::array<uint64_t, kWays> hashes{};
    std::array<const Entry*, kWays> ways{};
    std::array<std::shared_ptr<const Entry>, kWays> owners;
  };
  static_assert(offsetof(Set, owners) <= 128, "a lookup reads the first 128 bytes of its set");
  // Holds a set's lock: spins (yielding the CPU) while another thread holds it.
  class SetLock {
   public:
    explicit SetLock(Set& set);
    ~SetLock();
    SetLock(const SetLock&) = delete;
    SetLock& operator=(const SetLock&) = delete;

   private:
    std::atomic<uint32_t>& word_;
  };
  Set& SetOf(uint64_t hash) const { return sets_[hash >> 53]; }
  // The query's cluster id when the answer is bound to it (made for that cluster alone), else empty.
  static std::string_view BoundId(const AnswerScope& scope, const AnswerSource& source) {
    return source.per_cluster ? scope.id : std::string_view();
  }
  uint64_t KeyHash(std::string_view etag, const AnswerScope& scope, const AnswerSource& source) const;
  static std::shared_ptr<const Entry> Find(Set& set, uint64_t hash, std::string_view etag, const AnswerScope& scope,
                                           std::string_view id, const AnswerSource& source);  // under the set's lock
  static std::shared_ptr<const std::string_view> LinesOf(std::shared_ptr<const Entry> entry);
  // Under the set's lock; returns the owner of the entry that left, to be released after it.
  static std::shared_ptr<const Entry> Keep(Set& set, uint64_t hash, std::shared_ptr<const Entry> entry);
  std::shared_ptr<const std::string_view> UnsignedLines(uint64_t generation, int64_t fresh_as_of);
  std::shared_ptr<const std::string_view> Withhold(const AnswerSource& source, int64_t expires, int64_t now);

  const std::vector<std::shared_ptr<const SigningKey>> keys_;
  const std::chrono::seconds validity_;
  const uint64_t seed_;  // of the lookup's hash
  struct FreeSets {
    void operator()(Set* sets) const;
  };
  static Set* MakeSets();
  const std::unique_ptr<Set[], FreeSets> sets_;  // kSets of them; none without keys
  // Lines and the view of them that a response holds, in one allocation.
  struct OwnedLines {
    std::string text;
    std::string_view view;
  };
  // The unsigned lines of the newest (generation, freshness) asked.
  struct UnsignedLinesEntry {
    uint64_t generation;
    int64_t fresh_as_of;
    OwnedLines lines;
  };
  std::atomic<std::shared_ptr<const UnsignedLinesEntry>> unsigned_;
  std::atomic<uint64_t> signed_{0};
  std::atomic<uint64_t> withheld_{0};
  std::atomic<int64_t> withheld_logged_{-1};  // the freshness last logged as withheld
};

}  // namespace cincinnati::server
