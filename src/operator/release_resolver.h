// RegistryReleaseResolver: the ReleaseResolver port over the registry client: the
// version a release image carries in its release-manifests/release-metadata (the
// reference reads the config label io.openshift.release; our payloads carry both the
// document and the version, and the document is what the agent checks too).
// Thread-safe (a client per call); never throws.
#pragma once

#include <string>

#include "operator/ports.h"

namespace cincinnati::upgrade {

struct RegistryAccess {
  std::string username;
  std::string password;
  std::string ca_dir;
};

class RegistryReleaseResolver : public ReleaseResolver {
 public:
  explicit RegistryReleaseResolver(RegistryAccess access = {}) : access_(std::move(access)) {}
  Result<std::string> VersionOf(const std::string& image) override;

 private:
  RegistryAccess access_;
};

}  // namespace cincinnati::upgrade
