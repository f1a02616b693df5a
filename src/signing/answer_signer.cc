#include "signing/answer_signer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <thread>
#include <type_traits>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/date_time.h"

#include "service/http_names.h"

namespace cincinnati::server {

namespace {

constexpr uint64_t kMultiplier = 0x9e3779b97f4a7c15ULL;

uint64_t Mix(uint64_t h, uint64_t word) {
  h = (h ^ word) * kMultiplier;
  return h ^ (h >> 29);
}

// A hash of a short text, eight bytes at a time (a query's parts are a few bytes each);
// the last word overlaps the one before rather than being copied byte by byte.
uint64_t MixText(uint64_t h, std::string_view text) {
  const size_t n = text.size();
  uint64_t word = 0;
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8) {
      std::memcpy(&word, text.data() + i, 8);
      h = Mix(h, word);
    }
    std::memcpy(&word, text.data() + n - 8, 8);
  } else {
    for (size_t i = 0; i < n; ++i) word |= static_cast<uint64_t>(static_cast<unsigned char>(text[i])) << (8 * i);
  }
  return Mix(h, word ^ (static_cast<uint64_t>(n) << 56));
}

// An ETag (View::etag(): a quoted SHA-256 prefix in hex) is a hash already: 16 of its
// digits are taken as they are (the whole of it is compared on a hit).
uint64_t MixEtag(uint64_t h, std::string_view etag) {
  if (etag.size() < 17) return MixText(h, etag);
  uint64_t a, b;
  std::memcpy(&a, etag.data() + 1, 8);
  std::memcpy(&b, etag.data() + 9, 8);
  return Mix(Mix(h, a), b ^ etag.size());
}

uint64_t RandomSeed() {
  std::random_device random;
  return (static_cast<uint64_t>(random()) << 32) ^ random();
}

}  // namespace

std::string GenerationLines(uint64_t generation, int64_t fresh_as_of) {
  return fmt::format("{}: {}\r\n{}: {}\r\n", kGenerationHeader, generation, kFreshHeader, fresh_as_of);
}

AnswerScope QueryScope(const Parameters& params) {
  auto param = [&](std::string_view name) {
    auto it = params.find(name);
    return it == params.end() ? std::string_view() : std::string_view(it->second);
  };
  return {param("channel"), param("arch"), param("version"), param("id")};
}

bool AnswerSigner::Entry::Matches(std::string_view e, const AnswerScope& scope, std::string_view i, const AnswerSource& s) const {
  return source.generation == s.generation && source.fresh_as_of == s.fresh_as_of && source.not_after == s.not_after &&
         source.per_cluster == s.per_cluster && etag() == e && channel == scope.channel && arch == scope.arch && version == scope.version &&
         id == i;
}

AnswerSigner::AnswerSigner(std::vector<std::shared_ptr<const SigningKey>> keys, std::chrono::seconds validity)
    : keys_(std::move(keys)),
      validity_(validity),
      seed_(RandomSeed()),
      sets_(keys_.empty() ? nullptr : MakeSets()) {}

// In 2 MiB of their own, marked for a transparent huge page: a lookup's set is one of
// 2,048 spread over 512 KiB, and with 4 KiB pages finding it missed the TLB as often as
// the cache.
AnswerSigner::Set* AnswerSigner::MakeSets() {
  constexpr size_t kHugePage = size_t{2} << 20;
  static_assert(kSets * sizeof(Set) <= kHugePage);
  static_assert(std::is_nothrow_default_constructible_v<Set>, "nothing to undo after the allocation");
  void* memory = std::aligned_alloc(kHugePage, kHugePage);
  if (memory == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  ::madvise(memory, kHugePage, MADV_HUGEPAGE);  // a hint: refused or without THP, 4 KiB pages
#endif
  Set* sets = static_cast<Set*>(memory);
  std::uninitialized_default_construct_n(sets, kSets);
  return sets;
}

void AnswerSigner::FreeSets::operator()(Set* sets) const {
  std::destroy_n(sets, kSets);
  std::free(sets);
}

AnswerSigner::SetLock::SetLock(Set& set) : word_(set.lock) {
  while (word_.exchange(1, std::memory_order_acquire) != 0) {
    while (word_.load(std::memory_order_relaxed) != 0) std::this_thread::yield();
  }
}

AnswerSigner::SetLock::~SetLock() { word_.store(0, std::memory_order_release); }

std::shared_ptr<const AnswerSigner::Entry> AnswerSigner::Find(Set& set, uint64_t hash, std::string_view etag,
                                                              const AnswerScope& scope, std::string_view id, const AnswerSource& source) {
  for (size_t way = 0; way < kWays; ++way) {
    if (set.hashes[way] != hash || !set.ways[way]) continue;
    const Entry& entry = *set.ways[way];
    if (!entry.Matches(etag, scope, id, source)) continue;
    // To the front: what is asked often is the last its set drops.
    std::rotate(set.hashes.begin(), set.hashes.begin() + way, set.hashes.begin() + way + 1);
    std::rotate(set.ways.begin(), set.ways.begin() + way, set.ways.begin() + way + 1);
    return entry.shared_from_this();
  }
  return nullptr;
}

std::shared_ptr<AnswerSigner> AnswerSigner::Unsigned() {
  return std::make_shared<AnswerSigner>(std::vector<std::shared_ptr<const SigningKey>>{}, std::chrono::seconds(0));
}

// The entry's lines, sharing its allocation.
std::shared_ptr<const std::string_view> AnswerSigner::LinesOf(std::shared_ptr<const Entry> entry) {
  const std::string_view* lines = &entry->lines;
  return std::shared_ptr<const std::string_view>(std::move(entry), lines);
}

void AnswerSigner::Entry::SetLines(const std::string& text) {
  if (text.size() <= inline_lines.size()) {
    std::memcpy(inline_lines.data(), text.data(), text.size());
    lines = std::string_view(inline_lines.data(), text.size());
  } else {
    long_lines = text;
    lines = long_lines;
  }
}

std::shared_ptr<const AnswerSigner::Entry> AnswerSigner::Keep(Set& set, uint64_t hash, std::shared_ptr<const Entry> entry) {
  // The least recently used way leaves (its owner with it); the new entry takes the front.
  const Entry* leaving = set.ways[kWays - 1];
  auto owner = std::find_if(set.owners.begin(), set.owners.end(), [&](const auto& o) { return o.get() == leaving; });
  std::rotate(set.hashes.begin(), set.hashes.end() - 1, set.hashes.end());
  std::rotate(set.ways.begin(), set.ways.end() - 1, set.ways.end());
  set.hashes[0] = hash;
  set.ways[0] = entry.get();
  return std::exchange(*owner, std::move(entry));  // an empty way's owner is empty too
}

std::shared_ptr<const std::string_view> AnswerSigner::UnsignedLines(uint64_t generation, int64_t fresh_as_of) {
  std::shared_ptr<const UnsignedLinesEntry> kept = unsigned_.load(std::memory_order_acquire);
  if (!kept || kept->generation != generation || kept->fresh_as_of != fresh_as_of) {
    auto made = std::make_shared<UnsignedLinesEntry>(UnsignedLinesEntry{generation, fresh_as_of, {GenerationLines(generation, fresh_as_of), {}}});
    made->lines.view = made->lines.text;
    kept = std::move(made);
    unsigned_.store(kept, std::memory_order_release);
  }
  const std::string_view* lines = &kept->lines.view;  // sharing the entry's allocation
  return std::shared_ptr<const std::string_view>(std::move(kept), lines);
}

// Looked up without building a key: the parts are hashed and compared where they are;
// the seed makes which queries share a bucket unpredictable.
uint64_t AnswerSigner::KeyHash(std::string_view etag, const AnswerScope& scope, const AnswerSource& source) const {
  uint64_t hash = MixEtag(seed_, etag);
  for (std::string_view part : {scope.channel, scope.arch, scope.version, BoundId(scope, source)}) hash = MixText(hash, part);
  hash = Mix(hash, source.generation);
  hash = Mix(hash, static_cast<uint64_t>(source.fresh_as_of));
  return Mix(hash, (static_cast<uint64_t>(source.not_after) << 1) | (source.per_cluster ? 1 : 0));
}

AnswerSigner::Lookup AnswerSigner::PrefetchSet(const View& view, const AnswerScope& scope, const AnswerSource& source) const noexcept {
  if (keys_.empty()) return {};
  const uint64_t hash = KeyHash(view.etag(), scope, source);
  const char* set = reinterpret_cast<const char*>(&SetOf(hash));
  // For writing: the lookup takes the set's lock word and reorders its ways.
  __builtin_prefetch(set, 1);
  __builtin_prefetch(set + 64, 1);
  return Lookup(hash);
}

void AnswerSigner::PrefetchEntry(const Lookup& lookup) const noexcept {
  if (keys_.empty()) return;
  Set& set = SetOf(lookup.hash_);
  // From its reference counts (make_shared's, just before it) to the usual end of its
  // lines (a signature line of one key), without reading it. The addresses are taken
  // while the set holds it; memory freed after is harmless to prefetch, and HeadLines
  // finds the entry again under the lock.
  constexpr size_t kCountsBefore = 16, kUsualLines = 320;
  const char* begin = nullptr;
  const char* end = nullptr;
  {
    SetLock lock(set);
    for (size_t way = 0; way < kWays && !begin; ++way) {
      if (set.hashes[way] != lookup.hash_ || !set.ways[way]) continue;
      begin = reinterpret_cast<const char*>(set.ways[way]) - kCountsBefore;
      end = set.ways[way]->inline_lines.data() + kUsualLines;
    }
  }
  for (const char* p = begin; p < end; p += 64) __builtin_prefetch(p);
}

AnswerSigner::Lines AnswerSigner::HeadLines(const View& view, const AnswerScope& scope, const AnswerSource& source, int64_t now,
                                            const Lookup* lookup) {
  if (keys_.empty()) return {UnsignedLines(source.generation, source.fresh_as_of), Status()};
  // Valid `validity_` after the freshness it vouches for, and no longer than the
  // upstream's own signature allows; a kept signature that has expired is not served.
  int64_t expires = source.fresh_as_of + validity_.count();
  if (source.not_after != 0) expires = std::min(expires, source.not_after);
  if (expires <= now) return {Withhold(source, expires, now), Status()};
  const std::string_view id = BoundId(scope, source);
  const uint64_t hash = lookup ? lookup->hash_ : KeyHash(view.etag(), scope, source);
  Set& set = SetOf(hash);
  {
    SetLock lock(set);
    if (auto entry = Find(set, hash, view.etag(), scope, id, source)) return {LinesOf(std::move(entry)), Status()};
  }
  // Signed at `now`, but never before the freshness it vouches for.
  const SignedFacts facts{source.generation, std::max(now, source.fresh_as_of), expires, source.per_cluster};
  Result<std::string> signature = SignAnswer(keys_, facts, scope, *view.body());
  if (!signature.ok()) return {UnsignedLines(source.generation, source.fresh_as_of), signature.status()};
  auto entry = std::make_shared<Entry>();
  entry->source = source;
  const std::string_view etag = view.etag();
  const bool keep = etag.size() <= kMaxKeptEtag && scope.channel.size() + scope.arch.size() + scope.version.size() + id.size() <= kMaxKeptScope;
  if (keep) {
    entry->etag_size = static_cast<uint8_t>(etag.size());
    std::memcpy(entry->etag_bytes.data(), etag.data(), etag.size());
    entry->channel = scope.channel;
    entry->arch = scope.arch;
    entry->version = scope.version;
    entry->id = id;
  }
  entry->SetLines(GenerationLines(source.generation, source.fresh_as_of) + fmt::format("{}: {}\r\n", kSignatureHeader, *signature));
  signed_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<const Entry> kept = std::move(entry);
  if (keep) {  // odd queries are signed but not kept
    std::shared_ptr<const Entry> left;  // released after the lock
    SetLock lock(set);
    left = Keep(set, hash, kept);
  }
  return {LinesOf(std::move(kept)), Status()};
}

// An answer whose signature would already have expired goes unsigned: a signature is a
// statement that the answer is fresh, which it no longer is (its source stopped
// answering). It says so in kSignatureWithheldHeader, so that a checking agent refuses it
// as expired rather than as stripped; logged once per freshness. Rare (a source that
// stopped): one allocation per answer then.
std::shared_ptr<const std::string_view> AnswerSigner::Withhold(const AnswerSource& source, int64_t expires, int64_t now) {
  withheld_.fetch_add(1, std::memory_order_relaxed);
  if (withheld_logged_.exchange(source.fresh_as_of) != source.fresh_as_of) {
    spdlog::warn("graph answers go unsigned: their signatures would have expired at {}, {} s ago ({}; the graph's source "
                 "last vouched for it at {}): signed again once the source answers",
                 FormatUnixSeconds(expires), now - expires,
                 source.not_after != 0 && source.not_after == expires ? "the upstream's own signature expired"
                                                                       : fmt::format("signing.validity_secs is {}", validity_.count()),
                 FormatUnixSeconds(source.fresh_as_of));
  }
  auto owned = std::make_shared<OwnedLines>();
  owned->text = GenerationLines(source.generation, source.fresh_as_of) +
                fmt::format("{}: expired={}; fresh={}\r\n", kSignatureWithheldHeader, expires, source.fresh_as_of);
  owned->view = owned->text;
  const std::string_view* lines = &owned->view;
  return std::shared_ptr<const std::string_view>(std::move(owned), lines);
}

std::string AnswerSigner::KeyIds() const {
  std::string ids;
  for (const auto& k : keys_) ids += (ids.empty() ? "" : ", ") + k->id();
  return ids;
}

}  // namespace cincinnati::server
