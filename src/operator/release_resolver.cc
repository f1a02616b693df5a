#include "operator/release_resolver.h"

#include <fmt/format.h>

#include "registry/reference.h"
#include "registry/release_image.h"

namespace cincinnati::upgrade {

Result<std::string> RegistryReleaseResolver::VersionOf(const std::string& image) {
  CINCINNATI_ASSIGN_OR_RETURN(registry::ImageReference ref, registry::ParseImageReference(image));
  registry::RegistryClient client(ref.location, {access_.username, access_.password}, {.ca_path = access_.ca_dir});
  CINCINNATI_ASSIGN_OR_RETURN(registry::ReleaseImage release, registry::ReadReleaseImage(client, ref.reference()));
  if (!release.metadata) return Status::NotFound(fmt::format("{} carries no release metadata", image));
  return release.metadata->version.ToString();
}

}  // namespace cincinnati::upgrade
