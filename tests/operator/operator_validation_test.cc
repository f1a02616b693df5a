// Validation of the desired release (every rule of the MUO's validation), the
// scheduler, and the helpers every step shares (current and preceding version,
// commenced, channel inference).
#include <gtest/gtest.h>

#include <map>

#include "operator/release_resolver.h"
#include "operator/scheduler.h"
#include "operator/validation.h"
#include "registry_util.h"
#include "service_util.h"

namespace cincinnati::upgrade {
namespace {

using namespace std::chrono_literals;

// The versions images carry, as a registry would answer (the real registry is below).
class TableResolver : public ReleaseResolver {
 public:
  std::map<std::string, std::string> versions;
  Result<std::string> VersionOf(const std::string& image) override {
    auto it = versions.find(image);
    if (it == versions.end()) return Status::NotFound("manifest unknown");
    return it->second;
  }
};

class TableGraph : public GraphClient {
 public:
  std::map<std::string, std::vector<std::string>> targets;  // channel -> versions
  std::string asked_version;
  Result<std::vector<std::string>> Targets(const AgentSnapshot&, const std::string& channel, const std::string& version) override {
    asked_version = version;
    if (channel == "broken") return Status::IoError("http://127.0.0.1:1/graph: connection refused");
    return targets[channel];
  }
};

AgentSnapshot Agent413() {
  AgentSnapshot a;
  a.cluster_id = "0f3ae0f0-5f0e-4d4b-9c0e-1e2f3a4b5c6d";
  a.channel = "stable-4.13";
  a.status_desired = {"4.13.5", "quay.io/ocp@sha256:5"};
  a.history = {{"Completed", "4.13.5", "quay.io/ocp@sha256:5", "2024-06-01T00:00:00Z", "2024-06-01T01:00:00Z"},
               {"Completed", "4.13.1", "quay.io/ocp@sha256:1", "2024-05-01T00:00:00Z", "2024-05-01T01:00:00Z"}};
  a.available_updates = {{"4.13.6", "quay.io/ocp@sha256:6"}};
  a.conditional_updates = {{"4.13.7", "quay.io/ocp@sha256:7"}};
  return a;
}

UpgradeConfig Config(const std::string& version, const std::string& channel = "stable-4.13", const std::string& image = "") {
  UpgradeConfig c;
  c.cluster = "prod-1";
  c.spec.upgrade_at = "2024-06-20T12:00:00Z";
  c.spec.desired = {version, channel, image};
  return c;
}

TEST(ValidationTest, EveryRuleOfTheTableWithTheReferenceMessages) {
  TableResolver resolver;
  resolver.versions["quay.io/openshift-release-dev/ocp-release@sha256:abc"] = "4.13.6";
  TableGraph graph;
  graph.targets["stable-4.14"] = {"4.14.2"};
  ValidationPorts ports{&resolver, &graph, true};
  const AgentSnapshot agent = Agent413();
  struct Case {
    std::string name;
    UpgradeConfig config;
    bool valid, available, error;
    std::string message;
  };
  UpgradeConfig bad_time = Config("4.13.6");
  bad_time.spec.upgrade_at = "tomorrow";
  // Case names start with the number of the MUO's validation rule they exercise, in its
  // order: 1 upgradeAt is RFC 3339; 2 image mode (2b: a full pull spec by digest); 3 an
  // image or a channel + version is given; 4 the version is SemVer; 5 it is above the
  // current one; 6 a channel change is offered by the update service; 7 in the same
  // channel, the agent offers it.
  std::vector<Case> cases = {
      {"1 upgradeAt", bad_time, false, false, true, "Failed to parse upgradeAt:tomorrow during validation (an RFC 3339 time is needed, such as "
       "2026-12-01T03:00:00Z)"},
      {"2 image", Config("", "", "quay.io/openshift-release-dev/ocp-release@sha256:abc"), true, true, false, ""},
      {"2 unknown image", Config("", "", "quay.io/openshift-release-dev/ocp-release@sha256:def"), false, false, true,
       "failed to fetch image manifest digest: quay.io/openshift-release-dev/ocp-release@sha256:def needs to be a valid release image"},
      {"2b no registry", Config("", "", "ocp-release@sha256:abc"), false, false, true,
       "failed to parse image:ocp-release@sha256:abc must be a valid image pull spec: no registry specified"},
      {"2b no repository", Config("", "", "quay.io/ocp-release@sha256:abc"), false, false, true, "no repository specified"},
      {"2b no digest", Config("", "", "quay.io/openshift/ocp-release:4.13.6"), false, false, true, "no image digest specified"},
      {"3 nothing", Config("", ""), false, false, false,
       "Not able to validate the upgrade config, either image or (channel + version) needs to be provided"},
      {"4 not semver", Config("4.13"), false, false, true, "failed to parse upgrade config desired version 4.13 as semver"},
      {"5 downgrade", Config("4.13.1"), true, false, true, "downgrades to desired version 4.13.1 from 4.13.5 are unsupported"},
      {"5 same", Config("4.13.5"), true, false, true, "desired version 4.13.5 matches the current version 4.13.5"},
      {"6 channel change offered", Config("4.14.2", "stable-4.14"), true, true, false, ""},
      {"6 channel change not offered", Config("4.14.3", "stable-4.14"), false, false, true,
       "cannot find version 4.14.3 in available updates"},
      {"6 channel with no targets", Config("4.14.3", "fast-4.14"), false, false, true,
       "no available upgrade for the given clusterversion 4.13.5"},
      {"6 update service down", Config("4.14.3", "broken"), false, false, true, "connection refused"},
      {"7 available", Config("4.13.6"), true, true, false, ""},
      {"7 conditional", Config("4.13.7"), true, true, false, ""},
      {"7 not offered", Config("4.13.8"), false, false, false,
       "version 4.13.8 not found in clusterversion available or conditional updates"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    ValidationResult r = ValidateDesired(c.config, agent, ports);
    EXPECT_EQ(r.valid, c.valid);
    EXPECT_EQ(r.available_update, c.available);
    EXPECT_EQ(r.is_error, c.error);
    EXPECT_NE(r.message.find(c.message), std::string::npos) << r.message;
  }
  EXPECT_EQ(graph.asked_version, "4.13.5");  // asked from the current version

  // Image mode: the image says which version it is; the spec and the New entry follow.
  UpgradeConfig by_image = Config("4.13.0", "", "quay.io/openshift-release-dev/ocp-release@sha256:abc");
  by_image.SetHistory({"4.13.0", "4.13.5", Phase::kNew, {}, "", "", "", ""});
  EXPECT_TRUE(ValidateDesired(by_image, agent, ports).valid);
  EXPECT_EQ(by_image.spec.desired.version, "4.13.6");
  EXPECT_NE(by_image.FindHistory("4.13.6"), nullptr);

  // Without validation.cincinnati a channel change is not checked here (CommenceUpgrade waits).
  UpgradeConfig unchecked = Config("4.14.9", "stable-4.14");
  ValidationResult r = ValidateDesired(unchecked, agent, {&resolver, &graph, false});
  EXPECT_TRUE(r.valid && r.available_update);
}

TEST(ValidationTest, CurrentVersionCommencedCompletedAndPrecedingVersion) {
  AgentSnapshot agent = Agent413();
  EXPECT_EQ(*CurrentVersion(agent), "4.13.5");
  agent.history.insert(agent.history.begin(), {"Partial", "4.13.6", "i6", "2024-06-02T00:00:00Z", ""});
  EXPECT_EQ(*CurrentVersion(agent), "4.13.5");  // a Partial entry is not the current version
  EXPECT_FALSE(CurrentVersion(AgentSnapshot{}).ok());

  UpgradeConfig c = Config("4.13.6");
  EXPECT_FALSE(*HasUpgradeCommenced(c, agent));
  agent.desired_update = {"4.13.6", ""};
  EXPECT_TRUE(*HasUpgradeCommenced(c, agent));
  UpgradeConfig by_image = Config("", "", "quay.io/ocp/release@sha256:6");
  EXPECT_FALSE(*HasUpgradeCommenced(by_image, agent));
  agent.desired_update = {"", "quay.io/ocp/release@sha256:6"};
  EXPECT_TRUE(*HasUpgradeCommenced(by_image, agent));
  EXPECT_FALSE(HasUpgradeCommenced(Config("", ""), agent).ok());

  EXPECT_FALSE(HasUpgradeCompleted(c, agent));
  agent.history[0].state = "Completed";
  EXPECT_TRUE(HasUpgradeCompleted(c, agent));

  // precedingVersion: the agent's desired version, or (already there) the last other one.
  AgentSnapshot before = Agent413();
  EXPECT_EQ(PrecedingVersion(c, before), "4.13.5");
  before.status_desired.version = "4.13.6";
  before.history.insert(before.history.begin(), {"Completed", "4.13.6", "i6", "", ""});
  EXPECT_EQ(PrecedingVersion(c, before), "4.13.5");
}

TEST(ValidationTest, ChannelInferenceRoundsEusUp) {
  EXPECT_EQ(InferChannel("stable-4.13", "4.14.2"), "stable-4.14");
  EXPECT_EQ(InferChannel("fast-4.13", "4.13.9"), "fast-4.13");
  EXPECT_EQ(InferChannel("eus-4.12", "4.13.1"), "eus-4.14");
  EXPECT_EQ(InferChannel("eus-4.12", "4.14.1"), "eus-4.14");
  EXPECT_EQ(InferChannel("", "4.14.1"), "stable-4.14");
  EXPECT_EQ(InferChannel("stable-4.13", "not-a-version"), "");
}

TEST(SchedulerTest, PastFutureBreachedAndBadFormat) {
  const TimePoint now = *ParseTime("2024-06-20T12:00:00Z");
  auto past = Schedule("2024-06-20T11:50:00Z", now, 120min);
  ASSERT_TRUE(past.ok());
  EXPECT_TRUE(past->ready);
  EXPECT_FALSE(past->breached);
  auto future = Schedule("2024-06-20T13:20:00Z", now, 120min);
  ASSERT_TRUE(future.ok());
  EXPECT_FALSE(future->ready);
  EXPECT_EQ(future->time_until, 80min);
  auto breached = Schedule("2024-06-20T09:59:00Z", now, 120min);
  EXPECT_TRUE(breached->ready && breached->breached);
  EXPECT_FALSE(Schedule("2024-06-20T09:59:00Z", now, 0min)->breached);  // 0 disables the window
  auto offset = Schedule("2024-06-20T14:00:00+02:00", now, 120min);
  EXPECT_TRUE(offset->ready);
  auto bad = Schedule("20 June 2024", now, 120min);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "Failed to parse upgradeAt:20 June 2024 during validation (an RFC 3339 time is needed, "
                                          "such as 2026-12-01T03:00:00Z)");
  EXPECT_EQ(FormatTime(now), "2024-06-20T12:00:00Z");
  EXPECT_FALSE(Schedule("1013-01-01T00:00:00Z", now, 120min).ok());  // beyond the clock's range: an error, not overflow
  EXPECT_FALSE(ParseTime("9999-12-31T23:59:59Z").ok());
}

TEST(ValidationTest, TheRegistryResolverReadsTheVersionFromARealRegistry) {
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready()) << registry.log();
  auto pushed = testing::RunCincinnati("release new --version 4.13.6 --to " + registry.url() + "/ocp/release:4.13.6");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  const std::string image = registry.url() + "/ocp/release@" + pushed.out.substr(pushed.out.find('@') + 1, 71);
  RegistryReleaseResolver resolver;
  auto version = resolver.VersionOf(image);
  ASSERT_TRUE(version.ok()) << version.status().message();
  EXPECT_EQ(*version, "4.13.6");
  auto missing = resolver.VersionOf(registry.url() + "/ocp/release@sha256:" + std::string(64, '0'));
  EXPECT_FALSE(missing.ok());
}

}  // namespace
}  // namespace cincinnati::upgrade
