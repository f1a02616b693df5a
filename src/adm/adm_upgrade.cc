#include "adm/adm_upgrade.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <algorithm>

#include "core/json.h"

namespace cincinnati::adm {

using config_api::Condition;
using config_api::ClusterVersionStatus;
using config_api::ConditionalUpdateStatus;
using config_api::DesiredUpdate;
using config_api::Release;
using config_api::UpdateHistoryEntry;
namespace {

constexpr char kForceWarning[] =
    "warning: --force overrides cluster verification of your supplied release image and waives any update "
    "precondition failures. Only use this if you are testing unsigned release images or you are working around a "
    "known bug in the cluster-version operator and you have verified the authenticity of the provided image "
    "yourself.\n";

std::string Indent(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

const Condition* Find(const std::vector<Condition>& conditions, std::string_view type) {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

std::string Digest(const std::string& image) {
  size_t at = image.find('@');
  return at == std::string::npos ? "" : image.substr(at + 1);
}

bool TargetMatch(const Release& target, const std::string& to, const std::string& to_image) {
  if (!to.empty() && target.version == to) return true;
  if (to_image.empty()) return false;
  if (target.image == to_image) return true;
  std::string digest = Digest(to_image);
  return !digest.empty() && Digest(target.image) == digest;
}

bool Newer(const std::string& a, const std::string& b) {
  auto va = Version::Parse(a), vb = Version::Parse(b);
  if (va.ok() != vb.ok()) return va.ok();
  if (!va.ok()) return a > b;
  return *vb < *va;
}

// The client-side guards: an invalid object, a failing cluster, an update under way.
std::string CheckForUpgrade(const ClusterVersion& cv) {
  std::vector<std::string> results;
  const auto& conditions = cv.status.conditions;
  if (const Condition* c = Find(conditions, "Invalid"); c && c->status == "True") {
    results.push_back(fmt::format(
        "the cluster version object is invalid, you must correct the invalid state first:\n\n  Reason: {}\n  Message: {}",
        c->reason, Indent(c->message)));
  }
  if (const Condition* c = Find(conditions, "Failing"); c && c->status == "True") {
    std::string target = !cv.status.desired.version.empty() ? cv.status.desired.version : cv.status.desired.image;
    results.push_back(fmt::format("the cluster is experiencing an error reconciling \"{}\":\n\n  Reason: {}\n  Message: {}",
                                  target, c->reason, Indent(c->message)));
  }
  if (const Condition* c = Find(conditions, "Progressing"); c && c->status == "True") {
    results.push_back(fmt::format("the cluster is already upgrading:\n\n  Reason: {}\n  Message: {}", c->reason,
                                  Indent(c->message)));
  }
  std::string out;
  for (size_t i = 0; i < results.size(); ++i) out += (i ? "\n\n" : "") + results[i];
  return out;
}

// Every member is written, so that the patch replaces the whole request (a merge
// patch removes what is null).
std::string DesiredUpdatePatch(const DesiredUpdate& u) {
  auto text = [](const std::string& v) { return v.empty() ? boost::json::value() : boost::json::value(v); };
  return WriteJson(boost::json::object{
      {"spec", boost::json::object{{"desiredUpdate", boost::json::object{{"architecture", text(u.architecture)},
                                                                          {"force", u.force},
                                                                          {"image", text(u.image)},
                                                                          {"version", text(u.version)}}}}}});
}

// The cluster's conditions as `oc adm upgrade` prints them.
void ReportConditions(const ClusterVersionStatus& s, UpgradeOutcome& r) {
  if (const Condition* c = Find(s.conditions, "Failing")) {
    if (c->status != "False") {
      r.out += fmt::format("{}={}:\n\n  Reason: {}\n  Message: {}\n\n", c->type, c->status, c->reason, Indent(c->message));
    }
  } else {
    r.err += "warning: No current Failing info, see `oc describe clusterversion` for more details.\n";
  }
  if (const Condition* c = Find(s.conditions, "Progressing"); c && !c->message.empty()) {
    r.out += c->status == "True" ? fmt::format("info: An upgrade is in progress. {}\n", c->message) : c->message + "\n";
  } else {
    r.err += "warning: No current Progressing info, see `oc describe clusterversion` for more details.\n";
  }
  r.out += "\n";
  if (const Condition* c = Find(s.conditions, "Upgradeable"); c && c->status == "False") {
    r.out += fmt::format("{}={}\n\n  Reason: {}\n  Message: {}\n\n", c->type, c->status, c->reason, Indent(c->message));
  }
  if (const Condition* c = Find(s.conditions, "ReleaseAccepted"); c && c->status != "True") {
    r.out += fmt::format("ReleaseAccepted={}\n\n  Reason: {}\n  Message: {}\n\n", c->status, c->reason, Indent(c->message));
  }
}

void ReportChannel(const ClusterVersion& cv, UpgradeOutcome& r) {
  if (cv.spec.channel.empty()) return;
  r.out += cv.spec.upstream.empty() ? "Upstream is unset, so the cluster will use an appropriate default.\n"
                                    : fmt::format("Upstream: {}\n", cv.spec.upstream);
  const auto& channels_of_desired = cv.status.desired.channels;
  if (!channels_of_desired.empty()) {
    std::string channels;
    for (size_t i = 0; i < channels_of_desired.size(); ++i) channels += (i ? ", " : "") + channels_of_desired[i];
    r.out += fmt::format("Channel: {} (available channels: {})\n", cv.spec.channel, channels);
  } else {
    r.out += fmt::format("Channel: {}\n", cv.spec.channel);
  }
}

// The recommended updates, newest first, in oc's table; or why there are none.
void ReportRecommended(const ClusterVersionStatus& s, UpgradeOutcome& r) {
  const Condition* retrieved = Find(s.conditions, "RetrievedUpdates");
  if (!s.available_updates.empty()) {
    std::vector<Release> updates = s.available_updates;
    std::stable_sort(updates.begin(), updates.end(), [](const Release& a, const Release& b) { return Newer(a.version, b.version); });
    // oc's tabwriter: the first column at least 14 wide, one space of padding.
    size_t width = std::string("  VERSION").size() + 1;
    for (const auto& u : updates) width = std::max(width, u.version.size() + 3);
    width = std::max<size_t>(width, 14);
    auto row = [&](const std::string& first, const std::string& second) {
      std::string line = first;
      line.resize(width, ' ');
      return line + second + "\n";
    };
    r.out += "\nRecommended updates:\n\n" + row("  VERSION", "IMAGE");
    for (const auto& u : updates) r.out += row("  " + u.version, u.image);
    if (retrieved && retrieved->status == "False") {
      r.err += fmt::format("warning: Cannot refresh available updates:\n  Reason: {}\n  Message: {}\n\n", retrieved->reason,
                           Indent(retrieved->message));
    }
  } else if (retrieved && retrieved->status == "False") {
    r.err += fmt::format("warning: Cannot display available updates:\n  Reason: {}\n  Message: {}\n\n", retrieved->reason,
                         Indent(retrieved->message));
  } else {
    r.out += "No updates available. You may still upgrade to a specific release image with --to-image or wait for new "
             "updates to be available.\n";
  }
}

// The conditional updates that are not recommended: listed with --include-not-recommended,
// else only said to exist.
void ReportNotRecommended(const ClusterVersionStatus& s, const UpgradeOptions& o, UpgradeOutcome& r) {
  std::vector<const ConditionalUpdateStatus*> not_recommended;
  std::string qualifier;
  for (const auto& u : s.conditional_updates) {
    const Condition* c = Find(u.conditions, "Recommended");
    if (!c || c->status == "True") continue;
    not_recommended.push_back(&u);
    if (qualifier.empty() && c->status != "False") qualifier = fmt::format(", or where the recommended status is \"{}\",", c->status);
  }
  std::stable_sort(not_recommended.begin(), not_recommended.end(),
                   [](const auto* a, const auto* b) { return Newer(a->release.version, b->release.version); });
  if (o.include_not_recommended) {
    if (not_recommended.empty()) {
      r.out += "\nNo updates which are not recommended based on your cluster configuration are available.\n";
      return;
    }
    r.out += "\nUpdates with known issues:\n";
    for (const auto* u : not_recommended) {
      const Condition* c = Find(u->conditions, "Recommended");
      std::string message = c->message;
      while (!message.empty() && std::isspace(static_cast<unsigned char>(message.back()))) message.pop_back();
      r.out += fmt::format("\n  Version: {}\n  Image: {}\n  Reason: {}\n  Message: {}\n", u->release.version, u->release.image,
                           c->reason, Indent(message));
    }
  } else if (!not_recommended.empty()) {
    r.out += fmt::format("\nAdditional updates which are not recommended{} for your cluster configuration are available, to "
                         "view those re-run the command with --include-not-recommended.\n",
                         qualifier);
  }
}

void StatusReport(const ClusterVersion& cv, const UpgradeOptions& o, UpgradeOutcome& r) {
  ReportConditions(cv.status, r);
  ReportChannel(cv, r);
  ReportRecommended(cv.status, r);
  ReportNotRecommended(cv.status, o, r);
}

// The search for the requested update among the available ones: what it found, and the
// other targets it could have been (for --to-latest and the error that lists them).
struct TargetSearch {
  std::optional<DesiredUpdate> update;
  std::vector<Release> possible;
  std::map<std::string, const Condition*> not_recommended_by_image;
};

std::string AcceptedRiskWarning(const std::string& version, const Condition& c) {
  return fmt::format("warning: with --allow-not-recommended you have accepted the risks with {} and bypassed {}={} {}: {}\n",
                     version, c.type, c.status, c.reason, c.message);
}

// Among the conditional updates that are not recommended; false when the request names
// one without --allow-not-recommended (the error is in `r`).
bool SearchConditional(const ClusterVersionStatus& s, const UpgradeOptions& o, TargetSearch& t, UpgradeOutcome& r) {
  for (const auto& u : s.conditional_updates) {
    const Condition* c = Find(u.conditions, "Recommended");
    if (!c || c->status == "True") continue;
    if (TargetMatch(u.release, o.to, o.to_image)) {
      if (!o.allow_not_recommended) {
        r.error = fmt::format(
            "the update {} is not one of the recommended updates, but is available as a conditional update. To accept "
            "the {}={} risk and to proceed with update use --allow-not-recommended.\n  Reason: {}\n  Message: {}\n",
            u.release.version, c->type, c->status, c->reason, Indent(c->message));
        return false;
      }
      t.update = DesiredUpdate{u.release.version, u.release.image, false, ""};
      r.err += AcceptedRiskWarning(u.release.version, *c);
      return true;
    }
    if (o.allow_not_recommended) {
      t.possible.push_back(u.release);
      t.not_recommended_by_image[u.release.image] = c;
    }
  }
  return true;
}

// No update was found: why, as an error (or a note when the cluster is at the latest).
void ReportNoTarget(const ClusterVersionStatus& s, const UpgradeOptions& o, const std::vector<Release>& possible,
                    UpgradeOutcome& r) {
  const Condition* c = Find(s.conditions, "RetrievedUpdates");
  std::string next_step = fmt::format("{} to continue with {} update", o.to_image.empty() ? "--to-image" : "--allow-explicit-upgrade",
                                      o.to_latest ? "an" : "the");
  if (c && c->status != "True") {
    r.error = fmt::format("cannot refresh available updates:\n  Reason: {}\n  Message: {}\n\nspecify {}.", c->reason,
                          Indent(c->message), next_step);
  } else if (possible.empty() && o.allow_not_recommended) {
    r.error = fmt::format("no recommended or conditional updates, specify {} or wait for new updates to be available.", next_step);
  } else if (possible.empty() && o.to_latest) {
    r.out += fmt::format("info: Cluster is already at the latest available version {}\n", s.desired.version);
  } else if (possible.empty()) {
    r.error = fmt::format("no recommended updates, specify {} or wait for new updates to be available.", next_step);
  } else {
    std::string versions;
    for (size_t i = 0; i < possible.size(); ++i) versions += (i ? ", " : "") + possible[i].version;
    r.error = fmt::format("the update is not one of the possible targets: {}. specify {}.", versions, next_step);
  }
}

// The update the options ask for, or nullopt (then `r` says why).
std::optional<DesiredUpdate> FindTarget(const ClusterVersionStatus& s, const UpgradeOptions& o, UpgradeOutcome& r) {
  TargetSearch t;
  for (const auto& available : s.available_updates) {
    if (TargetMatch(available, o.to, o.to_image)) {
      t.update = DesiredUpdate{available.version, o.to_image.empty() ? available.image : o.to_image, false, ""};
      break;
    }
    t.possible.push_back(available);
  }
  if (!t.update && !SearchConditional(s, o, t, r)) return std::nullopt;
  if (!t.update && !o.to_image.empty() && o.allow_explicit_upgrade) {
    t.update = DesiredUpdate{"", o.to_image, false, ""};
    r.err += "warning: The requested upgrade image is not one of the available updates. You have used "
             "--allow-explicit-upgrade for the update to proceed anyway\n";
  }
  std::stable_sort(t.possible.begin(), t.possible.end(),
                   [](const Release& a, const Release& b) { return Newer(a.version, b.version); });
  if (o.to_latest && !t.possible.empty()) {
    t.update = DesiredUpdate{t.possible[0].version, t.possible[0].image, false, ""};
    if (auto it = t.not_recommended_by_image.find(t.update->image); it != t.not_recommended_by_image.end()) {
      r.err += AcceptedRiskWarning(t.update->version, *it->second);
    }
  }
  if (!t.update) ReportNoTarget(s, o, t.possible, r);
  return t.update;
}

void RequestUpdate(const ClusterVersion& cv, const UpgradeOptions& o, UpgradeOutcome& r) {
  const auto& s = cv.status;
  if (!o.to.empty() && o.to == s.desired.version) {
    r.out += fmt::format("info: Cluster is already at version {}\n", o.to);
    return;
  }
  if (!o.to_image.empty() && o.to_image == s.desired.image) {
    r.out += fmt::format("info: Cluster is already at {}\n", o.to_image);
    return;
  }
  std::optional<DesiredUpdate> update = FindTarget(s, o, r);
  if (!update) return;
  if (o.force) {
    update->force = true;
    r.err += kForceWarning;
  }
  if (std::string guard = CheckForUpgrade(cv); !guard.empty()) {
    if (!o.allow_upgrade_with_warnings) {
      r.error = guard + "\n\nIf you want to upgrade anyway, use --allow-upgrade-with-warnings.";
      return;
    }
    r.err += fmt::format("warning: --allow-upgrade-with-warnings is bypassing: {}\n", guard);
  }
  r.patch = DesiredUpdatePatch(*update);
  r.after_patch = !update->version.empty() ? fmt::format("Requested update to {}\n", update->version)
                                           : fmt::format("Requested update to release image {}\n", update->image);
}

}  // namespace

std::string CheckUpgradeOptions(const UpgradeOptions& o) {
  if (o.clear && (!o.to_image.empty() || !o.to.empty() || o.to_latest || o.to_multi_arch)) {
    return "--clear may not be specified with any other flags";
  }
  if (o.to_multi_arch && (!o.to.empty() || !o.to_image.empty() || o.to_latest)) {
    return "--to-multi-arch may not be used with --to, --to-image, or --to-latest";
  }
  if (!o.to.empty() && !o.to_image.empty()) return "only one of --to or --to-image may be provided";
  if (!o.to.empty()) {
    auto v = Version::Parse(o.to);
    if (!v.ok()) {
      return fmt::format("--to must be a semantic version (e.g. 4.0.1 or 4.1.0-nightly-20181104): {}", v.status().message());
    }
  }
  if (!o.to_image.empty()) {
    size_t at = o.to_image.find('@');
    std::string name = o.to_image.substr(0, at);
    size_t slash = name.rfind('/');
    if (slash == std::string::npos) {
      return "--to-image must be a valid image pull spec: no registry or repository specified";
    }
    bool tagged = name.find(':', slash) != std::string::npos;
    if (at == std::string::npos && !tagged) return "--to-image must be a valid image pull spec: no tag or digest specified";
    if (at == std::string::npos && tagged && !o.force) {
      return "--to-image must be a by-digest pull spec, unless --force is also set, because release images that are not "
             "accessed via digest cannot be verified by the cluster.  Even when --force is set, using tags is not "
             "recommended, although we continue to allow it for backwards compatibility";
    }
  }
  return "";
}

UpgradeOutcome PlanUpgrade(const ClusterVersion& cv, const UpgradeOptions& o) {
  UpgradeOutcome r;
  if (!o.to_image.empty() && o.to_image.find('@') == std::string::npos && o.force) {
    r.err += "warning: Using by-tag pull specs is dangerous, and while we still allow it in combination with --force for "
             "backward compatibility, it would be much safer to pass a by-digest pull spec instead\n";
  }
  if (o.clear) {
    if (!cv.spec.desired_update) {
      r.out += "info: No update in progress\n";
      return r;
    }
    const DesiredUpdate& original = *cv.spec.desired_update;
    r.patch = "{\"spec\":{\"desiredUpdate\":null}}";
    bool equivalent = (!original.image.empty() && original.image == cv.status.desired.image) ||
                      (original.image.empty() && !original.version.empty() && original.version == cv.status.desired.version);
    std::string what = !original.version.empty() ? original.version : !original.image.empty() ? original.image : "<unknown>";
    r.after_patch = equivalent ? fmt::format("Cleared the update field, still at {}\n", cv.status.desired.version)
                               : fmt::format("Cancelled requested upgrade to {}\n", what);
    return r;
  }
  if (o.to_multi_arch) {
    if (cv.spec.desired_update && cv.spec.desired_update->architecture == "Multi") {
      r.error = "info: Update to multi cluster architecture has already been requested";
      return r;
    }
    if (std::string guard = CheckForUpgrade(cv); !guard.empty()) {
      if (!o.allow_upgrade_with_warnings) {
        r.error = guard + "\n\nIf you want to upgrade anyway, use --allow-upgrade-with-warnings.";
        return r;
      }
      r.err += fmt::format("warning: --allow-upgrade-with-warnings is bypassing: {}\n", guard);
    }
    DesiredUpdate update{cv.status.desired.version, "", o.force, "Multi"};
    if (o.force) r.err += kForceWarning;
    r.patch = DesiredUpdatePatch(update);
    r.after_patch = "Requested update to multi cluster architecture\n";
    return r;
  }
  if (o.to_latest || !o.to.empty() || !o.to_image.empty()) {
    RequestUpdate(cv, o, r);
    return r;
  }
  StatusReport(cv, o, r);
  return r;
}

UpgradeOutcome PlanChannelChange(const ClusterVersion& cv, const ChannelOptions& o) {
  UpgradeOutcome r;
  const std::string& current = cv.spec.channel;
  if (o.channel == current) {
    r.out += current.empty() ? "info: Cluster channel is already clear (no change)\n"
                             : fmt::format("info: Cluster is already in {} (no change)\n", current);
    return r;
  }
  const auto& channels = cv.status.desired.channels;
  std::string list;
  for (size_t i = 0; i < channels.size(); ++i) list += (i ? ", " : "") + channels[i];
  if (!channels.empty()) {
    bool found = std::find(channels.begin(), channels.end(), o.channel) != channels.end();
    bool known = std::find(channels.begin(), channels.end(), current) != channels.end();
    if (o.channel.empty()) {
      if (known && !o.allow_explicit_channel) {
        r.error = fmt::format("You are requesting to clear the update channel. The current channel \"{}\" is one of the "
                              "available channels, you must pass --allow-explicit-channel to continue\n",
                              current);
        return r;
      }
    } else if (!found) {
      if (!o.allow_explicit_channel) {
        r.error = fmt::format("the requested channel \"{}\" is not one of the available channels ({}), you must pass "
                              "--allow-explicit-channel to continue\n",
                              o.channel, list);
        return r;
      }
      r.err += fmt::format("warning: The requested channel \"{}\" is not one of the available channels ({}). You have used "
                           "--allow-explicit-channel to proceed anyway. Setting the update channel to \"{}\".\n",
                           o.channel, list, o.channel);
    }
  } else if (!o.channel.empty()) {
    r.err += fmt::format("warning: No channels known to be compatible with the current version \"{}\"; unable to validate "
                         "\"{}\". Setting the update channel to \"{}\" anyway.\n",
                         cv.status.desired.version, o.channel, o.channel);
  }
  if (o.channel.empty()) {
    r.err += fmt::format("warning: Clearing channel \"{}\"; cluster will no longer request available update recommendations.\n",
                         current);
  }
  r.patch = WriteJson(boost::json::object{
      {"spec", boost::json::object{{"channel", o.channel.empty() ? boost::json::value() : boost::json::value(o.channel)}}}});
  return r;
}

}  // namespace cincinnati::adm
