// A real Prometheus scrapes both services; its metadata API must report every metric
// name of the reference's services with the right type.
#include <gtest/gtest.h>

#include <simdjson.h>

#include "service_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

TEST(PrometheusTest, ScrapesEveryReferenceMetricWithItsType) {
  ASSERT_TRUE(fs::exists("/usr/bin/prometheus")) << "scripts/deps.sh installs the Debian prometheus package";
  const fs::path example = testing::Examples() / "ocp-4x";
  ServiceProcess builder("graph-builder", {"--releases", (example / "releases").string(), "--graph-data",
                                           (example / "graph-data").string()});
  ServiceProcess engine("policy-engine", {"--upstream.cincinnati.url", builder.url("/graph")});
  ASSERT_TRUE(builder.running() && engine.running());
  ASSERT_TRUE(WaitFor([&] { return Get(engine.url("/readyz", "status")).status == 200; }));
  Get(engine.url("/graph?channel=BAD"));  // gives the labelled error family a sample
  Get(builder.url("/graph"), {"Accept: text/html"});

  testing::TempDir dir;
  testing::WriteFile(dir / "prometheus.yml",
                     "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                     "- job_name: cincinnati\n  static_configs:\n  - targets: ['127.0.0.1:" +
                         std::to_string(builder.port("status")) + "', '127.0.0.1:" +
                         std::to_string(engine.port("status")) + "']\n");
  const int port = testing::FreePort();
  ChildProcess prometheus({"/usr/bin/prometheus", "--config.file=" + (dir / "prometheus.yml").string(),
                           "--storage.tsdb.path=" + (dir / "data").string(),
                           "--web.listen-address=127.0.0.1:" + std::to_string(port)});
  const std::string api = "http://127.0.0.1:" + std::to_string(port) + "/api/v1/";

  // Both targets up and scraped at least once.
  ASSERT_TRUE(WaitFor([&] {
    return Get(api + "query?query=count(up%3D%3D1)").body.find(",\"2\"]") != std::string::npos;
  }, std::chrono::seconds(60))) << prometheus.log();

  std::map<std::string, std::string> want = {
      {"cincinnati_gb_graph_upstream_raw_releases", "gauge"},
      {"cincinnati_gb_graph_final_releases", "gauge"},
      {"cincinnati_gb_graph_last_successful_refresh_timestamp", "gauge"},
      {"cincinnati_gb_graph_upstream_errors_total", "counter"},
      {"cincinnati_gb_graph_upstream_scrapes_total", "counter"},
      {"cincinnati_gb_graph_initial_upstream_scrape_duration", "gauge"},
      {"cincinnati_gb_graph_upstream_scrapes_duration", "histogram"},
      {"cincinnati_gb_graph_incoming_requests_total", "counter"},
      {"cincinnati_gb_graph_response_errors_total", "counter"},
      {"cincinnati_gb_build_info", "counter"},
      {"cincinnati_pe_graph_incoming_requests_total", "counter"},
      {"cincinnati_pe_graph_serve_duration_seconds", "histogram"},
      {"cincinnati_pe_graph_response_errors_total", "counter"},
      {"cincinnati_pe_http_upstream_requests_total", "counter"},
      {"cincinnati_pe_http_upstream_errors_total", "counter"},
      {"cincinnati_pe_build_info", "counter"},
  };
  std::map<std::string, std::string> got;
  ASSERT_TRUE(WaitFor([&] {
    auto r = Get(api + "metadata");
    if (r.status != 200) return false;
    simdjson::dom::parser parser;
    simdjson::padded_string padded(r.body);
    simdjson::dom::object data;
    if (parser.parse(padded)["data"].get(data)) return false;
    got.clear();
    for (auto field : data) {
      std::string_view type;
      if (!field.value.at(0)["type"].get_string().get(type)) got[std::string(field.key)] = std::string(type);
    }
    for (const auto& [name, _] : want) {
      if (!got.count(name)) return false;
    }
    return true;
  }, std::chrono::seconds(30))) << prometheus.log();
  for (const auto& [name, type] : want) EXPECT_EQ(got[name], type) << name;

  // And the values are queryable: the graph builder's node count.
  auto nodes = Get(api + "query?query=cincinnati_gb_graph_final_releases");
  EXPECT_NE(nodes.body.find("\"17\""), std::string::npos) << nodes.body;
  EXPECT_EQ(prometheus.Stop(), 0) << prometheus.log();
}

}  // namespace
}  // namespace cincinnati
