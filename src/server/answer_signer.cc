#include "server/answer_signer.h"

#include <fmt/format.h>

namespace cincinnati::server {

namespace {

// A hash to find candidates, which are then compared whole.
uint64_t Mix(uint64_t h, std::string_view part) {
  return (h ^ std::hash<std::string_view>{}(part)) * 0x100000001b3ULL + part.size();
}

}  // namespace

bool AnswerSigner::Key::Matches(std::string_view e, const AnswerScope& scope, std::string_view i, uint64_t g, int64_t f) const {
  return generation == g && fresh_as_of == f && etag == e && channel == scope.channel && arch == scope.arch &&
         version == scope.version && id == i;
}

AnswerSigner::AnswerSigner(std::vector<std::shared_ptr<const SigningKey>> keys, std::chrono::seconds validity)
    : keys_(std::move(keys)), validity_(validity) {}

AnswerSigner::Half::const_iterator AnswerSigner::Find(const Half& half, uint64_t hash, std::string_view etag, const AnswerScope& scope,
                                                      std::string_view id, uint64_t generation, int64_t fresh_as_of) {
  auto [first, last] = half.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    if (it->second.key.Matches(etag, scope, id, generation, fresh_as_of)) return it;
  }
  return half.end();
}

Result<std::shared_ptr<const std::string>> AnswerSigner::HeaderFor(const View& view, const AnswerScope& scope, bool per_cluster,
                                                                   uint64_t generation, int64_t fresh_as_of, int64_t now) {
  const std::string_view id = per_cluster ? scope.id : std::string_view();
  // Looked up without building a key: the parts are hashed and compared where they are.
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (std::string_view part : {std::string_view(view.etag()), scope.channel, scope.arch, scope.version, id}) hash = Mix(hash, part);
  hash ^= (generation * 0x9e3779b97f4a7c15ULL) ^ static_cast<uint64_t>(fresh_as_of);
  {
    std::shared_lock lock(mu_);
    if (auto it = Find(newer_, hash, view.etag(), scope, id, generation, fresh_as_of); it != newer_.end()) return it->second.header;
  }
  {
    std::unique_lock lock(mu_);
    if (auto it = Find(older_, hash, view.etag(), scope, id, generation, fresh_as_of); it != older_.end()) {
      Entry entry = std::move(older_.extract(it).mapped());  // asked again: into the newer half
      auto header = entry.header;
      if (newer_.size() >= kHalf) older_ = std::exchange(newer_, {});
      newer_.emplace(hash, std::move(entry));
      return header;
    }
  }
  Key key{view.etag(), std::string(scope.channel), std::string(scope.arch), std::string(scope.version), std::string(id), generation,
          fresh_as_of};
  // Signed at `now` but never before the freshness it vouches for.
  const SignedFacts facts{generation, std::max(now, fresh_as_of), fresh_as_of + validity_.count(), per_cluster};
  CINCINNATI_ASSIGN_OR_RETURN(std::string made, SignAnswer(keys_, facts, scope, *view.body()));
  auto header = std::make_shared<const std::string>(std::move(made));
  signed_.fetch_add(1, std::memory_order_relaxed);
  std::unique_lock lock(mu_);
  if (newer_.size() >= kHalf) older_ = std::exchange(newer_, {});
  newer_.emplace(hash, Entry{std::move(key), header});
  return header;
}

std::string AnswerSigner::KeyIds() const {
  std::string ids;
  for (const auto& k : keys_) ids += (ids.empty() ? "" : ", ") + k->id();
  return ids;
}

}  // namespace cincinnati::server
