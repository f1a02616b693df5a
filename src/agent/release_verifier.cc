#include "agent/release_verifier.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <re2/re2.h>

#include <algorithm>
#include <filesystem>
#include <stop_token>
#include <thread>

#include "agent/signature_store.h"
#include "core/strings.h"
#include "env/file_system.h"
#include "registry/signature.h"

namespace cincinnati::agent {
namespace {
using kube::FindMember;
using kube::TextOf;
using kube::MembersOf;

constexpr size_t kMaxKeyringBytes = size_t{1} << 20;  // an armored keyring is a few KiB

namespace fs = std::filesystem;
constexpr size_t kVerifiedCacheSize = 64;
constexpr size_t kMaxReportedProblems = 5;
constexpr std::string_view kKeyPrefix = "verifier-public-key-";
constexpr std::string_view kStorePrefix = "store-";

std::string ConfigMapName(const JsonValue& manifest) {
  const JsonValue* metadata = FindMember(manifest, "metadata");
  const JsonValue* ns = metadata ? FindMember(*metadata, "namespace") : nullptr;
  const JsonValue* name = metadata ? FindMember(*metadata, "name") : nullptr;
  return fmt::format("ConfigMap {}/{}", ns && ns->is_string() ? TextOf(*ns) : "", name && name->is_string() ? TextOf(*name) : "");
}

// What the parallel search of one Verify() shares between its store threads.
class Search {
 public:
  Search(const VerificationConfig& config, std::string digest) : config_(config), digest_(std::move(digest)) {
    satisfied_.assign(config.keyrings.size(), false);
  }

  // Checks one signature body against every keyring not yet satisfied.
  void Offer(const std::string& body, const std::string& where) {
    for (size_t k = 0; k < config_.keyrings.size(); ++k) {
      {
        std::lock_guard lock(mu_);
        if (satisfied_[k]) continue;
      }
      const registry::Keyring& keyring = *config_.keyrings[k];
      auto message = keyring.Verify(body);
      if (!message.ok()) {
        Problem(fmt::format("{}: {}", where, message.status().message()));
        continue;
      }
      auto payload = registry::ParseAtomicSignature(message->payload);
      if (!payload.ok()) {
        Problem(fmt::format("{}: {}", where, payload.status().message()));
        continue;
      }
      if (payload->digest != digest_) {
        Problem(fmt::format("{}: the signature is for {}, not {}", where, payload->digest, digest_));
        continue;
      }
      std::lock_guard lock(mu_);
      if (!satisfied_[k]) {
        satisfied_[k] = true;
        signed_by_.push_back(fmt::format("{}: {} ({})", keyring.name(), message->fingerprint, where));
      }
      // Every keyring satisfied: the other stores' fetches in flight are cancelled.
      if (std::all_of(satisfied_.begin(), satisfied_.end(), [](bool b) { return b; })) done_.request_stop();
    }
  }
  std::stop_token stop_token() const { return done_.get_token(); }
  void Cancel() { done_.request_stop(); }  // the agent is stopping: fetches in flight end
  void Problem(std::string text) {
    std::lock_guard lock(mu_);
    if (problems_.size() < kMaxReportedProblems) problems_.push_back(std::move(text));
    ++problem_count_;
  }
  bool Done() {
    std::lock_guard lock(mu_);
    return std::all_of(satisfied_.begin(), satisfied_.end(), [](bool b) { return b; });
  }
  std::vector<std::string> Unsatisfied() {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (size_t k = 0; k < satisfied_.size(); ++k) {
      if (!satisfied_[k]) out.push_back(config_.keyrings[k]->name());
    }
    return out;
  }
  std::vector<std::string> signed_by() {
    std::lock_guard lock(mu_);
    return signed_by_;
  }
  std::string ProblemsText() {
    std::lock_guard lock(mu_);
    if (problems_.empty()) return "no signature was found in any store";
    std::string out = fmt::format("{}", fmt::join(problems_, "; "));
    if (problem_count_ > problems_.size()) out += fmt::format("; and {} more", problem_count_ - problems_.size());
    return out;
  }

 private:
  const VerificationConfig& config_;
  const std::string digest_;
  std::mutex mu_;
  std::vector<bool> satisfied_;
  std::vector<std::string> signed_by_, problems_;
  size_t problem_count_ = 0;
  std::stop_source done_;
};

void SearchStore(const SignatureStoreReader& store, const std::string& digest, Search& search, const env::Clock& clock,
                 std::chrono::steady_clock::time_point deadline, std::stop_token stop) {
  for (int index = 1; index <= kMaxSignaturesPerStore; ++index) {
    if (stop.stop_requested() || search.Done()) return;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.Steady());
    if (left.count() <= 0) {
      search.Problem(fmt::format("{}: out of time before signature-{}", store.url(), index));
      return;
    }
    SignatureFetch got = store.Fetch(digest, index, left, stop);
    if (got.kind == SignatureFetch::Kind::kNone) return;  // no signature-<index>: none after it either
    if (got.kind == SignatureFetch::Kind::kError) {
      search.Problem(got.error);
      continue;
    }
    if (got.body.empty()) continue;
    search.Offer(got.body, fmt::format("{} signature-{}", store.url(), index));
  }
}

}  // namespace

bool IsVerificationConfigMap(const JsonValue& manifest) {
  const JsonValue* kind = FindMember(manifest, "kind");
  const JsonValue* metadata = FindMember(manifest, "metadata");
  const JsonValue* annotations = metadata ? FindMember(*metadata, "annotations") : nullptr;
  return kind && kind->is_string() && TextOf(*kind) == "ConfigMap" && annotations &&
         FindMember(*annotations, kVerificationConfigMapAnnotation) != nullptr;
}

Result<VerificationConfig> ReadVerificationConfigMap(const JsonValue& manifest) {
  const std::string name = ConfigMapName(manifest);
  VerificationConfig config;
  const JsonValue* data = FindMember(manifest, "data");
  if (data && data->is_object()) {
    for (const auto& [key, value] : MembersOf(*data)) {
      if (!value.is_string()) return Status::InvalidArgument(fmt::format("{}: data.{} must be a string", name, key));
      if (key.rfind(kKeyPrefix, 0) == 0) {
        auto keyring = registry::Keyring::Open(key.substr(kKeyPrefix.size()), {TextOf(value)});
        if (!keyring.ok()) return keyring.status().WithContext(fmt::format("{}: data.{}", name, key));
        config.keyrings.push_back(std::move(keyring).value());
      } else if (key.rfind(kStorePrefix, 0) == 0) {
        const std::string& url = TextOf(value);
        if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0 && url.rfind("file://", 0) != 0) {
          return Status::InvalidArgument(fmt::format("{}: data.{}: the store URL must be https, http or file: {}", name, key, url));
        }
        config.stores.push_back(url);
      } else {
        config.warnings.push_back(fmt::format("{}: data.{} is not a key or a store; ignored", name, key));
      }
    }
  }
  if (config.keyrings.empty()) return Status::InvalidArgument(fmt::format("{}: no {}<id> key", name, kKeyPrefix));
  if (config.stores.empty()) return Status::InvalidArgument(fmt::format("{}: no {}<id> signature store", name, kStorePrefix));
  return config;
}

Result<VerificationConfig> VerificationFromFiles(const std::string& keys_dir, std::vector<std::string> stores) {
  VerificationConfig config;
  std::vector<fs::path> files;
  auto entries = env::DefaultFileSystem().ListDirectory(keys_dir);
  if (!entries.ok()) return Status::IoError(fmt::format("--verification.keys {}: {}", keys_dir, entries.status().message()));
  for (const env::DirectoryEntry& entry : *entries) {
    if (entry.type == env::FileType::kRegular) files.push_back(entry.path);
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    CINCINNATI_ASSIGN_OR_RETURN(std::string blob, env::ReadFile(file, kMaxKeyringBytes));
    auto keyring = registry::Keyring::Open(file.filename().string(), {blob});
    if (!keyring.ok()) return keyring.status().WithContext(file.string());
    config.keyrings.push_back(std::move(keyring).value());
  }
  if (config.keyrings.empty()) return Status::InvalidArgument(fmt::format("--verification.keys {}: no key file", keys_dir));
  for (const auto& url : stores) {
    auto store = OpenSignatureStore(url);  // checks the scheme now rather than at the first update
    if (!store.ok()) return store.status().WithContext("--verification.stores");
  }
  config.stores = std::move(stores);
  return config;
}

Result<std::string> PinnedDigest(const std::string& pullspec) {
  static const RE2 kDigest("[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+");
  size_t at = pullspec.rfind('@');
  if (at == std::string::npos) {
    return Status::InvalidArgument(fmt::format("release image {} is not accessed by digest: only a digest can be verified", pullspec));
  }
  std::string digest = pullspec.substr(at + 1);
  if (!RE2::FullMatch(digest, kDigest)) {
    return Status::InvalidArgument(fmt::format("release image {}: \"{}\" is not a valid digest", pullspec, digest));
  }
  return digest;
}

ReleaseVerifier::ReleaseVerifier(VerificationConfig config, std::string ca_path, const env::Clock& clock)
    : config_(std::move(config)), ca_path_(std::move(ca_path)), clock_(clock) {}

bool ReleaseVerifier::Cached(const std::string& digest) {
  std::lock_guard lock(mu_);
  return std::find(verified_.begin(), verified_.end(), digest) != verified_.end();
}

void ReleaseVerifier::Remember(const std::string& digest) {
  std::lock_guard lock(mu_);
  std::erase(verified_, digest);
  verified_.push_back(digest);
  if (verified_.size() > kVerifiedCacheSize) verified_.pop_front();
}

Result<Verification> ReleaseVerifier::Verify(const std::string& pullspec,
                                             const std::optional<std::vector<std::string>>& spec_stores,
                                             std::chrono::steady_clock::time_point deadline, std::stop_token stop) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string digest, PinnedDigest(pullspec));
  if (Cached(digest)) return Verification{digest, true, {}};
  if (config_.keyrings.empty()) {
    return Status::InvalidArgument("no verification keys are configured: the release cannot be verified");
  }
  const std::vector<std::string>& urls = spec_stores ? *spec_stores : config_.stores;
  if (spec_stores && spec_stores->empty()) {
    return Status::InvalidArgument("spec.signatureStores is set to an empty list: no store to search for signatures");
  }
  if (urls.empty()) return Status::InvalidArgument("no signature store is configured");
  std::vector<std::unique_ptr<SignatureStoreReader>> stores;
  for (const auto& url : urls) {
    auto store = OpenSignatureStore(url, ca_path_);
    if (!store.ok()) return store.status();
    stores.push_back(std::move(store).value());
  }

  Search search(config_, digest);
  std::stop_callback cancel(stop, [&] { search.Cancel(); });
  {
    std::vector<std::jthread> threads;
    for (const auto& store : stores) {
      threads.emplace_back([&, s = store.get()] { SearchStore(*s, digest, search, clock_, deadline, search.stop_token()); });
    }
  }  // joined
  if (stop.stop_requested() && !search.Done()) return Status::IoError("stopped: the agent is shutting down");
  if (!search.Done()) {
    return Status::InvalidArgument(fmt::format("unable to verify {} against keyrings: {}: {}", digest,
                                               fmt::format("{}", fmt::join(search.Unsatisfied(), ", ")), search.ProblemsText()));
  }
  Remember(digest);
  return Verification{digest, false, search.signed_by()};
}

}  // namespace cincinnati::agent
