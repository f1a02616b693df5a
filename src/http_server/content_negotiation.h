// The reference's content negotiation (its graph builder's and policy engine's), not RFC 7231:
//  * no Accept header -> application/vnd.redhat.cincinnati.v1+json;
//  * the header must equal exactly one of "*", "*/*", the default, an offered type or
//    "<top>/*" of an offered type (no lists, no q-values), else it is not acceptable;
//  * a value with a "*" part resolves to the default (application/json), any other
//    value to itself.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cincinnati::http_server {

inline constexpr std::string_view kCincinnatiV1 = "application/vnd.redhat.cincinnati.v1+json";
inline constexpr std::string_view kApplicationJson = "application/json";

// The negotiated type, or nullopt for 406.
std::optional<std::string> NegotiateContentType(const std::string* accept, const std::vector<std::string>& offered,
                                                std::string_view default_type = kApplicationJson);

// Whether Accept-Encoding allows gzip (token "gzip" or "*" without q=0).
bool AcceptsGzip(const std::string* accept_encoding);

}  // namespace cincinnati::http_server
