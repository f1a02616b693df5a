#include "registry/signature.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <boost/json.hpp>

#include "core/json.h"
#include "registry/keyring.h"

namespace cincinnati::registry {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// Each member of `object` must be one of `known`; `where` prefixes the error.
Status OnlyKnownMembers(element object, std::string_view where, std::initializer_list<std::string_view> known) {
  simdjson::dom::object members;
  if (object.get_object().get(members)) {
    return Status::InvalidArgument(fmt::format("{}: must be an object", where.empty() ? "the signed payload" : where));
  }
  for (auto field : members) {
    bool ok = false;
    for (std::string_view k : known) ok |= field.key == k;
    if (!ok) {
      return Status::InvalidArgument(
          fmt::format("{}{}{}: unknown member", where, where.empty() ? "" : ".", std::string(field.key)));
    }
  }
  return Status::OK();
}

// The string at `key` of `object` ("" when absent or null).
Result<std::string> StringMember(element object, std::string_view key, std::string_view where) {
  auto v = object[key];
  if (v.error() == simdjson::NO_SUCH_FIELD || v.is_null()) return std::string();
  std::string_view text;
  if (v.get_string().get(text)) return Status::InvalidArgument(fmt::format("{}.{}: must be a string", where, key));
  return std::string(text);
}

}  // namespace

std::string SignatureLocation(const std::string& base, const std::string& digest, int index) {
  std::string segment = digest;
  if (size_t colon = segment.find(':'); colon != std::string::npos) segment[colon] = '=';
  std::string prefix = base;
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  return fmt::format("{}{}/signature-{}", prefix, segment, index);
}

Result<AtomicSignature> ParseAtomicSignature(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  element root;
  if (auto e = parser.parse(padded).get(root)) {
    return Status::InvalidArgument(fmt::format("the signed payload is not JSON: {}", simdjson::error_message(e)));
  }
  CINCINNATI_RETURN_IF_ERROR(OnlyKnownMembers(root, "", {"critical", "optional"}));
  element critical;
  if (root["critical"].get(critical)) return Status::InvalidArgument("critical: required");
  CINCINNATI_RETURN_IF_ERROR(OnlyKnownMembers(critical, "critical", {"type", "image", "identity"}));
  AtomicSignature out;
  CINCINNATI_ASSIGN_OR_RETURN(std::string type, StringMember(critical, "type", "critical"));
  if (type != "atomic container signature") {
    return Status::InvalidArgument(fmt::format("critical.type: \"{}\" is not \"atomic container signature\"", type));
  }
  element image, identity;
  if (critical["image"].get(image)) return Status::InvalidArgument("critical.image: required");
  CINCINNATI_RETURN_IF_ERROR(OnlyKnownMembers(image, "critical.image", {"docker-manifest-digest"}));
  CINCINNATI_ASSIGN_OR_RETURN(out.digest, StringMember(image, "docker-manifest-digest", "critical.image"));
  if (critical["identity"].get(identity)) return Status::InvalidArgument("critical.identity: required");
  CINCINNATI_RETURN_IF_ERROR(OnlyKnownMembers(identity, "critical.identity", {"docker-reference"}));
  CINCINNATI_ASSIGN_OR_RETURN(out.reference, StringMember(identity, "docker-reference", "critical.identity"));
  if (out.reference.empty()) return Status::InvalidArgument("critical.identity.docker-reference: must not be empty");

  element optional;
  if (!root["optional"].get(optional) && !optional.is_null()) {
    CINCINNATI_RETURN_IF_ERROR(OnlyKnownMembers(optional, "optional", {"creator", "timestamp"}));
    CINCINNATI_ASSIGN_OR_RETURN(out.creator, StringMember(optional, "creator", "optional"));
    auto ts = optional["timestamp"];
    if (ts.error() != simdjson::NO_SUCH_FIELD && !ts.is_null()) {
      int64_t value = 0;
      if (ts.get_int64().get(value)) return Status::InvalidArgument("optional.timestamp: must be an integer (Unix seconds)");
      out.timestamp = value;
    }
  }
  return out;
}

std::string WriteAtomicSignature(const AtomicSignature& signature) {
  boost::json::object optional;
  if (!signature.creator.empty()) optional["creator"] = signature.creator;
  if (signature.timestamp) optional["timestamp"] = *signature.timestamp;
  return WriteJson(boost::json::object{
      {"critical", boost::json::object{{"type", "atomic container signature"},
                                       {"image", boost::json::object{{"docker-manifest-digest", signature.digest}}},
                                       {"identity", boost::json::object{{"docker-reference", signature.reference}}}}},
      {"optional", std::move(optional)}});
}

Result<std::string> VerifyImageSignature(const std::string& signature, const std::string& public_keys_dir,
                                         const std::string& expected_digest) {
  CINCINNATI_ASSIGN_OR_RETURN(auto keyring, Keyring::FromDirectory(public_keys_dir, public_keys_dir));
  CINCINNATI_ASSIGN_OR_RETURN(VerifiedMessage message, keyring->Verify(signature));
  simdjson::dom::parser parser;
  std::string_view digest;
  if (parser.parse(message.payload)["critical"]["image"]["docker-manifest-digest"].get_string().get(digest)) {
    return Status::InvalidArgument("signed payload has no critical.image.docker-manifest-digest");
  }
  if (digest != expected_digest) {
    return Status::InvalidArgument(fmt::format("signature is for {}, not for {}", std::string(digest), expected_digest));
  }
  return message.payload;
}

}  // namespace cincinnati::registry
