// ReleaseVerifier: decides whether a release image digest is signed by every trusted
// keyring, as the CVO does, before anything of the release is used.
//
// Configuration comes from the running release's verification ConfigMap (a manifest
// annotated `release.openshift.io/verification-config-map`: `verifier-public-key-<id>`
// keyrings and `store-<id>` URLs), or from a directory of keys and a list of stores
// given on the command line to bootstrap.
//
// Contract:
// - Only the digest after the last '@' is authenticated (the runtime pulls exactly that
//   digest); a pull spec without one is refused.
// - Every keyring must be satisfied by at least one signature whose OpenPGP signature
//   is good for a key of that keyring and whose strict "atomic container signature"
//   payload names the digest byte for byte (registry/signature.h).
// - Stores: `spec.signatureStores` when set (an empty list is an error; the
//   configuration's stores are then not consulted), else the configuration's. Stores
//   are searched in parallel, each in index order; the search ends as soon as every
//   keyring is satisfied or at the deadline.
// - A verified digest is remembered (the 64 most recent) and passes at once.
// - Thread-safety: Verify() may be called from several threads at once.
// - Errors: nothing throws; a refusal says which keyrings were not satisfied and the
//   first problems met (store errors, bad signatures), naming stores and indexes.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "core/status.h"
#include "env/clock.h"
#include "kube/json_value.h"
#include "registry/keyring.h"

namespace cincinnati::agent {

using kube::JsonValue;

inline constexpr std::string_view kVerificationConfigMapAnnotation = "release.openshift.io/verification-config-map";

struct VerificationConfig {
  std::vector<std::shared_ptr<const registry::Keyring>> keyrings;
  std::vector<std::string> stores;  // base URLs
  std::vector<std::string> warnings;  // ignored keys of the ConfigMap
};

// Whether `manifest` (a decoded manifest document) is the verification ConfigMap.
bool IsVerificationConfigMap(const JsonValue& manifest);
// Reads the ConfigMap's data. No key or no store is an error naming the ConfigMap.
Result<VerificationConfig> ReadVerificationConfigMap(const JsonValue& manifest);
// Bootstrap: every regular file of `keys_dir` is one keyring (named after the file).
Result<VerificationConfig> VerificationFromFiles(const std::string& keys_dir, std::vector<std::string> stores);

// The digest a pull spec pins ("sha256:<hex>"), or why it cannot be verified.
Result<std::string> PinnedDigest(const std::string& pullspec);

struct Verification {
  std::string digest;
  bool from_cache = false;
  std::vector<std::string> signed_by;  // "<keyring>: <fingerprint> (<store>/.../signature-<n>)"
};

class ReleaseVerifier {
 public:
  // `ca_path`: extra trusted certificates for HTTPS stores. `clock`: what Verify's
  // deadline is a steady time of (the caller's clock).
  ReleaseVerifier(VerificationConfig config, std::string ca_path = "", const env::Clock& clock = env::RealClock());

  // `spec_stores`: spec.signatureStores URLs (nullopt: the field is not set). Once
  // `stop` is requested the search ends within about a second (IoError "stopped").
  Result<Verification> Verify(const std::string& pullspec, const std::optional<std::vector<std::string>>& spec_stores,
                              std::chrono::steady_clock::time_point deadline, std::stop_token stop = {});

  const VerificationConfig& config() const { return config_; }

 private:
  bool Cached(const std::string& digest);
  void Remember(const std::string& digest);

  VerificationConfig config_;
  std::string ca_path_;
  const env::Clock& clock_;
  std::mutex mu_;
  std::deque<std::string> verified_;  // most recent last
};

}  // namespace cincinnati::agent
