#include "server/answer_signer.h"

#include <fmt/format.h>

namespace cincinnati::server {

AnswerSigner::AnswerSigner(std::vector<std::shared_ptr<const SigningKey>> keys, std::chrono::seconds validity)
    : keys_(std::move(keys)), validity_(validity) {}

Result<std::string> AnswerSigner::HeaderFor(const View& view, std::string_view channel, std::string_view arch, uint64_t generation,
                                            int64_t fresh_as_of, int64_t now) {
  std::string key = fmt::format("{}\n{}\n{}", view.etag(), channel, arch);
  {
    std::shared_lock lock(mu_);
    if (generation_ == generation && fresh_as_of_ == fresh_as_of) {
      if (auto it = kept_.find(key); it != kept_.end()) return it->second;
    }
  }
  // Signed at `now` but never before the freshness it vouches for.
  const SignedFacts facts{generation, std::max(now, fresh_as_of), fresh_as_of + validity_.count()};
  CINCINNATI_ASSIGN_OR_RETURN(std::string header, SignAnswer(keys_, facts, channel, arch, *view.body()));
  std::unique_lock lock(mu_);
  if (generation_ != generation || fresh_as_of_ != fresh_as_of) {
    if (generation < generation_ || (generation == generation_ && fresh_as_of < fresh_as_of_)) return header;  // a late request
    kept_.clear();
    generation_ = generation;
    fresh_as_of_ = fresh_as_of;
  }
  if (kept_.size() >= kMaxKept) kept_.clear();
  kept_.emplace(std::move(key), header);
  return header;
}

std::string AnswerSigner::KeyIds() const {
  std::string ids;
  for (const auto& k : keys_) ids += (ids.empty() ? "" : ", ") + k->id();
  return ids;
}

}  // namespace cincinnati::server
