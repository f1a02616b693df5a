#include "cli/service_signing.h"

#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "env/file_system.h"
#include "cli/service_reports.h"
#include "env/key_files.h"

namespace cincinnati::cli {

Result<SigningParts> SetUpSigning(const Settings& s, Role role, env::Clock& clock) {
  SigningParts parts;
  const std::string keys = s.String("signing.keys", "");
  const std::string state_dir = s.String("signing.state_dir", "");
  if (role != Role::kPolicyEngine) {
    CINCINNATI_ASSIGN_OR_RETURN(const std::string shared, PostgresUrl(s));
    if (!keys.empty() && state_dir.empty() && shared.empty()) {
      return Status::InvalidArgument("signing.keys needs signing.state_dir (or reports.postgres), where the graph generation is "
                                     "kept: a restart must never number graphs lower than agents have seen");
    }
    if (!shared.empty()) {
      // Replicas behind one address number the same graph alike (signing/graph_generation.h).
      CINCINNATI_ASSIGN_OR_RETURN(parts.generations, server::GraphGeneration::Shared(shared, clock));
    } else if (state_dir.empty()) {
      parts.generations = server::GraphGeneration::InMemory(clock);
    } else {
      CINCINNATI_RETURN_IF_ERROR(env::DefaultFileSystem().CreateDirectories(state_dir).WithContext("signing.state_dir"));
      CINCINNATI_ASSIGN_OR_RETURN(parts.generations, server::GraphGeneration::Open(state_dir + "/generation", clock));
    }
  }
  if (keys.empty()) return parts;
  CINCINNATI_ASSIGN_OR_RETURN(auto loaded, env::LoadSigningKeys(keys));
  // An hour: a dozen of a graph builder's refreshes (300 s) plus a policy engine's TTL, so
  // that a slow restart or a few failed refreshes do not expire answers; a stopped source does.
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t validity, s.Unsigned("signing.validity_secs", 3600));
  if (validity == 0) return Status::InvalidArgument("signing.validity_secs must be greater than 0");
  // A signature counts its validity from when the graph's source last answered: a graph
  // builder's last refresh, or a policy engine's last fetch. Valid no longer than the
  // time between those, every answer would expire before the next one vouches again.
  const bool fetches = role == Role::kPolicyEngine;
  const std::string interval_key = fetches ? "upstream.cincinnati.cache_ttl_secs" : "service.pause_secs";
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t interval, s.Unsigned(interval_key, fetches ? 60 : 300));
  if (validity < 2 * interval) {
    return Status::InvalidArgument(fmt::format(
        "signing.validity_secs ({}) must be at least twice {} ({}), the time between the graph's {}: a signature counts from "
        "the last one, so a shorter one expires every answer before the next, or at the first slow or failed one (an hour, "
        "the default, is a dozen refreshes)",
        validity, interval_key, interval, fetches ? "fetches from its upstream" : "refreshes"));
  }
  // A signature valid that long lets a replayed answer pass that long (TUF's freeze attack).
  constexpr uint64_t kMaxValidity = 7 * 86400;
  if (validity > kMaxValidity) {
    return Status::InvalidArgument(fmt::format("signing.validity_secs ({}) is more than a week ({}): a replayed answer would be "
                                               "taken for that long",
                                               validity, kMaxValidity));
  }
  parts.signer = std::make_shared<server::AnswerSigner>(std::move(loaded), std::chrono::seconds(validity));
  spdlog::info("graph answers are signed by {}, valid {} s after the graph's source last answered", parts.signer->KeyIds(), validity);
  return parts;
}

}  // namespace cincinnati::cli
