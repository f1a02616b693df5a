// The freeze attack, demonstrated on real processes: a replaying proxy sits
// between a real agent and a real `serve` that signs its answers. It passes answers on,
// then freezes and replays the last one forever, as a compromised mirror or a stale
// cache would. The service blocks an edge meanwhile; the agent, which checks signatures,
// refuses the replayed answer once it expires, says why, and keeps its lists; when the
// proxy passes answers on again, the agent takes the new one, with the edge blocked.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "cluster_version_util.h"
#include "http/client.h"
#include "kube/json_value.h"
#include "service_util.h"
#include "signing_util.h"
#include "tampering_proxy.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using kube::JsonValue;
using kube::WriteJson;
using testing::At;
using testing::ListsVersion;
using testing::ConditionText;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

constexpr char kCv[] = "/apis/config.openshift.io/v1/clusterversions/version";

TEST(FreezeAttackTest, AReplayedAnswerIsRefusedOnceItExpiresAndTheAgentSaysWhy) {
  testing::TempDir dir, trusted, graph_data;
  const testing::KeyFiles key = testing::WriteKeyPair(dir.path(), trusted.path(), "service");
  const fs::path example = testing::Examples() / "ocp-4x";
  fs::copy(example / "graph-data", graph_data.path(), fs::copy_options::recursive);
  // Refreshed every second; each answer valid 6 s after the refresh that vouched for it.
  ServiceProcess serve("serve", {"--releases", (example / "releases").string(), "--graph-data", graph_data.path().string(),
                                 "--service.pause_secs", "1", "--signing.keys", key.private_key.string(), "--signing.state_dir",
                                 (dir / "signing").string(), "--signing.validity_secs", "6"});
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readyz", "status")).status == 200; }, 60s)) << serve.log();
  testing::TamperingProxy proxy(serve.url(""));
  ServiceProcess agent("agent", {"--state-dir", (dir / "agent").string(), "--release-document",
                                 (example / "releases" / "4.13.1-amd64.json").string(), "--channel", "stable-4.13", "--arch", "amd64",
                                 "--upstream", proxy.url("/api/upgrades_info/graph"), "--poll-interval", "1", "--port", "0",
                                 "--upstream.public-keys", trusted.path().string(), "--upstream.require-signature"});
  ASSERT_TRUE(agent.running()) << agent.log();
  auto cv = [&] { return testing::Json(Get(agent.url(kCv)).body); };
  JsonValue seen;
  ASSERT_TRUE(WaitFor([&] {
    seen = cv();
    return ConditionText(seen, "RetrievedUpdates", "status") == "True" && ListsVersion(seen, "availableUpdates", "4.13.2");
  }, 60s)) << WriteJson(seen, 2) << agent.log();

  // The proxy freezes; the service blocks 4.13.1 -> 4.13.2 for everyone.
  proxy.Freeze(true);
  testing::WriteFile(graph_data / "blocked-edges" / "4.13.2-FrozenOut.yaml",
                     "to: 4.13.2\nfrom: 4[.]13[.]1\nurl: https://example.com/frozen-out\nname: FrozenOut\n"
                     "message: Blocked while a proxy replays the old answer.\nmatchingRules:\n- type: Always\n");
  ASSERT_TRUE(WaitFor([&] {
    return Get(serve.url("/api/upgrades_info/graph?channel=stable-4.13&arch=amd64&version=4.13.1"), {"Accept: application/json"})
               .body.find("FrozenOut") != std::string::npos;
  }, 30s)) << serve.log();

  // The replayed answer is refused once it expires; the lists stay as they were.
  ASSERT_TRUE(WaitFor([&] {
    seen = cv();
    return ConditionText(seen, "RetrievedUpdates", "reason") == "SignatureExpired";
  }, 30s)) << WriteJson(seen, 2) << agent.log();
  EXPECT_EQ(ConditionText(seen, "RetrievedUpdates", "status"), "False");
  EXPECT_NE(ConditionText(seen, "RetrievedUpdates", "message").find("expired"), std::string::npos)
      << ConditionText(seen, "RetrievedUpdates", "message");
  EXPECT_TRUE(ListsVersion(seen, "availableUpdates", "4.13.2")) << "a refused answer changes nothing";
  EXPECT_GT(proxy.replayed(), 0);

  // The path is clear again: the agent takes the new answer, the edge a risk now.
  proxy.Freeze(false);
  ASSERT_TRUE(WaitFor([&] {
    seen = cv();
    return ConditionText(seen, "RetrievedUpdates", "status") == "True" && ListsVersion(seen, "conditionalUpdates", "4.13.2");
  }, 30s)) << WriteJson(seen, 2) << agent.log();
  EXPECT_FALSE(ListsVersion(seen, "availableUpdates", "4.13.2"));
  EXPECT_EQ(agent.Stop(), 0);
}

}  // namespace
}  // namespace cincinnati
