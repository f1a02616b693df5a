#include "registry/credentials.h"

#include <openssl/evp.h>

#include <fmt/format.h>
#include <simdjson.h>

#include "core/strings.h"

namespace cincinnati::registry {
namespace {

Result<std::string> Base64Decode(std::string_view in) {
  std::string out(3 * in.size() / 4 + 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return Status::InvalidArgument("auth is not base64");
  // EVP_DecodeBlock counts padding as output bytes; a well-formed input has at most
  // two '=' and they never outnumber what was decoded ("====" decodes to 3 bytes).
  size_t pad = 0;
  for (size_t i = in.size(); i > 0 && in[i - 1] == '='; --i) ++pad;
  if (pad > 2 || pad > static_cast<size_t>(n)) return Status::InvalidArgument("auth is not base64");
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

}  // namespace

Result<Credentials> LookupDockerCredentials(const std::string& config_path, const RepositoryLocation& location) {
  simdjson::padded_string content;
  if (auto err = simdjson::padded_string::load(config_path).get(content)) {
    return Status::InvalidArgument(fmt::format("{}: {}", config_path, simdjson::error_message(err)));
  }
  return FindDockerCredentials(content, location, config_path);
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
      CINCINNATI_ASSIGN_OR_RETURN(std::string decoded, Base64Decode(auth));
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
