#include "graph_client/graph_request.h"

#include <fmt/format.h>

#include <cctype>

#include "http_server/query.h"

namespace cincinnati::graph_client {
namespace {

namespace reason = retrieval_reason;

GraphRequest Failure(std::string_view why, std::string message) {
  GraphRequest out;
  out.failure = {std::string(why), std::move(message)};
  return out;
}

bool IsHexDigit(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

Status ParseUuid(std::string_view text) {
  std::string_view s = text;
  if (s.size() == 45 && s.substr(0, 9) == "urn:uuid:") {
    s.remove_prefix(9);
  } else if (s.size() == 38 && s.front() == '{' && s.back() == '}') {
    s = s.substr(1, 36);
  } else if (s.size() == 32) {
    for (char c : s) {
      if (!IsHexDigit(c)) return Status::InvalidArgument("invalid UUID format");
    }
    return Status::OK();
  } else if (s.size() != 36) {
    return Status::InvalidArgument(fmt::format("invalid UUID length: {}", text.size()));
  }
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !IsHexDigit(s[i])) return Status::InvalidArgument("invalid UUID format");
  }
  return Status::OK();
}

bool IsUuidV4(std::string_view text) {
  if (text.size() != 36 || !ParseUuid(text).ok()) return false;
  for (char c : text) {
    if (std::isupper(static_cast<unsigned char>(c))) return false;
  }
  char variant = text[19];
  return text[14] == '4' && (variant == '8' || variant == '9' || variant == 'a' || variant == 'b');
}

std::string GraphUserAgent() { return "ClusterVersionOperator/" CINCINNATI_AGENT_VERSION; }

GraphRequest PrepareGraphRequest(const GraphRequestInputs& in) {
  if (in.upstream.empty()) {
    return Failure(reason::kNoUpstream, "No updateService server has been set to retrieve updates.");
  }
  if (!LooksLikeUrl(in.upstream)) {
    return Failure(reason::kInvalidURI,
                   fmt::format("failed to parse update service URL: parse \"{}\": invalid URL", in.upstream));
  }
  if (Status id = ParseUuid(in.cluster_id); !id.ok()) {
    return Failure(reason::kInvalidID, "invalid cluster ID: " + id.message());
  }
  if (in.arch.empty()) return Failure(reason::kNoArchitecture, "Architecture has not been configured.");
  if (in.version.empty()) {
    return Failure(reason::kNoCurrentVersion,
                   "The cluster version does not have a semantic version assigned and cannot calculate valid upgrades.");
  }
  if (in.channel.empty()) return Failure(reason::kNoChannel, "The update channel has not been configured.");
  auto version = Version::Parse(in.version);
  if (!version.ok() || in.version.find_first_of(" \t\r\n") != std::string::npos) {
    return Failure(reason::kInvalidCurrentVersion,
                   "The current cluster version is not a valid semantic version and cannot be used to calculate upgrades.");
  }

  // The upstream's own query is kept; a fragment is not sent.
  std::string base = in.upstream.substr(0, in.upstream.find('#'));
  size_t question = base.find('?');
  Parameters params;
  if (question != std::string::npos) {
    auto existing = http_server::ParseQuery(std::string_view(base).substr(question + 1));
    if (!existing.ok()) {
      return Failure(reason::kInvalidRequest, "invalid query in the update service URL: " + existing.status().message());
    }
    params = std::move(existing).value();
    base.resize(question);
  }
  params["arch"] = in.arch;
  params["channel"] = in.channel;
  params["id"] = in.cluster_id;
  params["version"] = version->ToString();

  GraphRequest out;
  out.url = base + "?" + http_server::EncodeQuery(params);
  out.version = std::move(version).value();
  return out;
}

}  // namespace cincinnati::graph_client
