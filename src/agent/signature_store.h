// Signature stores: where release signatures are looked up, by digest, as the CVO does.
//
// The layout is the simple-signing "lookaside" variant without repository name:
// `<base>/<algo>=<hex>/signature-<n>`, n = 1, 2, ... Stores are HTTP(S) URLs or
// `file://` directories with the same relative paths.
//
// Contract:
// - Fetch() tells apart "there is no signature n" (HTTP 404, a missing file: the
//   search of this store stops) from an error (any other status, a transport failure,
//   an unreadable file, a body over kMaxSignatureBytes: the next index is tried).
// - Thread-safety: a store may be used from any number of threads at once.
// - Errors: nothing throws; OpenSignatureStore refuses a URL of another scheme, naming it.
#pragma once

#include <chrono>
#include <memory>
#include <stop_token>
#include <string>

#include "core/status.h"

namespace cincinnati::agent {

inline constexpr size_t kMaxSignatureBytes = 50 * 1024;
inline constexpr int kMaxSignaturesPerStore = 9;  // signature-1 .. signature-9

struct SignatureFetch {
  enum class Kind { kFound, kNone, kError };
  Kind kind = Kind::kError;
  std::string body;   // kFound
  std::string error;  // kError: what went wrong, naming the location
};

class SignatureStoreReader {
 public:
  virtual ~SignatureStoreReader() = default;
  virtual const std::string& url() const = 0;
  // Signature `index` (1-based) of `digest` ("sha256:<hex>").
  virtual SignatureFetch Fetch(const std::string& digest, int index, std::chrono::milliseconds timeout,
                               std::stop_token stop) const = 0;
};

// `ca_path`: extra trusted certificates for HTTPS stores (the agent's CA options).
Result<std::unique_ptr<SignatureStoreReader>> OpenSignatureStore(const std::string& url, const std::string& ca_path = "");

}  // namespace cincinnati::agent
