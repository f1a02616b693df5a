#include "registry/credentials.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "core/base64.h"
#include "core/strings.h"
#include "env/file_system.h"

namespace cincinnati::registry {

Result<Credentials> LookupDockerCredentials(const std::string& config_path, const RepositoryLocation& location) {
  // A docker config is KiBs; 16 MiB is not one.
  auto content = env::DefaultFileSystem().ReadFile(config_path, size_t{16} << 20);
  if (!content.ok()) return Status::InvalidArgument(fmt::format("{}: {}", config_path, content.status().message()));
  return FindDockerCredentials(*content, location, config_path);
}

Result<Credentials> FindDockerCredentials(std::string_view config, const RepositoryLocation& location,
                                          const std::string& config_path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(config.data(), config.size()).get(doc)) {
    return Status::InvalidArgument(fmt::format("{}: {}", config_path, simdjson::error_message(err)));
  }
  simdjson::dom::object auths;
  if (doc["auths"].get(auths)) return Credentials{};
  const std::string& host = location.host_port;
  std::vector<std::string> keys;
  std::string key = host + "/" + location.repository;
  while (true) {
    keys.push_back(key);
    size_t slash = key.rfind('/');
    if (slash == std::string::npos) break;
    key = key.substr(0, slash);
  }
  if (host == "docker.io" || host == "registry-1.docker.io") keys.push_back("https://index.docker.io/v1/");
  for (const std::string& k : keys) {
    for (const std::string& candidate : {k, "https://" + k, "http://" + k}) {
      simdjson::dom::object entry;
      if (auths[candidate].get(entry)) continue;
      std::string_view auth;
      if (entry["auth"].get_string().get(auth)) continue;
      auto decoded_or = Base64Decode(auth);
      if (!decoded_or.ok()) {
        return Status::InvalidArgument(fmt::format("{}: auth for '{}' is not base64", config_path, candidate));
      }
      const std::string& decoded = *decoded_or;
      size_t colon = decoded.find(':');
      if (colon == std::string::npos) {
        return Status::InvalidArgument(fmt::format("{}: auth for '{}' is not user:password", config_path, candidate));
      }
      return Credentials{decoded.substr(0, colon), decoded.substr(colon + 1)};
    }
  }
  return Credentials{};
}

}  // namespace cincinnati::registry
