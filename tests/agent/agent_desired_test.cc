// spec.desiredUpdate checked and resolved as the cluster-version operator does, and
// Upgradeable from the components.
#include <gtest/gtest.h>

#include "agent/desired_update.h"

namespace cincinnati::agent {
namespace {

ClusterVersion AtVersion4123() {
  ClusterVersion cv;
  cv.spec.cluster_id = "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a";
  cv.spec.channel = "stable-4.13";
  cv.status.desired = {"4.12.3", "r@sha256:3", "", {}, false};
  cv.status.history.push_back({"Completed", "t0", "t1", "4.12.3", "r@sha256:3", false, ""});
  cv.status.history.push_back({"Completed", "t-2", "t-1", "4.12.2", "r@sha256:2", false, ""});
  cv.status.available_updates = {{"4.13.0", "r@sha256:130", "", {}, false}, {"4.12.4", "r@sha256:4", "", {}, false}};
  cv.status.conditional_updates.push_back(
      {{"4.13.2", "r@sha256:132", "", {}, false}, {}, {{"Recommended", "False", "ExampleIngressRisk", "m u", "t"}}});
  return cv;
}

TEST(DesiredUpdateTest, ByVersionMustBeAnAvailableUpdateOrAPreviousVersion) {
  ClusterVersion cv = AtVersion4123();
  cv.spec.desired_update = DesiredUpdate{"4.13.0", "", false, ""};
  EXPECT_TRUE(DesiredUpdateErrors(cv).empty());
  auto target = ResolveDesiredUpdate(cv);
  ASSERT_TRUE(target.has_value());
  EXPECT_EQ(target->release.image, "r@sha256:130");
  EXPECT_TRUE(target->recommended);

  // A conditional update needs its image: by version alone it is refused.
  cv.spec.desired_update = DesiredUpdate{"4.13.2", "", false, ""};
  auto errors = DesiredUpdateErrors(cv);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "spec.desiredUpdate.version: Invalid value: \"4.13.2\": when image is empty the update must be a previous "
            "version or an available update");
  EXPECT_FALSE(ResolveDesiredUpdate(cv).has_value());

  // A version of the history resolves to its image (a rollback, judged later).
  cv.spec.desired_update = DesiredUpdate{"4.12.2", "", false, ""};
  EXPECT_TRUE(DesiredUpdateErrors(cv).empty());
  EXPECT_EQ(ResolveDesiredUpdate(cv)->release.image, "r@sha256:2");

  // Two payloads for one version.
  cv.status.available_updates.push_back({"4.13.0", "other@sha256:130", "", {}, false});
  cv.spec.desired_update = DesiredUpdate{"4.13.0", "", false, ""};
  errors = DesiredUpdateErrors(cv);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("specify the exact image"), std::string::npos);
}

TEST(DesiredUpdateTest, ByImageTakesWhatIsGivenAndSaysWhetherItIsRecommended) {
  ClusterVersion cv = AtVersion4123();
  cv.spec.desired_update = DesiredUpdate{"", "r@sha256:132", false, ""};
  auto target = ResolveDesiredUpdate(cv);
  ASSERT_TRUE(target.has_value());
  EXPECT_EQ(target->release.version, "4.13.2");
  EXPECT_FALSE(target->recommended);
  EXPECT_EQ(target->not_recommended_reason, "ExampleIngressRisk");

  cv.spec.desired_update = DesiredUpdate{"4.99.0", "elsewhere@sha256:9", false, ""};
  target = ResolveDesiredUpdate(cv);
  ASSERT_TRUE(target.has_value());
  EXPECT_EQ(target->release.version, "4.99.0");
  EXPECT_EQ(target->not_recommended_reason, "UnknownUpdate");

  // The current release is no update.
  cv.spec.desired_update = DesiredUpdate{"", "r@sha256:3", false, ""};
  EXPECT_FALSE(ResolveDesiredUpdate(cv).has_value());
  cv.spec.desired_update.reset();
  EXPECT_FALSE(ResolveDesiredUpdate(cv).has_value());
}

TEST(UpgradeableTest, FromTheComponentsThatBlockMinorUpdates) {
  EXPECT_FALSE(UpgradeableCondition({{"dns", {"Upgradeable", "True", "", "", ""}}}, "now").has_value());
  auto one = UpgradeableCondition({{"dns", {"Upgradeable", "True", "", "", ""}},
                                   {"network", {"Upgradeable", "False", "OpenShiftSDNConfigured", "Migrate first.", ""}}},
                                  "now");
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->status, "False");
  EXPECT_EQ(one->reason, "OpenShiftSDNConfigured");
  EXPECT_EQ(one->message, "Cluster operator network should not be upgraded between minor versions: Migrate first.");
  auto two = UpgradeableCondition({{"a", {"Upgradeable", "False", "X", "x", ""}}, {"b", {"Upgradeable", "False", "Y", "y", ""}}},
                                  "now");
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->reason, "ClusterOperatorsNotUpgradeable");
  EXPECT_EQ(two->message,
            "Multiple cluster operators should not be upgraded between minor versions:\n"
            "* Cluster operator a should not be upgraded between minor versions: x\n"
            "* Cluster operator b should not be upgraded between minor versions: y");
}

}  // namespace
}  // namespace cincinnati::agent
