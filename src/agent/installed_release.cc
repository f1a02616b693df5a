#include "agent/installed_release.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>

#include "core/metadata_keys.h"
#include "core/release_metadata.h"
#include "core/strings.h"
#include "env/file_system.h"
#include "registry/reference.h"
#include "registry/release_image.h"

namespace cincinnati::agent {
namespace {

Release FromMetadata(const ReleaseMetadata& metadata, std::string image, bool multi) {
  Release release;
  release.version = metadata.version.ToString();
  release.image = std::move(image);
  release.multi_architecture = multi;
  if (auto it = metadata.metadata.find("url"); it != metadata.metadata.end()) release.url = it->second;
  if (auto it = metadata.metadata.find(PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix)); it != metadata.metadata.end()) {
    for (std::string_view c : Split(it->second, ',')) {
      if (!c.empty()) release.channels.emplace_back(c);
    }
    std::sort(release.channels.begin(), release.channels.end());
  }
  if (auto it = metadata.metadata.find(std::string(kReleaseArchitectureKey)); it != metadata.metadata.end()) {
    release.multi_architecture = it->second == "multi";
  }
  return release;
}

}  // namespace

Result<Release> ReadInstalledRelease(const InstalledReleaseSource& source) {
  if (!source.release_document.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(std::string text, env::ReadFile(source.release_document, size_t{4} << 20));
    auto metadata = ParseReleaseMetadata(text);
    if (!metadata.ok()) return metadata.status().WithContext(source.release_document);
    simdjson::dom::parser parser;
    simdjson::padded_string padded(text);
    std::string_view payload;
    if (parser.parse(padded)["payload"].get_string().get(payload) || payload.empty()) {
      return Status::InvalidArgument(fmt::format("{}: \"payload\" must name the release image (a pull spec)",
                                                 source.release_document));
    }
    return FromMetadata(*metadata, std::string(payload), false);
  }
  if (source.release_image.empty()) {
    return Status::InvalidArgument("an empty state directory needs --release-image PULLSPEC or --release-document FILE");
  }
  CINCINNATI_ASSIGN_OR_RETURN(registry::ImageReference ref, registry::ParseImageReference(source.release_image));
  if (ref.reference().empty()) {
    return Status::InvalidArgument(fmt::format("--release-image '{}': a tag or digest is required", source.release_image));
  }
  registry::RegistryClient client(ref.location, {source.registry_username, source.registry_password},
                                  {.ca_path = source.registry_ca_dir});
  auto image = registry::ReadReleaseImage(client, ref.reference());
  if (!image.ok()) return image.status().WithContext(source.release_image);
  if (!image->metadata) {
    return Status::NotFound(fmt::format("{} has no {}: not a release image", source.release_image,
                                        registry::kReleaseMetadataPath));
  }
  return FromMetadata(*image->metadata, ref.location.PullSpecPrefix() + "@" + image->digest, image->arch == "multi");
}

}  // namespace cincinnati::agent
