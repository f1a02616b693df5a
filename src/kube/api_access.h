// Who may call an API the agent or the operator serves, and how: the checks both APIs
// share, so that they cannot drift apart.
//
// - A listener off loopback needs a token (RequireTokenOffLoopback): these APIs change
//   what clusters run.
// - BearerTokenMatches: "Authorization: Bearer <token>", the scheme matched without
//   regard to case (RFC 7235), the token compared in constant time (the time a wrong
//   guess takes says nothing about how much of it was right).
// - Mutating calls carry a JSON content type (IsJsonRequest), which a browser cannot
//   send cross-site without a preflight: a web page cannot post to an API on loopback.
// - ReadTokenFile: a token file, whitespace trimmed, at most 64 KiB, not empty.
// - HostPort: "127.0.0.1:8080", "[::1]:8080" (IPv6 bracketed), for URLs in messages.
//
// Pure functions; thread-safe; never throw.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati::kube {

bool IsLoopbackAddress(std::string_view address);  // 127.0.0.0/8, ::1, localhost

// An error naming `flag` when `address` is not loopback and no token is configured.
Status RequireTokenOffLoopback(std::string_view flag, std::string_view address, bool have_token);

bool BearerTokenMatches(const std::string* authorization_header, std::string_view token);

// Whether the Content-Type (nullptr: none) is one of `types`, parameters ignored.
bool IsJsonRequest(const std::string* content_type, std::initializer_list<std::string_view> types);

Result<std::string> ReadTokenFile(const std::string& path, std::string_view flag);

std::string HostPort(std::string_view address, uint16_t port);

}  // namespace cincinnati::kube
