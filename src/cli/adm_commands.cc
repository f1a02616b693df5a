// `cincinnati adm upgrade`: the administrator's view of one cluster's agent, with the
// behaviour and output of `oc adm upgrade` (see agent/adm_upgrade.h).
#include <fmt/format.h>

#include <iostream>

#include "adm/adm_upgrade.h"
#include "commands.h"
#include "core/strings.h"
#include "http/client.h"
#include "kube/api_access.h"
#include "kube/json_value.h"

namespace cincinnati::cli {
namespace {
using kube::FindMember;
using kube::TextOf;

constexpr char kCvPath[] = "/apis/config.openshift.io/v1/clusterversions/version";

struct AdmArgs {
  std::string agent = "http://127.0.0.1:9099";
  std::string token_file;
  adm::UpgradeOptions upgrade;
  adm::ChannelOptions channel;
};

std::vector<std::string> Headers(const AdmArgs& a) {
  std::vector<std::string> headers = {"Accept: application/json"};
  if (!a.token_file.empty()) {
    auto token = kube::ReadTokenFile(a.token_file, "--token-file");
    if (token.ok()) {
      headers.push_back("Authorization: Bearer " + *token);
    } else {
      std::cerr << "warning: " << token.status().message() << " (asking without a token)\n";
    }
  }
  return headers;
}

// The message of a Kubernetes Status answer, else the body.
std::string ApiMessage(const http::Result& r) {
  auto doc = kube::ParseJson(r.body);
  if (doc.ok() && FindMember(*doc, "message") && FindMember(*doc, "message")->is_string()) return TextOf(*FindMember(*doc, "message"));
  return fmt::format("HTTP {}: {}", r.status, std::string(TrimWhitespace(r.body)));
}

Result<config_api::ClusterVersion> FetchClusterVersion(const AdmArgs& a) {
  http::RequestOptions options;
  options.headers = Headers(a);
  options.timeout = std::chrono::seconds(30);
  http::Result r = http::Request(a.agent + kCvPath, options);
  if (!r.error.empty()) {
    return Status::IoError(fmt::format("cannot reach the agent at {}: {}; start one with `cincinnati agent` or pass "
                                       "--agent URL",
                                       a.agent, r.error));
  }
  if (r.status == 404) {
    return Status::NotFound("No cluster version information available - you must be connected to an agent's API to "
                            "fetch the current version");
  }
  if (r.status != 200) return Status::IoError(ApiMessage(r));
  auto doc = kube::ParseJson(r.body);
  if (!doc.ok()) return doc.status().WithContext("the agent's ClusterVersion");
  return config_api::FromJson(*doc);
}

Status SendPatch(const AdmArgs& a, const std::string& patch, std::string_view failure) {
  http::RequestOptions options;
  options.method = "PATCH";
  options.body = patch;
  options.headers = Headers(a);
  options.headers.push_back("Content-Type: application/merge-patch+json");
  options.timeout = std::chrono::seconds(30);
  http::Result r = http::Request(a.agent + kCvPath, options);
  if (!r.error.empty()) return Status::IoError(fmt::format("{}: {}", failure, r.error));
  if (r.status != 200) return Status::InvalidArgument(fmt::format("{}: {}", failure, ApiMessage(r)));
  return Status::OK();
}

int Finish(const AdmArgs& a, const adm::UpgradeOutcome& outcome, std::string_view failure) {
  std::cerr << outcome.err;
  std::cout << outcome.out;
  if (!outcome.error.empty()) {
    std::cerr << "error: " << outcome.error << '\n';
    return 1;
  }
  if (outcome.patch) {
    Status s = SendPatch(a, *outcome.patch, failure);
    if (!s.ok()) {
      std::cerr << "error: " << s.message() << '\n';
      return 1;
    }
    std::cout << outcome.after_patch;
  }
  return 0;
}

}  // namespace

void RegisterAdmCommands(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<AdmArgs>();
  CLI::App* adm = app.add_subcommand("adm", "Administer a cluster through its agent (as `oc adm` does)");
  adm->require_subcommand(1);
  CLI::App* up = adm->add_subcommand(
      "upgrade",
      "Show a cluster's version, its recommended updates and why others are not recommended, or request an update "
      "(--to VERSION, --to-image PULLSPEC, --to-latest), as `oc adm upgrade` does");
  for (CLI::App* cmd : {up}) {
    cmd->add_option("--agent", a->agent, "The agent's API")->type_name("URL")->capture_default_str();
    cmd->add_option("--token-file", a->token_file, "Bearer token for the agent's API")->type_name("PATH");
  }
  auto& o = a->upgrade;
  up->add_option("--to", o.to, "Specify the version to upgrade to. The version must be on the list of available updates.")
      ->type_name("VERSION");
  up->add_option("--to-image", o.to_image, "Provide a release image to upgrade to.")->type_name("PULLSPEC");
  up->add_flag("--to-latest", o.to_latest, "Use the latest (highest Semantic Version) available version.");
  up->add_flag("--to-multi-arch", o.to_multi_arch, "Upgrade current version to multi architecture.");
  up->add_flag("--clear", o.clear, "If an upgrade has been requested but not yet downloaded, cancel the update.");
  up->add_flag("--force", o.force,
               "Upgrade regardless of cluster-side guard failures, such as release verification or upgradeable "
               "conditions.");
  up->add_flag("--allow-explicit-upgrade", o.allow_explicit_upgrade,
               "Upgrade even if the upgrade target is not listed in the available versions list.");
  up->add_flag("--allow-upgrade-with-warnings", o.allow_upgrade_with_warnings,
               "Upgrade regardless of client-side guard failures, such as upgrades in progress or failing clusters.");
  up->add_flag("--include-not-recommended", o.include_not_recommended,
               "Display additional updates which are not recommended based on your cluster configuration.");
  up->add_flag("--allow-not-recommended", o.allow_not_recommended,
               "Allows upgrade to a version when it is supported but not recommended for updates.");
  up->callback([a, &exit_code, up] {
    if (up->got_subcommand("channel")) return;
    if (std::string problem = adm::CheckUpgradeOptions(a->upgrade); !problem.empty()) {
      std::cerr << "error: " << problem << '\n';
      exit_code = 1;
      return;
    }
    auto cv = FetchClusterVersion(*a);
    if (!cv.ok()) {
      std::cerr << "error: " << cv.status().message() << '\n';
      exit_code = 1;
      return;
    }
    exit_code = Finish(*a, adm::PlanUpgrade(*cv, a->upgrade),
                       a->upgrade.clear ? "Unable to cancel current rollout" : "Unable to upgrade");
  });

  CLI::App* ch = up->add_subcommand("channel", "Set or clear the update channel (as `oc adm upgrade channel`)");
  ch->fallthrough();  // --agent and --token-file belong to `upgrade` and may follow `channel`
  ch->add_option("channel", a->channel.channel, "The channel; empty or absent clears it")->type_name("NAME");
  ch->add_flag("--allow-explicit-channel", a->channel.allow_explicit_channel,
               "Change the channel, even if there is a list of acceptable channels and the desired channel is not in "
               "that list.");
  ch->callback([a, &exit_code] {
    auto cv = FetchClusterVersion(*a);
    if (!cv.ok()) {
      std::cerr << "error: " << cv.status().message() << '\n';
      exit_code = 1;
      return;
    }
    exit_code = Finish(*a, adm::PlanChannelChange(*cv, a->channel), "unable to set channel");
  });
}

}  // namespace cincinnati::cli
