#include "agent/answer_trust.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

namespace cincinnati::agent {
namespace {
using kube::JsonObject;
using kube::JsonArray;
using kube::FindMember;
using kube::TextOf;
using kube::IntegerOf;
using kube::ItemsOf;

constexpr char kKind[] = "agentstate";
constexpr char kName[] = "answer-signatures";

// Content errors (not JSON, over the limit) are set aside; the disk's own stop the agent.
bool ContentError(const Status& s) {
  return s.code() == Status::Code::kInvalidArgument || s.code() == Status::Code::kTooLarge;
}

Result<uint64_t> GenerationOf(const JsonValue& record) {
  const JsonValue* generation = FindMember(record, "newestGeneration");
  const std::optional<int64_t> n = generation ? IntegerOf(*generation) : std::nullopt;
  if (!n || *n < 0) return Status::InvalidArgument("newestGeneration is not a non-negative integer");
  return static_cast<uint64_t>(*n);
}

// One recorded upstream: {"upstream": URL, "newestGeneration": G}. The first agents to
// record upstreams wrote one such object alone, and reads as a list of one.
Result<std::pair<std::string, uint64_t>> SignerOf(const JsonValue& entry) {
  const JsonValue* upstream = FindMember(entry, "upstream");
  if (!upstream || !upstream->is_string()) return Status::InvalidArgument("upstream is not a string");
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t generation, GenerationOf(entry));
  return std::make_pair(TextOf(*upstream), generation);
}

}  // namespace

AnswerTrust::AnswerTrust(ObjectStore& store, TrustedKeys keys, bool require, StorageHealth* storage)
    : store_(store), keys_(std::move(keys)), require_(require), storage_(storage) {}

Status AnswerTrust::Load() {
  auto stored = store_.Get(kKind, kName);
  Status why = stored.status();
  if (stored.ok()) {
    if (!*stored) return Status::OK();  // no signed answer taken yet
    const JsonValue* list = FindMember(*(*stored), "upstreams");
    const JsonArray entries = list && list->is_array() ? ItemsOf(*list) : JsonArray{**stored};
    std::vector<Signer> signers;
    for (const JsonValue& entry : entries) {
      auto signer = SignerOf(entry);
      if (!signer.ok()) {
        why = signer.status();
        break;
      }
      signers.push_back({UpstreamIdentity(signer->first), signer->second});  // records written before URLs were normalized
    }
    if (why.ok()) {
      signers_ = std::move(signers);
      newest_ = signers_.empty() ? 0 : signers_.back().newest;
      return Status::OK();
    }
  }
  if (!ContentError(why)) return why.WithContext("the upstreams whose signed answers were taken");
  CINCINNATI_ASSIGN_OR_RETURN(std::string aside, store_.SetAside(kKind, kName));
  record_set_aside_ = true;
  spdlog::warn("the record of signed answers taken cannot be read ({}): set aside as {}; every upstream starts "
               "unrecorded (any generation accepted, unsigned answers used unless required) until its next signed answer",
               why.message(), aside);
  return Status::OK();
}

std::string UpstreamIdentity(std::string_view url) {
  auto lower = [](std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
  };
  url = url.substr(0, url.find_first_of("?#"));
  const size_t colon = url.find("://");
  if (colon == std::string_view::npos) return std::string(url);  // not a URL the agent would fetch: as it is
  const std::string scheme = lower(url.substr(0, colon));
  std::string_view rest = url.substr(colon + 3);
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);  // no credentials
  std::string host = lower(authority);
  const std::string default_port = scheme == "https" ? ":443" : scheme == "http" ? ":80" : "";
  if (!default_port.empty() && host.ends_with(default_port)) host.resize(host.size() - default_port.size());
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (path == "/") path = {};
  return scheme + "://" + host + std::string(path);
}

const AnswerTrust::Signer* AnswerTrust::Find(std::string_view upstream) const {
  auto it = std::find_if(signers_.begin(), signers_.end(), [&](const Signer& s) { return s.upstream == upstream; });
  return it == signers_.end() ? nullptr : &*it;
}

AnswerTrust::Outcome AnswerTrust::Check(const std::string* header, std::string_view body, const AnswerScope& scope,
                                        std::string_view upstream_url, int64_t now, const std::string* withheld) {
  const std::string upstream = UpstreamIdentity(upstream_url);
  const Signer* known = Find(upstream);  // another service numbers its own graphs
  SignatureCheck check = CheckAnswerSignature(header, body, scope, keys_, now, known ? known->newest : 0);
  Outcome out;
  out.upstream = upstream;
  if (check.verdict == SignatureVerdict::kAccepted) {
    Count("accepted");
    unsigned_logged_ = false;
    out.facts = check.facts;
    spdlog::debug("the update service's answer is {}", check.message);
    return out;
  }
  if (check.verdict == SignatureVerdict::kMissing && !require_ && !known) {
    Count(kUnsignedAnswer);
    if (!unsigned_logged_) {
      spdlog::warn("the update service's answer is not signed; it is used, since --upstream.require-signature is off "
                   "and no signed answer from {} was taken before",
                   upstream);
      unsigned_logged_ = true;
    }
    return out;
  }
  if (check.verdict == SignatureVerdict::kMissing && withheld != nullptr) {
    check.verdict = SignatureVerdict::kExpired;
    check.message = WithheldMessage(*withheld);
  }
  out.refusal = Refuse(check, scope, upstream, known, now);
  return out;
}

RetrievalFailure AnswerTrust::Refuse(const SignatureCheck& check, const AnswerScope& scope, std::string_view upstream,
                                     const Signer* known, int64_t now) {
  const std::string_view reason = SignatureReason(check.verdict);
  Count(reason);
  std::string message = check.message;
  if (check.verdict == SignatureVerdict::kMissing) {
    // Without --upstream.require-signature, only an upstream seen signing gets here: an
    // attacker on the path who strips the header must not turn the check off.
    message = require_ ? "the answer carries no signature, and --upstream.require-signature requires one"
                       : fmt::format("the answer carries no signature, but {} signed the answers taken from it before "
                                     "(generation {}), so a missing one is taken for a stripped one; if that update "
                                     "service stopped signing on purpose, stop the agent and delete {} (or this "
                                     "upstream's entry in it)",
                                     upstream, known->newest, store_.Location(kKind, kName));
  }
  // A rollback from a number that is itself ahead of this clock: taken when a clock was
  // ahead. Services with a right clock never number below what a right clock allows
  // (signing/graph_generation.h), so this cluster's clock was ahead too when it took it.
  if (check.verdict == SignatureVerdict::kRolledBack && known && now > 0 &&
      known->newest / 1000 > static_cast<uint64_t>(now) + kMaxGenerationLead) {
    message += fmt::format(
        ". The generation taken before, {}, is {} s ahead of this cluster's clock: it was numbered by a clock that was "
        "ahead, and taken while this cluster's clock was ahead too. The update service numbers past it once its clock "
        "passes it; to take answers before then, stop the agent and delete {}'s entry in {} (docs/clocks-ahead.md)",
        known->newest, known->newest / 1000 - static_cast<uint64_t>(now), upstream, store_.Location(kKind, kName));
  }
  spdlog::warn("the update service's answer for channel {} and arch {} is refused ({}): {}", scope.channel, scope.arch,
               reason, message);
  return RetrievalFailure{std::string(reason), std::move(message)};
}

void AnswerTrust::Taken(const Outcome& outcome) {
  if (outcome.facts) {
    auto it = std::find_if(signers_.begin(), signers_.end(), [&](const Signer& s) { return s.upstream == outcome.upstream; });
    Signer signer = it == signers_.end() ? Signer{outcome.upstream, outcome.facts->generation} : *it;
    const bool changed = it == signers_.end() || outcome.facts->generation > signer.newest || it + 1 != signers_.end();
    if (changed) {
      // The upstream taken from last goes to the back: the one dropped past the limit
      // is the one taken from longest ago.
      if (it != signers_.end()) signers_.erase(it);
      signer.newest = std::max(signer.newest, outcome.facts->generation);
      signers_.push_back(std::move(signer));
      if (signers_.size() > kMaxSigningUpstreams) signers_.erase(signers_.begin());
      dirty_ = true;
    }
    newest_ = signers_.back().newest;
  }
  if (dirty_) Persist();  // or a write that failed before
}

void AnswerTrust::Persist() {
  JsonArray entries;
  for (const Signer& s : signers_) {
    entries.push_back(JsonValue(JsonObject({{"upstream", JsonValue(s.upstream)},
                                         {"newestGeneration", JsonValue(int64_t(static_cast<int64_t>(s.newest)))}})));
  }
  const Status s = store_.Put(kKind, kName, JsonValue(JsonObject({{"upstreams", JsonValue(std::move(entries))}})));
  if (storage_) storage_->Record(StorageArea::kState, s);
  if (!s.ok()) {
    spdlog::error("cannot save the upstreams whose signed answers were taken (the newest generation {}): {}; tried "
                  "again at the next answer",
                  newest_.load(), s.message());
    return;
  }
  dirty_ = false;
}

std::map<std::string, uint64_t> AnswerTrust::Counts() const {
  std::lock_guard lock(counts_mu_);
  return counts_;
}

void AnswerTrust::Count(std::string_view result) {
  std::lock_guard lock(counts_mu_);
  ++counts_[std::string(result)];
}

}  // namespace cincinnati::agent
