// The upgrade operator end to end for a fleet (the fixture: operator_e2e_fixture.h): the
// cap on parallel upgrades, waves, and a pause after failures.
#include <gtest/gtest.h>

#include "operator_e2e_fixture.h"

namespace cincinnati::upgrade::e2e {
namespace {
using kube::TextOf;
using kube::BoolOf;
using kube::ItemsOf;

// A fleet of three with a cap of one upgrade at a time and waves canary, main: no two
// clusters upgrade at once and the canary goes first.
TEST_F(OperatorE2ETest, TheFleetCapAndWavesOrderTheUpgrades) {
  for (const auto& [name, wave] : std::vector<std::pair<std::string, std::string>>{{"main-a", "main"}, {"canary", "canary"}, {"main-b", "main"}}) {
    AddCluster(name).wave = wave;
  }
  for (auto& c : clusters_) WaitUntilOffered(*c);
  for (auto& c : clusters_) WriteUpgradeConfig(c->name, "4.1.1", std::chrono::system_clock::now());
  StartOperator("fleet: {maxParallel: 1, waveLabel: wave, waves: [canary, main]}\n");
  std::vector<std::string> order;
  int most_at_once = 0;
  ASSERT_TRUE(WaitFor([&] {
    JsonValue list = Json(Get(operator_->url(kConfigs)).body);
    int upgrading = 0, upgraded = 0;
    for (const auto& item : ItemsOf(At(list, {"items"}))) {
      const std::string name = TextOf(At(item, {"metadata", "labels", "cluster"}));
      const JsonValue& history = At(item, {"status", "history"});
      const std::string phase = history.is_array() && !ItemsOf(history).empty() ? TextOf(At(ItemsOf(history)[0], {"phase"})) : "";
      if (phase == "Upgrading" || phase == "Upgraded") {
        if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
      }
      upgrading += phase == "Upgrading";
      upgraded += phase == "Upgraded";
    }
    most_at_once = std::max(most_at_once, upgrading);
    return upgraded == 3;
  }, 150s)) << kube::WriteJson(Json(Get(operator_->url(kConfigs)).body), 2) << operator_->log();
  EXPECT_EQ(most_at_once, 1);
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], "canary");
}

// Two failed upgrades to one version pause the rest of the fleet's upgrades to it, until
// an administrator resumes.
TEST_F(OperatorE2ETest, TwoFailuresPauseTheRestUntilResumed) {
  for (const char* name : {"late-1", "late-2", "on-time"}) AddCluster(name);
  for (auto& c : clusters_) WaitUntilOffered(*c);
  WriteUpgradeConfig("late-1", "4.1.1", std::chrono::system_clock::now() - 3h);
  WriteUpgradeConfig("late-2", "4.1.1", std::chrono::system_clock::now() - 3h);
  StartOperator("fleet: {failureThreshold: 2}\n");
  ASSERT_TRUE(WaitFor([&] { return Phase("late-1") == "Failed" && Phase("late-2") == "Failed"; })) << operator_->log();
  ASSERT_TRUE(WaitFor([&] { return BoolOf(At(Json(Get(operator_->url("/apis/upgrade.cincinnati.openshift.io/v1/fleet")).body), {"paused"})); }))
      << operator_->log();
  WriteUpgradeConfig("on-time", "4.1.1", std::chrono::system_clock::now());
  ASSERT_TRUE(WaitFor([&] {
    const JsonValue config = Config("on-time");
    return TextOf(At(config, {"metadata", "annotations", "upgrade.cincinnati.openshift.io/waiting-for"})).find("the fleet is paused") == 0;
  })) << kube::WriteJson(Config("on-time"), 2);
  WaitForPasses("on-time", 2);
  EXPECT_EQ(Phase("on-time"), "Pending");
  // `upgrades list` says why a cluster waits (the fleet's pause first), and lists
  // a cluster whose UpgradeConfig file cannot be read; `status` says why it is missing.
  WriteFile(configs_ / "mistyped.yaml",
            "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nspec:\n  type: OSD\n  upgradAt: \"2026-01-01T00:00:00Z\"\n");
  testing::ProcessResult listed;
  ASSERT_TRUE(WaitFor([&] {
    listed = testing::RunCincinnati("upgrades list --operator " + operator_->url(""));
    return listed.out.find("\nmistyped ") != std::string::npos;
  })) << listed.out << listed.err;
  EXPECT_EQ(listed.out.rfind("The fleet is paused: ", 0), 0u) << listed.out;
  auto row = [&](const std::string& name) {
    const size_t at = listed.out.find("\n" + name + " ");
    return at == std::string::npos ? std::string() : listed.out.substr(at + 1, listed.out.find('\n', at + 1) - at - 1);
  };
  EXPECT_NE(row("on-time").find("the fleet is paused"), std::string::npos) << listed.out;
  EXPECT_NE(row("mistyped").find("Unreadable"), std::string::npos) << listed.out;
  EXPECT_NE(row("mistyped").find("upgradAt"), std::string::npos) << listed.out;
  auto missing = testing::RunCincinnati("upgrades status mistyped --operator " + operator_->url(""));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("not found: its UpgradeConfig cannot be read: "), std::string::npos) << missing.err;
  std::filesystem::remove(configs_ / "mistyped.yaml");
  auto resumed = testing::RunCincinnati("upgrades resume --operator " + operator_->url(""));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(resumed.out, "running: upgrades start when they are due\n");
  ASSERT_TRUE(WaitFor([&] { return Phase("on-time") == "Upgraded"; }, 90s)) << kube::WriteJson(Config("on-time"), 2) << operator_->log();
}

}  // namespace
}  // namespace cincinnati::upgrade::e2e
