#include "kube/api_access.h"

#include <fmt/format.h>
#include <openssl/crypto.h>

#include <algorithm>
#include <cctype>

#include "core/strings.h"
#include "env/file_system.h"

namespace cincinnati::kube {

bool IsLoopbackAddress(std::string_view address) {
  return address == "localhost" || address == "::1" || address == "[::1]" || address.rfind("127.", 0) == 0;
}

Status RequireTokenOffLoopback(std::string_view flag, std::string_view address, bool have_token) {
  if (have_token || IsLoopbackAddress(address)) return Status::OK();
  return Status::InvalidArgument(fmt::format(
      "{} {}: the API can change what clusters run; bound to a non-loopback address it needs --token-file", flag, address));
}

bool BearerTokenMatches(const std::string* authorization_header, std::string_view token) {
  if (!authorization_header || token.empty()) return false;
  std::string_view value = *authorization_header;
  constexpr std::string_view kScheme = "bearer";
  if (value.size() <= kScheme.size() || value[kScheme.size()] != ' ') return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) != kScheme[i]) return false;
  }
  std::string_view given = TrimWhitespace(value.substr(kScheme.size() + 1));
  // Same length first (the length of the configured token is not the secret), then
  // every byte, whatever the first difference.
  return given.size() == token.size() && CRYPTO_memcmp(given.data(), token.data(), token.size()) == 0;
}

bool IsJsonRequest(const std::string* content_type, std::initializer_list<std::string_view> types) {
  if (!content_type) return false;
  std::string_view type = TrimWhitespace(std::string_view(*content_type).substr(0, content_type->find(';')));
  return std::any_of(types.begin(), types.end(), [&](std::string_view t) {
    return type.size() == t.size() && std::equal(type.begin(), type.end(), t.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
           });
  });
}

Result<std::string> ReadTokenFile(const std::string& path, std::string_view flag) {
  auto text = env::ReadFile(path, 64 * 1024);
  if (!text.ok()) return text.status().WithContext(flag);
  std::string token(TrimWhitespace(*text));
  if (token.empty()) return Status::InvalidArgument(fmt::format("{} {}: the file is empty", flag, path));
  return token;
}

std::string HostPort(std::string_view address, uint16_t port) {
  if (address.find(':') != std::string_view::npos && address.front() != '[') return fmt::format("[{}]:{}", address, port);
  return fmt::format("{}:{}", address, port);
}

}  // namespace cincinnati::kube
