#include "registry/reference.h"

#include <fmt/format.h>

#include "core/strings.h"

namespace cincinnati::registry {

Result<RepositoryLocation> ParseRepositoryLocation(std::string_view registry, std::string_view repository) {
  std::string full = std::string(registry) + "/" + std::string(repository);
  RepositoryLocation loc;
  std::string_view rest = full;
  std::string scheme;
  if (size_t sep = rest.find("://"); sep != std::string_view::npos) {
    scheme = std::string(rest.substr(0, sep));
    rest.remove_prefix(sep + 3);
  }
  if (scheme == "http") {
    loc.insecure = true;
  } else if (!scheme.empty() && scheme != "https") {
    return Status::InvalidArgument(fmt::format("registry '{}': unsupported scheme '{}'", registry, scheme));
  }
  size_t slash = rest.find('/');
  std::string host = std::string(rest.substr(0, slash));
  if (host.empty()) return Status::InvalidArgument(fmt::format("registry '{}': no host", registry));
  std::string path;
  if (slash != std::string_view::npos) {
    for (std::string_view part : Split(rest.substr(slash + 1), '/')) {
      if (part.empty()) continue;
      if (!path.empty()) path += '/';
      path += part;
    }
  }
  if (path.empty()) return Status::InvalidArgument(fmt::format("registry '{}': no repository", registry));
  loc.base_url = (loc.insecure ? "http://" : "https://") + host;
  loc.host_port = host;  // pull specs never carry a scheme, plain HTTP or not
  loc.repository = path;
  return loc;
}

Result<ImageReference> ParseImageReference(std::string_view text) {
  std::string_view s = text;
  std::string scheme;
  if (size_t sep = s.find("://"); sep != std::string_view::npos) {
    scheme = std::string(s.substr(0, sep + 3));
    s.remove_prefix(sep + 3);
  }
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) {
    return Status::InvalidArgument(fmt::format("image '{}': expected host[:port]/repository[:tag]", text));
  }
  ImageReference ref;
  std::string_view name = s.substr(slash + 1);
  if (size_t at = name.find('@'); at != std::string_view::npos) {
    ref.digest = std::string(name.substr(at + 1));
    name = name.substr(0, at);
  }
  size_t colon = name.rfind(':');
  if (colon != std::string_view::npos && name.find('/', colon) == std::string_view::npos) {
    ref.tag = std::string(name.substr(colon + 1));
    name = name.substr(0, colon);
  }
  CINCINNATI_ASSIGN_OR_RETURN(ref.location, ParseRepositoryLocation(scheme + std::string(s.substr(0, slash)), name));
  return ref;
}

}  // namespace cincinnati::registry
