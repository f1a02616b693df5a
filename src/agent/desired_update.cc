#include "agent/desired_update.h"

#include <fmt/format.h>

#include "core/strings.h"

namespace cincinnati::agent {
namespace {

// Images of the available updates (then of the history) for `version`.
std::vector<std::string> ImagesForVersion(const ClusterVersion& cv, const std::string& version) {
  std::vector<std::string> images;
  for (const auto& r : cv.status.available_updates) {
    if (r.version == version && !r.image.empty()) images.push_back(r.image);
  }
  if (!images.empty()) return images;
  for (const auto& h : cv.status.history) {
    if (h.version == version && !h.image.empty()) return {h.image};
  }
  return images;
}

}  // namespace

std::vector<std::string> DesiredUpdateErrors(const ClusterVersion& cv) {
  const auto& desired = cv.spec.desired_update;
  if (!desired || desired->version.empty() || !desired->image.empty()) return {};
  switch (ImagesForVersion(cv, desired->version).size()) {
    case 0:
      return {fmt::format("spec.desiredUpdate.version: Invalid value: \"{}\": when image is empty the update must be a "
                          "previous version or an available update",
                          desired->version)};
    case 1:
      return {};
    default:
      return {fmt::format("spec.desiredUpdate.version: Invalid value: \"{}\": there are multiple possible payloads for "
                          "this version, specify the exact image",
                          desired->version)};
  }
}

std::optional<ResolvedTarget> ResolveDesiredUpdate(const ClusterVersion& cv) {
  const auto& desired = cv.spec.desired_update;
  if (!desired || !DesiredUpdateErrors(cv).empty()) return std::nullopt;
  ResolvedTarget target;
  const Release& current = cv.status.desired;
  if (desired->image.empty() && desired->version.empty()) {
    // Architecture only: the multi payload of the running version.
    if (desired->architecture != "Multi" || current.multi_architecture) return std::nullopt;
    for (const auto& r : cv.status.available_updates) {
      if (r.version == current.version && r.multi_architecture) target.release = r;
    }
    if (target.release.image.empty()) return std::nullopt;
    target.recommended = true;
    return target;
  }
  std::string image = desired->image.empty() ? ImagesForVersion(cv, desired->version).front() : desired->image;
  if (image == current.image) return std::nullopt;
  target.release.image = image;
  target.release.version = desired->version;
  for (const auto& r : cv.status.available_updates) {
    if (r.image == image) {
      target.release = r;
      target.recommended = true;
      return target;
    }
  }
  for (const auto& u : cv.status.conditional_updates) {
    if (u.release.image != image) continue;
    target.release = u.release;
    for (const auto& c : u.conditions) {
      if (c.type != "Recommended") continue;
      target.recommended = c.status == "True";
      target.not_recommended_reason = c.reason;
      target.not_recommended_message = c.message;
    }
    return target;
  }
  for (const auto& h : cv.status.history) {
    if (h.image == image) {
      target.release.version = h.version;
      target.recommended = true;  // a release this cluster has run
      return target;
    }
  }
  target.not_recommended_reason = "UnknownUpdate";
  target.not_recommended_message =
      fmt::format("{} is not in the available updates of channel {}", image, cv.spec.channel.empty() ? "(none)" : cv.spec.channel);
  return target;
}

std::optional<Condition> UpgradeableCondition(const std::vector<ComponentUpgradeable>& components, const std::string& now) {
  std::vector<const ComponentUpgradeable*> blocking;
  for (const auto& c : components) {
    if (c.upgradeable.type == "Upgradeable" && c.upgradeable.status == "False") blocking.push_back(&c);
  }
  if (blocking.empty()) return std::nullopt;
  // A component's message is its own to write: each is cut to 1 KiB, and at most 20
  // are listed, so that the ClusterVersion stays small whatever components say.
  auto line = [](const ComponentUpgradeable& c) {
    return fmt::format("Cluster operator {} should not be upgraded between minor versions: {}", c.name,
                       Abbreviate(c.upgradeable.message, 1024));
  };
  if (blocking.size() == 1) {
    return Condition{"Upgradeable", "False", Abbreviate(blocking[0]->upgradeable.reason, 256), line(*blocking[0]), now};
  }
  std::string message = "Multiple cluster operators should not be upgraded between minor versions:";
  for (size_t i = 0; i < blocking.size() && i < 20; ++i) message += "\n* " + line(*blocking[i]);
  if (blocking.size() > 20) message += fmt::format("\n* and {} more", blocking.size() - 20);
  return Condition{"Upgradeable", "False", "ClusterOperatorsNotUpgradeable", message, now};
}

}  // namespace cincinnati::agent
