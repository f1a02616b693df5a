// `cincinnati adm upgrade` decisions and output, compared with what `oc adm upgrade`
// prints for the same ClusterVersion.
#include <gtest/gtest.h>

#include "adm/adm_upgrade.h"

namespace cincinnati::adm {
namespace {

using config_api::DesiredUpdate;
using config_api::FromJson;

constexpr char kImage130[] = "quay.io/ocp@sha256:130";
constexpr char kImage132[] = "quay.io/ocp@sha256:132";

ClusterVersion Cluster() {
  ClusterVersion cv;
  cv.spec.cluster_id = "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a";
  cv.spec.channel = "stable-4.13";
  cv.spec.upstream = "http://127.0.0.1:8081/api/upgrades_info/graph";
  cv.status.desired = {"4.12.3", "quay.io/ocp@sha256:3", "", {"fast-4.13", "stable-4.13"}, false};
  cv.status.available_updates = {{"4.12.4", "quay.io/ocp@sha256:4", "", {}, false}, {"4.13.0", kImage130, "", {}, false}};
  cv.status.conditional_updates.push_back(
      {{"4.13.2", kImage132, "", {}, false},
       {},
       {{"Recommended", "False", "ExampleIngressRisk", "Ingress may drop connections. https://issues.example.com/1", "t"}}});
  cv.status.conditions = {{"Available", "True", "", "Done applying 4.12.3", "t"},
                          {"Failing", "False", "", "", "t"},
                          {"Progressing", "False", "", "Cluster version is 4.12.3", "t"},
                          {"RetrievedUpdates", "True", "", "", "t"}};
  return cv;
}

TEST(AdmUpgradeTest, StatusLooksLikeOcs) {
  UpgradeOutcome r = PlanUpgrade(Cluster(), {});
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.err, "");
  EXPECT_FALSE(r.patch.has_value());
  EXPECT_EQ(r.out,
            "Cluster version is 4.12.3\n"
            "\n"
            "Upstream: http://127.0.0.1:8081/api/upgrades_info/graph\n"
            "Channel: stable-4.13 (available channels: fast-4.13, stable-4.13)\n"
            "\n"
            "Recommended updates:\n"
            "\n"
            "  VERSION     IMAGE\n"
            "  4.13.0      quay.io/ocp@sha256:130\n"
            "  4.12.4      quay.io/ocp@sha256:4\n"
            "\n"
            "Additional updates which are not recommended for your cluster configuration are available, to view those "
            "re-run the command with --include-not-recommended.\n");

  UpgradeOptions include;
  include.include_not_recommended = true;
  r = PlanUpgrade(Cluster(), include);
  EXPECT_NE(r.out.find("\nUpdates with known issues:\n\n  Version: 4.13.2\n  Image: quay.io/ocp@sha256:132\n"
                       "  Reason: ExampleIngressRisk\n  Message: Ingress may drop connections. https://issues.example.com/1\n"),
            std::string::npos)
      << r.out;
}

TEST(AdmUpgradeTest, StatusWhenUpdatesCannotBeRetrieved) {
  ClusterVersion cv = Cluster();
  cv.status.available_updates.clear();
  cv.status.conditional_updates.clear();
  cv.status.conditions[3] = {"RetrievedUpdates", "False", "VersionNotFound",
                             "Unable to retrieve available updates: currently reconciling cluster version 4.12.3 not found "
                             "in the \"stable-4.13\" channel",
                             "t"};
  UpgradeOutcome r = PlanUpgrade(cv, {});
  EXPECT_EQ(r.err,
            "warning: Cannot display available updates:\n  Reason: VersionNotFound\n  Message: Unable to retrieve "
            "available updates: currently reconciling cluster version 4.12.3 not found in the \"stable-4.13\" channel\n\n");
  cv.status.conditions[3] = {"RetrievedUpdates", "True", "", "", "t"};
  r = PlanUpgrade(cv, {});
  EXPECT_NE(r.out.find("No updates available. You may still upgrade to a specific release image with --to-image"),
            std::string::npos);
}

TEST(AdmUpgradeTest, ToAVersion) {
  UpgradeOptions to;
  to.to = "4.13.0";
  UpgradeOutcome r = PlanUpgrade(Cluster(), to);
  ASSERT_TRUE(r.patch.has_value()) << r.error;
  EXPECT_EQ(*r.patch,
            R"({"spec":{"desiredUpdate":{"architecture":null,"force":false,"image":"quay.io/ocp@sha256:130","version":"4.13.0"}}})");
  EXPECT_EQ(r.after_patch, "Requested update to 4.13.0\n");

  to.to = "4.12.3";
  EXPECT_EQ(PlanUpgrade(Cluster(), to).out, "info: Cluster is already at version 4.12.3\n");

  to.to = "4.99.0";
  r = PlanUpgrade(Cluster(), to);
  EXPECT_EQ(r.error, "the update is not one of the possible targets: 4.13.0, 4.12.4. specify --to-image to continue with the update.");
}

TEST(AdmUpgradeTest, NotRecommendedNeedsConsent) {
  UpgradeOptions to;
  to.to = "4.13.2";
  UpgradeOutcome r = PlanUpgrade(Cluster(), to);
  EXPECT_FALSE(r.patch.has_value());
  EXPECT_EQ(r.error,
            "the update 4.13.2 is not one of the recommended updates, but is available as a conditional update. To accept "
            "the Recommended=False risk and to proceed with update use --allow-not-recommended.\n"
            "  Reason: ExampleIngressRisk\n  Message: Ingress may drop connections. https://issues.example.com/1\n");
  to.allow_not_recommended = true;
  r = PlanUpgrade(Cluster(), to);
  ASSERT_TRUE(r.patch.has_value());
  EXPECT_NE(r.patch->find(kImage132), std::string::npos);
  EXPECT_EQ(r.err.rfind("warning: with --allow-not-recommended you have accepted the risks with 4.13.2 and bypassed "
                        "Recommended=False ExampleIngressRisk: ",
                        0),
            0u);
}

TEST(AdmUpgradeTest, ToAnImage) {
  UpgradeOptions o;
  o.to_image = "quay.io/other@sha256:130";  // same digest as 4.13.0, another repository: a match
  UpgradeOutcome r = PlanUpgrade(Cluster(), o);
  ASSERT_TRUE(r.patch.has_value()) << r.error;
  EXPECT_NE(r.patch->find("\"image\":\"quay.io/other@sha256:130\",\"version\":\"4.13.0\""), std::string::npos) << *r.patch;

  o.to_image = "quay.io/ocp@sha256:999";
  r = PlanUpgrade(Cluster(), o);
  EXPECT_NE(r.error.find("specify --allow-explicit-upgrade to continue with the update."), std::string::npos) << r.error;
  o.allow_explicit_upgrade = true;
  r = PlanUpgrade(Cluster(), o);
  ASSERT_TRUE(r.patch.has_value());
  EXPECT_EQ(r.after_patch, "Requested update to release image quay.io/ocp@sha256:999\n");
  EXPECT_NE(r.err.find("You have used --allow-explicit-upgrade"), std::string::npos);

  EXPECT_EQ(CheckUpgradeOptions({.to_image = "4.0.1"}),
            "--to-image must be a valid image pull spec: no registry or repository specified");
  EXPECT_NE(CheckUpgradeOptions({.to_image = "quay.io/ocp:4.13.0"}).find("must be a by-digest pull spec"), std::string::npos);
  EXPECT_EQ(CheckUpgradeOptions({.to_image = "quay.io/ocp:4.13.0", .force = true}), "");
  EXPECT_EQ(CheckUpgradeOptions({.to = "4.13", .to_image = ""}).rfind("--to must be a semantic version", 0), 0u);
  EXPECT_EQ(CheckUpgradeOptions({.to = "4.13.0", .to_image = "quay.io/ocp@sha256:1"}), "only one of --to or --to-image may be provided");
}

TEST(AdmUpgradeTest, ToLatestAndGuards) {
  UpgradeOptions latest;
  latest.to_latest = true;
  UpgradeOutcome r = PlanUpgrade(Cluster(), latest);
  ASSERT_TRUE(r.patch.has_value());
  EXPECT_EQ(r.after_patch, "Requested update to 4.13.0\n");

  ClusterVersion invalid = Cluster();
  invalid.status.conditions.push_back({"Invalid", "True", "InvalidClusterVersion", "The cluster version is invalid: x", "t"});
  r = PlanUpgrade(invalid, latest);
  EXPECT_EQ(r.error,
            "the cluster version object is invalid, you must correct the invalid state first:\n\n"
            "  Reason: InvalidClusterVersion\n  Message: The cluster version is invalid: x\n\n"
            "If you want to upgrade anyway, use --allow-upgrade-with-warnings.");
  latest.allow_upgrade_with_warnings = true;
  EXPECT_TRUE(PlanUpgrade(invalid, latest).patch.has_value());
}

TEST(AdmUpgradeTest, ClearAndChannel) {
  ClusterVersion cv = Cluster();
  EXPECT_EQ(PlanUpgrade(cv, {.clear = true}).out, "info: No update in progress\n");
  cv.spec.desired_update = DesiredUpdate{"4.13.0", kImage130, false, ""};
  UpgradeOutcome r = PlanUpgrade(cv, {.clear = true});
  EXPECT_EQ(*r.patch, R"({"spec":{"desiredUpdate":null}})");
  EXPECT_EQ(r.after_patch, "Cancelled requested upgrade to 4.13.0\n");

  r = PlanChannelChange(Cluster(), {"fast-4.13", false});
  EXPECT_EQ(*r.patch, R"({"spec":{"channel":"fast-4.13"}})");
  r = PlanChannelChange(Cluster(), {"eus-4.14", false});
  EXPECT_EQ(r.error,
            "the requested channel \"eus-4.14\" is not one of the available channels (fast-4.13, stable-4.13), you must "
            "pass --allow-explicit-channel to continue\n");
  EXPECT_TRUE(PlanChannelChange(Cluster(), {"eus-4.14", true}).patch.has_value());
  EXPECT_EQ(PlanChannelChange(Cluster(), {"stable-4.13", false}).out, "info: Cluster is already in stable-4.13 (no change)\n");
  EXPECT_NE(PlanChannelChange(Cluster(), {"", false}).error.find("You are requesting to clear the update channel."),
            std::string::npos);
}

}  // namespace
}  // namespace cincinnati::adm
