// Registry credentials from a dockercfg file (`config.json`), looked up as the
// reference does: the most specific key first, "host[:port]/repo/path", then the same
// with its last path segment removed, down to "host[:port]". docker.io and
// registry-1.docker.io use the key "https://index.docker.io/v1/". Each entry's "auth"
// is base64("user:password").
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "registry/client.h"
#include "registry/reference.h"

namespace cincinnati::registry {

// Empty credentials when the file has none for this repository.
Result<Credentials> LookupDockerCredentials(const std::string& config_path, const RepositoryLocation& location);
// The same over the file's content; `config_path` only names it in errors.
Result<Credentials> FindDockerCredentials(std::string_view config, const RepositoryLocation& location,
                                          const std::string& config_path);

}  // namespace cincinnati::registry
