#include "signing/answer_signer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/date_time.h"

#include "service/http_names.h"

namespace cincinnati::server {

namespace {

// A hash to find candidates, which are then compared whole.
uint64_t Mix(uint64_t h, std::string_view part) {
  return (h ^ std::hash<std::string_view>{}(part)) * 0x100000001b3ULL + part.size();
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
         source.per_cluster == s.per_cluster && etag == e && channel == scope.channel && arch == scope.arch && version == scope.version &&
         id == i;
}

AnswerSigner::AnswerSigner(std::vector<std::shared_ptr<const SigningKey>> keys, std::chrono::seconds validity)
    : keys_(std::move(keys)), validity_(validity) {}

std::shared_ptr<const AnswerSigner::Entry> AnswerSigner::Find(const Half& half, uint64_t hash, std::string_view etag,
                                                              const AnswerScope& scope, std::string_view id, const AnswerSource& source) {
  auto [first, last] = half.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    if (it->second->Matches(etag, scope, id, source)) return it->second;
  }
  return nullptr;
}

// The entry's lines, sharing its allocation.
std::shared_ptr<AnswerSigner> AnswerSigner::Unsigned() {
  return std::make_shared<AnswerSigner>(std::vector<std::shared_ptr<const SigningKey>>{}, std::chrono::seconds(0));
}

std::shared_ptr<const std::string> AnswerSigner::LinesOf(std::shared_ptr<const Entry> entry) {
  const std::string* lines = &entry->lines;
  return std::shared_ptr<const std::string>(std::move(entry), lines);
}

void AnswerSigner::Keep(Shard& shard, uint64_t hash, std::shared_ptr<const Entry> entry) {
  if (shard.newer.size() >= kHalf) shard.older = std::exchange(shard.newer, {});
  shard.newer.emplace(hash, std::move(entry));
}

std::shared_ptr<const std::string> AnswerSigner::UnsignedLines(uint64_t generation, int64_t fresh_as_of) {
  std::shared_ptr<const UnsignedLinesEntry> kept = unsigned_.load(std::memory_order_acquire);
  if (!kept || kept->generation != generation || kept->fresh_as_of != fresh_as_of) {
    kept = std::make_shared<const UnsignedLinesEntry>(UnsignedLinesEntry{generation, fresh_as_of, GenerationLines(generation, fresh_as_of)});
    unsigned_.store(kept, std::memory_order_release);
  }
  const std::string* lines = &kept->lines;
  return std::shared_ptr<const std::string>(std::move(kept), lines);
}

AnswerSigner::Lines AnswerSigner::HeadLines(const View& view, const AnswerScope& scope, const AnswerSource& source, int64_t now) {
  if (keys_.empty()) return {UnsignedLines(source.generation, source.fresh_as_of), Status()};
  // Valid `validity_` after the freshness it vouches for, and no longer than the
  // upstream's own signature allows; a kept signature that has expired is not served.
  int64_t expires = source.fresh_as_of + validity_.count();
  if (source.not_after != 0) expires = std::min(expires, source.not_after);
  if (expires <= now) return {Withhold(source, expires, now), Status()};
  const std::string_view id = source.per_cluster ? scope.id : std::string_view();
  // Looked up without building a key: the parts are hashed and compared where they are.
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (std::string_view part : {std::string_view(view.etag()), scope.channel, scope.arch, scope.version, id}) hash = Mix(hash, part);
  hash ^= (source.generation * 0x9e3779b97f4a7c15ULL) ^ static_cast<uint64_t>(source.fresh_as_of) ^
          (static_cast<uint64_t>(source.not_after) << 1) ^ static_cast<uint64_t>(source.per_cluster);
  static_assert(kShards == 16);
  Shard& shard = shards_[hash >> 60];
  {
    std::lock_guard lock(shard.mu);
    if (auto entry = Find(shard.newer, hash, view.etag(), scope, id, source)) return {LinesOf(std::move(entry)), Status()};
    if (auto entry = Find(shard.older, hash, view.etag(), scope, id, source)) {
      Keep(shard, hash, entry);  // asked again: into the newer half (the older copy goes with its half)
      return {LinesOf(std::move(entry)), Status()};
    }
  }
  // Signed at `now`, but never before the freshness it vouches for.
  const SignedFacts facts{source.generation, std::max(now, source.fresh_as_of), expires, source.per_cluster};
  Result<std::string> signature = SignAnswer(keys_, facts, scope, *view.body());
  if (!signature.ok()) return {UnsignedLines(source.generation, source.fresh_as_of), signature.status()};
  auto entry = std::make_shared<Entry>(Entry{source, view.etag(), std::string(scope.channel), std::string(scope.arch),
                                             std::string(scope.version), std::string(id), {}});
  entry->lines = GenerationLines(source.generation, source.fresh_as_of) + fmt::format("{}: {}\r\n", kSignatureHeader, *signature);
  signed_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<const Entry> kept = std::move(entry);
  if (scope.channel.size() + scope.arch.size() + scope.version.size() + id.size() <= kMaxKeptScope) {
    std::lock_guard lock(shard.mu);
    Keep(shard, hash, kept);
  }
  return {LinesOf(std::move(kept)), Status()};
}

// An answer whose signature would already have expired goes unsigned: a signature is a
// statement that the answer is fresh, which it no longer is (its source stopped
// answering). It says so in kSignatureWithheldHeader, so that a checking agent refuses it
// as expired rather than as stripped; logged once per freshness. Rare (a source that
// stopped): one allocation per answer then.
std::shared_ptr<const std::string> AnswerSigner::Withhold(const AnswerSource& source, int64_t expires, int64_t now) {
  withheld_.fetch_add(1, std::memory_order_relaxed);
  if (withheld_logged_.exchange(source.fresh_as_of) != source.fresh_as_of) {
    spdlog::warn("graph answers go unsigned: their signatures would have expired at {}, {} s ago ({}; the graph's source "
                 "last vouched for it at {}): signed again once the source answers",
                 FormatUnixSeconds(expires), now - expires,
                 source.not_after != 0 && source.not_after == expires ? "the upstream's own signature expired"
                                                                       : fmt::format("signing.validity_secs is {}", validity_.count()),
                 FormatUnixSeconds(source.fresh_as_of));
  }
  return std::make_shared<const std::string>(GenerationLines(source.generation, source.fresh_as_of) +
                                             fmt::format("{}: expired={}; fresh={}\r\n", kSignatureWithheldHeader, expires,
                                                         source.fresh_as_of));
}

std::string AnswerSigner::KeyIds() const {
  std::string ids;
  for (const auto& k : keys_) ids += (ids.empty() ? "" : ", ") + k->id();
  return ids;
}

}  // namespace cincinnati::server
