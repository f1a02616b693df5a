// Integration tests: the real `cincinnati` binaries on ephemeral 127.0.0.1 ports,
// queried over HTTP with libcurl.
#include <gtest/gtest.h>

#include <zlib.h>

#include <regex>

#include "core/error_document.h"
#include "core/graph_json.h"
#include "service_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

const fs::path kExample = testing::Examples() / "ocp-4x";
const std::string kPrefix = "/api/upgrades_info";
constexpr char kEmptyView[] = R"({"version":1,"nodes":[],"edges":[],"conditionalEdges":[]})";

std::vector<std::string> BuilderArgs(const fs::path& graph_data = kExample / "graph-data") {
  return {"--releases", (kExample / "releases").string(), "--graph-data", graph_data.string(),
          "--service.path_prefix", kPrefix, "--service.pause_secs", "1"};
}

std::vector<std::string> EngineArgs(const std::string& upstream, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--upstream.cincinnati.url", upstream, "--service.path_prefix", kPrefix,
                                   "--upstream.cincinnati.cache_ttl_secs", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string Gunzip(const std::string& data) {
  z_stream zs{};
  inflateInit2(&zs, 15 + 16);
  std::string out(data.size() * 20 + 1024, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  inflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

// One graph builder and one policy engine shared by the read-only tests.
class ServicesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    builder_ = new ServiceProcess("graph-builder", BuilderArgs());
    ASSERT_TRUE(builder_->running()) << builder_->log();
    engine_ = new ServiceProcess("policy-engine", EngineArgs(builder_->url(kPrefix + "/graph")));
    ASSERT_TRUE(engine_->running()) << engine_->log();
    ASSERT_TRUE(WaitFor([] { return Get(engine_->url("/readyz", "status")).status == 200; })) << engine_->log();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(engine_->Stop(), 0) << engine_->log();
    EXPECT_EQ(builder_->Stop(), 0) << builder_->log();
    delete engine_;
    delete builder_;
  }
  static std::string Graph(const std::string& query) { return engine_->url(kPrefix + "/graph?" + query); }

  static ServiceProcess* builder_;
  static ServiceProcess* engine_;
};
ServiceProcess* ServicesTest::builder_ = nullptr;
ServiceProcess* ServicesTest::engine_ = nullptr;

TEST_F(ServicesTest, PolicyEngineAcceptTable) {
  struct Row {
    const char* accept;  // nullptr: no header
    int status;
    const char* content_type;
  };
  for (const Row& row : std::vector<Row>{
           {nullptr, 200, "application/vnd.redhat.cincinnati.v1+json"},
           {"application/json", 200, "application/json"},
           {"*/*", 200, "application/json"},
           {"*", 200, "application/json"},
           {"application/*", 200, "application/json"},
           {"application/vnd.redhat.cincinnati.v1+json", 200, "application/vnd.redhat.cincinnati.v1+json"},
           {"application/json, text/plain", 406, "application/json"},
           {"application/json;q=0.9", 406, "application/json"},
           {"app/anything-really", 406, "application/json"},
       }) {
    // libcurl adds "Accept: */*" unless told to send no Accept header at all.
    std::vector<std::string> headers{row.accept ? std::string("Accept: ") + row.accept : std::string("Accept:")};
    auto r = Get(Graph("channel=stable-4.13&arch=amd64"), headers);
    SCOPED_TRACE(row.accept ? row.accept : "(none)");
    EXPECT_EQ(r.status, row.status) << r.body;
    EXPECT_EQ(r.headers["Content-Type"], row.content_type);
    if (row.status == 200) {
      EXPECT_EQ(r.body.rfind(R"({"version":1,"nodes":[)", 0), 0u);
    } else {
      EXPECT_EQ(r.body, R"({"kind":"invalid_content_type","value":"invalid Content-Type requested"})");
    }
  }
}

TEST_F(ServicesTest, GraphBuilderAcceptsJsonOnly) {
  std::string url = builder_->url(kPrefix + "/graph");
  auto none = Get(url, {"Accept:"});
  EXPECT_EQ(none.status, 200);
  EXPECT_EQ(none.headers["Content-Type"], "application/json");
  auto g = ReadGraphJson(none.body);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_FALSE(g->is_served_view());
  EXPECT_TRUE(g->Find("4.13.2+arm64").has_value());
  EXPECT_EQ(Get(url, {"Accept: application/vnd.redhat.cincinnati.v1+json"}).status, 406);
  EXPECT_EQ(Get(url, {"Accept: application/*"}).status, 200);
  EXPECT_EQ(Get(builder_->url(kPrefix + "/v1/graph")).body, none.body);
  EXPECT_EQ(Get(builder_->url("/graph")).status, 404);
}

TEST_F(ServicesTest, ParameterErrors) {
  auto missing = Get(engine_->url(kPrefix + "/graph"));
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.body, R"({"kind":"missing_params","value":"mandatory client parameters missing: channel"})");
  auto channel = Get(Graph("channel=fast-4+13"));
  EXPECT_EQ(channel.status, 400);
  EXPECT_EQ(channel.body,
            R"({"kind":"invalid_params","value":"invalid client parameters: channel 'fast-4 13' does not match regex '^[0-9a-z\\-\\.]+$'"})");
  auto arch = Get(Graph("channel=stable-4.13&arch=AMD64"));
  EXPECT_EQ(arch.status, 400);
  EXPECT_EQ(ErrorDocument::Parse(arch.body)->kind, "invalid_params");
  auto encoding = Get(Graph("channel=stable-4.13%zz"));
  EXPECT_EQ(encoding.status, 400);
  EXPECT_EQ(ErrorDocument::Parse(encoding.body)->kind, "invalid_params");
  auto unknown = Get(Graph("channel=a"));
  EXPECT_EQ(unknown.status, 200);
  EXPECT_EQ(unknown.body, kEmptyView);
  EXPECT_EQ(Get(Graph("channel=stable-4.13&arch=arrgh64")).body, kEmptyView);
}

TEST_F(ServicesTest, ViewContentsAndRepeatedKeys) {
  auto r = Get(Graph("arch=s390x&channel=stable-4.13&arch=arm64&id=123&version=4.12.4"));
  ASSERT_EQ(r.status, 200);
  auto g = ReadGraphJson(r.body);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->is_served_view());
  std::vector<std::string> versions;
  for (const Node& n : g->nodes()) {
    versions.push_back(n.version);
    EXPECT_FALSE(n.metadata.count("io.openshift.upgrades.graph.release.arch"));
  }
  EXPECT_EQ(versions, (std::vector<std::string>{"4.12.4", "4.13.2"}));
}

TEST_F(ServicesTest, CorsEchoesOrigin) {
  auto r = Get(Graph("channel=stable-4.13"), {"Origin: example.com"});
  EXPECT_EQ(r.headers["Access-Control-Allow-Origin"], "example.com");
  auto err = Get(Graph("channel=BAD"), {"Origin: example.com"});
  EXPECT_EQ(err.headers["Access-Control-Allow-Origin"], "example.com");
  auto plain = Get(Graph("channel=stable-4.13"));
  EXPECT_EQ(plain.headers.count("Access-Control-Allow-Origin"), 0u);
}

TEST_F(ServicesTest, OtherPathsAre404AndOpenApiHasThePrefix) {
  for (const char* path : {"/", "/graph", "/api/upgrades_info/graphs", "/metrics"}) {
    auto r = Get(engine_->url(path));
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_TRUE(r.body.empty()) << path;
  }
  for (const char* path : {"/api/upgrades_info/openapi", "/api/upgrades_info/v1/openapi"}) {
    auto r = Get(engine_->url(path));
    ASSERT_EQ(r.status, 200) << path;
    EXPECT_NE(r.body.find(R"("openapi":"3.0.3")"), std::string::npos);
    EXPECT_NE(r.body.find(R"("/api/upgrades_info/graph":{)"), std::string::npos);
    EXPECT_NE(r.body.find(R"("/api/upgrades_info/v1/graph":{)"), std::string::npos);
  }
}

TEST_F(ServicesTest, ETagAndGzip) {
  auto plain = Get(Graph("channel=stable-4.13"));
  ASSERT_EQ(plain.status, 200);
  std::string etag = plain.headers["ETag"];
  ASSERT_FALSE(etag.empty());
  auto again = Get(Graph("channel=stable-4.13"), {"If-None-Match: " + etag});
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());
  EXPECT_EQ(Get(Graph("channel=stable-4.13"), {"If-None-Match: \"other\""}).status, 200);
  auto gz = Get(Graph("channel=stable-4.13"), {"Accept-Encoding: gzip"});
  EXPECT_EQ(gz.headers["Content-Encoding"], "gzip");
  EXPECT_LT(gz.body.size(), plain.body.size());
  EXPECT_EQ(Gunzip(gz.body), plain.body);
  EXPECT_NE(gz.headers["ETag"], etag);
}

TEST_F(ServicesTest, MetricsHaveEveryReferenceNameAndType) {
  Get(Graph("channel=BAD"));  // one error so the labelled error family has a sample
  Get(builder_->url(kPrefix + "/graph"), {"Accept: text/html"});
  auto types = [](const std::string& text) {
    std::map<std::string, std::string> out;
    std::regex re("# TYPE (\\S+) (\\S+)");
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) out[(*it)[1]] = (*it)[2];
    return out;
  };
  auto gb = types(Get(builder_->url("/metrics", "status")).body);
  std::map<std::string, std::string> want_gb = {
      {"graph_upstream_raw_releases", "gauge"}, {"graph_final_releases", "gauge"},
      {"graph_last_successful_refresh_timestamp", "gauge"}, {"graph_upstream_errors_total", "counter"},
      {"graph_upstream_scrapes_total", "counter"}, {"graph_initial_upstream_scrape_duration", "gauge"},
      {"graph_upstream_scrapes_duration", "histogram"}, {"graph_incoming_requests_total", "counter"},
      {"graph_response_errors_total", "counter"}, {"build_info", "counter"}};
  for (const auto& [name, type] : want_gb) EXPECT_EQ(gb["cincinnati_gb_" + name], type) << name;
  auto pe = types(Get(engine_->url("/metrics", "status")).body);
  std::map<std::string, std::string> want_pe = {
      {"graph_incoming_requests_total", "counter"}, {"graph_serve_duration_seconds", "histogram"},
      {"graph_response_errors_total", "counter"}, {"http_upstream_requests_total", "counter"},
      {"http_upstream_errors_total", "counter"}, {"build_info", "counter"}};
  for (const auto& [name, type] : want_pe) EXPECT_EQ(pe["cincinnati_pe_" + name], type) << name;
  std::string pe_text = Get(engine_->url("/metrics", "status")).body;
  EXPECT_NE(pe_text.find("cincinnati_pe_graph_response_errors_total{code=\"400\",kind=\"invalid_params\"}"),
            std::string::npos);
  std::string gb_text = Get(builder_->url("/metrics", "status")).body;
  EXPECT_NE(gb_text.find("cincinnati_gb_graph_final_releases 17"), std::string::npos) << gb_text;
  EXPECT_NE(gb_text.find("cincinnati_gb_graph_upstream_raw_releases 16"), std::string::npos);
}

TEST_F(ServicesTest, StatusRoutes) {
  EXPECT_EQ(Get(builder_->url("/liveness", "status")).status, 200);
  EXPECT_EQ(Get(builder_->url("/readiness", "status")).status, 200);
  EXPECT_EQ(Get(engine_->url("/livez", "status")).status, 200);
  EXPECT_EQ(Get(engine_->url("/readyz", "status")).status, 200);
  auto tar = Get(builder_->url(kPrefix + "/graph-data", "public"));
  EXPECT_EQ(tar.status, 200);
  EXPECT_EQ(tar.headers["Content-Type"], "application/gzip");
  EXPECT_EQ(tar.headers["Content-Disposition"], "attachment; filename=\"graph-data.tar.gz\"");
}

// PE -> PE -> GB answers with the same bytes as PE -> GB, and independent policy
// engines agree byte for byte.
TEST_F(ServicesTest, PolicyEngineChainsAndReplicasAgree) {
  ServiceProcess second("policy-engine", EngineArgs(engine_->url(kPrefix + "/graph")));
  ServiceProcess third("policy-engine", EngineArgs(second.url(kPrefix + "/graph")));
  // Three policy engines straight on the graph builder: engine_, replica and replica2.
  ServiceProcess replica("policy-engine", EngineArgs(builder_->url(kPrefix + "/graph")));
  ServiceProcess replica2("policy-engine", EngineArgs(builder_->url(kPrefix + "/graph")));
  ASSERT_TRUE(WaitFor([&] { return Get(third.url("/readyz", "status")).status == 200; })) << third.log();
  ASSERT_TRUE(WaitFor([&] { return Get(replica.url("/readyz", "status")).status == 200; })) << replica.log();
  ASSERT_TRUE(WaitFor([&] { return Get(replica2.url("/readyz", "status")).status == 200; })) << replica2.log();
  for (const char* query : {"channel=stable-4.13", "channel=candidate-4.13&arch=arm64", "channel=fast-4.12&arch=amd64",
                            "channel=nope", "channel=BAD", "arch=amd64"}) {
    auto direct = Get(Graph(query));
    auto via_one = Get(second.url(kPrefix + "/graph?" + query));
    auto via_two = Get(third.url(kPrefix + "/graph?" + query));
    auto other = Get(replica.url(kPrefix + "/graph?" + query));
    auto other2 = Get(replica2.url(kPrefix + "/graph?" + query));
    SCOPED_TRACE(query);
    EXPECT_EQ(via_one.status, direct.status);
    EXPECT_EQ(via_one.body, direct.body);
    EXPECT_EQ(via_two.body, direct.body);
    EXPECT_EQ(other.body, direct.body);
    EXPECT_EQ(other2.body, direct.body);
    EXPECT_EQ(other2.headers["ETag"], direct.headers["ETag"]);
  }
  EXPECT_NE(second.log().find("forwarding client queries"), std::string::npos) << second.log();
}

TEST(ServiceTest, SeedExampleViews) {
  const fs::path seed = testing::Examples() / "seed";
  ServiceProcess serve("serve", {"--releases", (seed / "releases").string(), "--graph-data",
                                 (seed / "graph-data").string()});
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readyz", "status")).status == 200; })) << serve.log();
  auto edges_from = [&](const std::string& channel, const std::string& from) {
    auto g = ReadGraphJson(Get(serve.url(kPrefix + "/graph?channel=" + channel)).body);
    EXPECT_TRUE(g.ok());
    std::vector<std::string> out;
    for (const Edge& e : g->Edges()) {
      if (g->node(e.from).version == from) out.push_back(g->node(e.to).version);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  // A beta client on 1.0.0 sees 1.1.1 and 1.3.0 but never 1.1.0.
  EXPECT_EQ(edges_from("beta", "1.0.0"), (std::vector<std::string>{"1.1.1", "1.3.0"}));
  // Alpha has every release, but nobody is offered the degraded 1.1.0.
  EXPECT_EQ(edges_from("alpha", "1.0.0"), (std::vector<std::string>{"1.1.1", "1.3.0"}));
  EXPECT_EQ(edges_from("alpha", "1.1.1"), (std::vector<std::string>{"1.2.0", "1.3.0"}));
  auto alpha = ReadGraphJson(Get(serve.url(kPrefix + "/graph?channel=alpha")).body);
  ASSERT_TRUE(alpha.ok());
  EXPECT_EQ(alpha->node_count(), 5u);
  for (const Edge& e : alpha->Edges()) EXPECT_NE(alpha->node(e.to).version, "1.1.0");
  EXPECT_EQ(serve.Stop(), 0);
}

}  // namespace
}  // namespace cincinnati
