#include "operator/validation.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/semver.h"
#include "graph_client/available_updates.h"
#include "graph_client/graph_request.h"
#include "graph_client/update_graph.h"
#include "http/client.h"
#include "operator/scheduler.h"

namespace cincinnati::upgrade {
namespace {

ValidationResult Invalid(std::string message, bool is_error) {
  ValidationResult r;
  r.message = std::move(message);
  r.is_error = is_error;
  return r;
}

ValidationResult Valid(bool available, std::string message = "") {
  ValidationResult r;
  r.valid = true;
  r.available_update = available;
  r.message = std::move(message);
  return r;
}

bool Offered(const std::vector<AgentRelease>& releases, const std::string& version) {
  return std::any_of(releases.begin(), releases.end(), [&](const AgentRelease& r) { return r.version == version; });
}

ValidationResult ValidateImage(UpgradeConfig& config, const ValidationPorts& ports) {
  const std::string& image = config.spec.desired.image;
  if (Status s = CheckImagePullSpec(image); !s.ok()) return Invalid(s.message(), true);
  if (!ports.resolver) return Invalid(fmt::format("failed to fetch image manifest digest: {}: no registry access", image), true);
  auto version = ports.resolver->VersionOf(image);
  if (!version.ok()) {
    return Invalid(fmt::format("failed to fetch image manifest digest: {} needs to be a valid release image: {}", image,
                               version.status().message()),
                   true);
  }
  if (*version != config.spec.desired.version) {
    // Rule 2a: the image says which version it is; the New entry follows.
    for (auto& h : config.history) {
      if (h.version == config.spec.desired.version && h.phase == Phase::kNew) h.version = *version;
    }
    config.spec.desired.version = *version;
  }
  return Valid(true);
}

}  // namespace

Status CheckImagePullSpec(std::string_view image) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format("failed to parse image:{} must be a valid image pull spec: {}", image, why));
  };
  std::string_view rest = image;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (rest.substr(0, scheme.size()) == scheme) rest.remove_prefix(scheme.size());
  }
  const size_t at = rest.find('@');
  std::string_view path = rest.substr(0, at);
  const size_t slash = path.find('/');
  if (slash == std::string_view::npos) return bad("no registry specified");
  std::string_view registry = path.substr(0, slash);
  if (registry.find_first_of(".:") == std::string_view::npos && registry != "localhost") return bad("no registry specified");
  std::string_view repository_and_name = path.substr(slash + 1);
  const size_t last = repository_and_name.rfind('/');
  if (last == std::string_view::npos || last == 0) return bad("no repository specified");
  if (last + 1 >= repository_and_name.size()) return bad("no image name specified");
  if (at == std::string_view::npos || rest.substr(at + 1).find(':') == std::string_view::npos) return bad("no image digest specified");
  return Status::OK();
}

Result<std::string> CurrentVersion(const AgentSnapshot& agent) {
  const AgentHistoryEntry* best = nullptr;
  for (const auto& h : agent.history) {
    if (h.state != "Completed" || h.version.empty()) continue;
    if (!best || h.completion_time > best->completion_time) best = &h;  // RFC 3339 UTC sorts as text
  }
  if (!best) return Status::NotFound("the cluster's update history has no Completed version");
  return best->version;
}

Result<bool> HasUpgradeCommenced(const UpgradeConfig& config, const AgentSnapshot& agent) {
  const Desired& d = config.spec.desired;
  if (!d.image.empty()) return agent.desired_update.image == d.image;
  if (!d.version.empty()) return agent.desired_update.version == d.version;
  return Status::InvalidArgument("no image or version is desired: cannot tell whether the upgrade commenced");
}

bool HasUpgradeCompleted(const UpgradeConfig& config, const AgentSnapshot& agent) {
  return std::any_of(agent.history.begin(), agent.history.end(), [&](const AgentHistoryEntry& h) {
    return h.state == "Completed" && h.version == config.spec.desired.version;
  });
}

std::string InferChannel(std::string_view current_channel, std::string_view desired_version) {
  std::string group = "stable";
  if (size_t dash = current_channel.rfind('-'); dash != std::string_view::npos && dash > 0) group = std::string(current_channel.substr(0, dash));
  auto v = Version::Parse(desired_version);
  if (!v.ok()) return "";
  uint64_t minor = v->minor();
  if (group == "eus" && minor % 2 == 1) ++minor;
  return fmt::format("{}-{}.{}", group, v->major(), minor);
}

std::string PrecedingVersion(const UpgradeConfig& config, const AgentSnapshot& agent) {
  const std::string& target = config.spec.desired.version;
  if (agent.status_desired.version == target) {
    for (const auto& h : agent.history) {
      if (h.state == "Completed" && !h.version.empty() && h.version != target) return h.version;
    }
    return "";
  }
  return agent.status_desired.version;
}

ValidationResult ValidateDesired(UpgradeConfig& config, const AgentSnapshot& agent, const ValidationPorts& ports) {
  if (!ParseTime(config.spec.upgrade_at).ok()) {
    return Invalid(UpgradeAtError(config.spec.upgrade_at), true);
  }
  const Desired& d = config.spec.desired;
  if (!d.image.empty()) return ValidateImage(config, ports);
  if (d.version.empty() && d.channel.empty()) {
    return Invalid("Not able to validate the upgrade config, either image or (channel + version) needs to be provided", false);
  }
  auto desired = Version::Parse(d.version);
  if (!desired.ok()) {
    return Invalid(fmt::format("failed to parse upgrade config desired version {} as semver: {}", d.version, desired.status().message()), true);
  }
  auto current_text = CurrentVersion(agent);
  if (!current_text.ok()) {
    return Invalid(fmt::format("failed to get current cluster version during validation: {}", current_text.status().message()), true);
  }
  auto current = Version::Parse(*current_text);
  if (!current.ok()) {
    return Invalid(fmt::format("failed to parse current cluster version {}: {}", *current_text, current.status().message()), true);
  }
  if (*desired < *current) {
    ValidationResult r = Invalid(fmt::format("downgrades to desired version {} from {} are unsupported", d.version, *current_text), true);
    r.valid = true;  // the reference's shape: valid, not available, with an error
    return r;
  }
  if (*desired == *current) {
    ValidationResult r = Invalid(fmt::format("desired version {} matches the current version {}", d.version, *current_text), true);
    r.valid = true;
    return r;
  }
  if (!d.channel.empty() && d.channel != agent.channel) {
    if (!ports.cincinnati_check || !ports.graph) return Valid(true);  // CommenceUpgrade waits for the offer
    auto targets = ports.graph->Targets(agent, d.channel, *current_text);
    if (!targets.ok()) return Invalid(targets.status().message(), true);
    if (targets->empty()) return Invalid(fmt::format("no available upgrade for the given clusterversion {}", *current_text), true);
    if (std::find(targets->begin(), targets->end(), d.version) == targets->end()) {
      return Invalid(fmt::format("cannot find version {} in available updates", d.version), true);
    }
    return Valid(true);
  }
  if (!Offered(agent.available_updates, d.version) && !Offered(agent.conditional_updates, d.version)) {
    return Invalid(fmt::format("version {} not found in clusterversion available or conditional updates", d.version), false);
  }
  return Valid(true);
}

Result<std::vector<std::string>> HttpGraphClient::Targets(const AgentSnapshot& agent, const std::string& channel,
                                                          const std::string& version) {
  const std::string& id = agent.cluster_id;
  if (id.size() != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-') {
    return Status::InvalidArgument(fmt::format("cluster ID {} is not a UUID", agent.cluster_id));
  }
  graph_client::GraphRequestInputs inputs;
  inputs.upstream = agent.upstream.empty() ? std::string(graph_client::kDefaultUpstream) : agent.upstream;
  inputs.cluster_id = agent.cluster_id;
  inputs.arch = arch_.empty() ? "amd64" : arch_;
  inputs.version = version;
  inputs.channel = channel;
  graph_client::GraphRequest request = graph_client::PrepareGraphRequest(inputs);
  if (!request.ok()) return Status::InvalidArgument(request.failure.message);
  http::GetOptions options;
  options.headers = {"Accept: application/json"};
  options.timeout = std::chrono::seconds(30);
  http::Result got = http::Get(request.url, options);
  if (!got.ok()) {
    return Status::IoError(got.error.empty() ? fmt::format("{}: HTTP {}", request.url, got.status) : got.error);
  }
  CINCINNATI_ASSIGN_OR_RETURN(graph_client::UpdateGraph graph, graph_client::ParseUpdateGraph(got.body));
  graph_client::UpdatesQuery query{request.version, false, false};
  graph_client::UpdatesOrFailure updates = graph_client::ComputeAvailableUpdates(graph, query, channel);
  if (!updates.ok()) return Status::InvalidArgument(updates.failure.message);
  std::vector<std::string> out;
  for (const auto& r : updates.updates.recommended) out.push_back(r.version);
  for (const auto& u : updates.updates.conditional) out.push_back(u.release.version);
  return out;
}

}  // namespace cincinnati::upgrade
