// A registry that sends blob downloads to storage, as quay.io and registries on object
// storage do: a real proxy in front of a real docker-registry with TLS and basic auth
// answers blob GETs with 302/307 to "storage" (the same proxy under another host name,
// then a second proxy on another port), which records what it receives. The graph
// builder service scrapes through it; the credentials never reach storage. A redirect
// loop and a blob longer than its descriptor fail the refresh with an error naming the
// URL and the limit, and the last good graph stays.
#include <gtest/gtest.h>

#include "builder/registry_source.h"
#include "fault_proxy.h"
#include "registry_util.h"
#include "graph_builder/graph_builder_service.h"

namespace cincinnati {
namespace {

using testing::FaultProxy;

constexpr const char* kUser = "robot";
constexpr const char* kPassword = "s3cret";
constexpr const char* kBasic = "Basic cm9ib3Q6czNjcmV0";  // robot:s3cret

class RegistryRedirectTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(registry_.ready()) << registry_.log(); }

  void Push(const std::string& version, const std::string& previous = "") {
    auto r = testing::RunCincinnati("release new --version " + version +
                                    (previous.empty() ? "" : " --previous " + previous) + " --to " +
                                    registry_.host_port() + "/redirect/release:" + version + " --username " + kUser +
                                    " --password " + kPassword + " --root-certificate-dir " + registry_.ca_dir());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  RegistrySourceSettings Settings() const {
    RegistrySourceSettings s;
    s.registry = front_.url();
    s.repository = "redirect/release";
    s.credentials = {kUser, kPassword};
    s.client.ca_path = registry_.ca_dir();
    s.client.retry_pause = std::chrono::milliseconds(20);
    return s;
  }

  // The failure a fresh scrape (nothing cached) runs into.
  std::string ScrapeError() const {
    TransformContext context;
    auto graph = RegistryReleaseSource(Settings()).Apply(Graph(), context);
    return graph.ok() ? "" : graph.status().message();
  }

  static std::vector<FaultProxy::Seen> BlobGets(const std::vector<FaultProxy::Seen>& seen, bool storage) {
    std::vector<FaultProxy::Seen> out;
    for (const auto& s : seen) {
      bool blob = s.method == "GET" && s.target.find("/blobs/sha256:") != std::string::npos;
      if (blob && (s.target.rfind("/storage/", 0) == 0) == storage) out.push_back(s);
    }
    return out;
  }

  testing::LocalRegistry registry_{/*secure=*/true, kUser, kPassword};
  // Both forward to the registry; "/storage" requests with the storage's own credentials.
  FaultProxy front_{registry_.url(), registry_.ca_dir(), kBasic};
  FaultProxy storage_{registry_.url(), registry_.ca_dir(), kBasic};
};

TEST_F(RegistryRedirectTest, BlobsFromStorageWithoutCredentialsAndFaultsKeepTheGraph) {
  Push("8.0.0");
  Push("8.0.1", "8.0.0");
  TransformChain chain;
  chain.push_back(std::make_unique<RegistryReleaseSource>(Settings()));
  server::GraphBuilderOptions options;
  options.scrape_timeout = std::chrono::seconds(60);
  server::GraphBuilderService service(std::move(chain), options, "test");

  // 302 to the same proxy under another host name.
  const std::string other_name = "http://localhost:" + std::to_string(front_.port());
  front_.RedirectBlobs(302, other_name);
  ASSERT_TRUE(service.RefreshOnce());
  EXPECT_EQ(service.Latest()->graph->node_count(), 2u);
  auto asked = BlobGets(front_.seen(), /*storage=*/false);
  auto served = BlobGets(front_.seen(), /*storage=*/true);
  ASSERT_EQ(served.size(), 4u);  // a config and a layer per release
  for (const auto& s : asked) EXPECT_EQ(s.authorization, kBasic) << s.target;  // the registry requires it
  for (const auto& s : served) {
    EXPECT_EQ(s.host, "localhost:" + std::to_string(front_.port())) << s.target;
    EXPECT_EQ(s.authorization, "") << s.target;
  }

  // 307 to another port: a new release's blobs come from there.
  front_.RedirectBlobs(307, storage_.url());
  Push("8.0.2", "8.0.1");
  ASSERT_TRUE(service.RefreshOnce());
  ASSERT_EQ(service.Latest()->graph->node_count(), 3u);
  served = BlobGets(storage_.seen(), /*storage=*/true);
  ASSERT_EQ(served.size(), 2u);
  for (const auto& s : served) EXPECT_EQ(s.authorization, "") << s.target;
  const auto good = service.Latest();

  // A redirect loop on a new release's layer: the refresh fails, the graph stays.
  front_.RedirectBlobs(0, "");
  front_.loop_layers = true;
  Push("8.0.3", "8.0.2");
  EXPECT_FALSE(service.RefreshOnce());
  EXPECT_EQ(service.Latest(), good);
  std::string error = ScrapeError();
  EXPECT_NE(error.find("redirect loop for url (" + front_.url() + "/v2/redirect/release/blobs/sha256:"),
            std::string::npos) << error;
  front_.loop_layers = false;

  // A layer longer than its descriptor says: refused as soon as it is, graph kept.
  front_.pad_layers = true;
  EXPECT_FALSE(service.RefreshOnce());
  EXPECT_EQ(service.Latest(), good);
  error = ScrapeError();
  EXPECT_NE(error.find("response body of url (" + front_.url() + "/v2/redirect/release/blobs/sha256:"),
            std::string::npos) << error;
  EXPECT_NE(error.find("bytes (the size in its descriptor)"), std::string::npos) << error;
  front_.pad_layers = false;

  ASSERT_TRUE(service.RefreshOnce());
  EXPECT_EQ(service.Latest()->graph->node_count(), 4u);
  EXPECT_EQ(testing::MetricValue(service.metrics().Render(), "cincinnati_gb_graph_upstream_errors_total"), 2);
}

}  // namespace
}  // namespace cincinnati
