// Poll receipts over real HTTP: a graph builder and policy engines forwarding reports to
// it, as replicas behind a round-robin balancer. A cluster's polls are answered by one
// engine, its report by another that never saw it poll: the receipt it carries admits
// the report when the engines share --reports.receipt_key_file, and only then.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/update_report.h"
#include "http/client.h"
#include "service_util.h"
#include "test_util.h"
#include "update_report_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

const fs::path kExample = testing::Examples() / "ocp-4x";
constexpr char kHeader[] = "Cincinnati-Poll-Receipt";

http::Result Post(const std::string& url, const std::string& body, std::vector<std::string> headers) {
  http::RequestOptions o;
  o.method = "POST";
  o.body = body;
  o.headers = std::move(headers);
  o.headers.push_back("Content-Type: application/json");
  o.timeout = 10s;
  return http::Request(url, o);
}

class PollReceiptServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteFile(dir_ / "reports.token", "policy-engines\n");
    testing::WriteFile(dir_ / "shared.key", std::string("0123456789abcdef0123456789abcdef-shared"));
    testing::WriteFile(dir_ / "other.key", std::string("0123456789abcdef0123456789abcdef-other"));
    builder_ = std::make_unique<ServiceProcess>(
        "graph-builder",
        std::vector<std::string>{"--releases", (kExample / "releases").string(), "--graph-data", (kExample / "graph-data").string(),
                                 "--reports.state_dir", (dir_ / "reports").string(), "--brakes.url_base",
                                 "https://updates.example.com/api/upgrades_info/v1/brakes", "--reports.token_file",
                                 (dir_ / "reports.token").string()});
    ASSERT_TRUE(builder_->running()) << builder_->log();
    ASSERT_TRUE(WaitFor([&] { return Get(builder_->url("/readiness", "status")).status == 200; }, 60s)) << builder_->log();
  }
  // A policy engine taking reports: three polls, no minimum age; `key`: its key file.
  std::unique_ptr<ServiceProcess> Engine(const std::string& key) {
    std::vector<std::string> args = {"--upstream.cincinnati.url", builder_->url("/graph"), "--upstream.cincinnati.cache_ttl_secs", "1",
                                     "--reports.enabled", "true", "--reports.upstream_token_file", (dir_ / "reports.token").string(),
                                     "--reports.min_poller_age_secs", "0", "--reports.min_polls", "3"};
    if (!key.empty()) args.insert(args.end(), {"--reports.receipt_key_file", (dir_ / key).string()});
    auto engine = std::make_unique<ServiceProcess>("policy-engine", args);
    EXPECT_TRUE(engine->running()) << engine->log();
    EXPECT_TRUE(WaitFor([&] { return Get(engine->url("/readyz", "status")).status == 200; }, 60s)) << engine->log();
    return engine;
  }
  // A poll of cluster n at 4.13.1 sending `receipt` (nullopt: no header, as the CVO).
  http::Result Poll(ServiceProcess& engine, int n, const std::optional<std::string>& receipt) {
    std::vector<std::string> headers = {"Accept: application/json"};
    if (receipt) headers.push_back(std::string(kHeader) + (receipt->empty() ? ";" : ": " + *receipt));
    return Get(engine.url("/graph?channel=stable-4.13&version=4.13.1&id=" + testing::TestClusterId(n)), headers);
  }
  http::Result Report(ServiceProcess& engine, int n, const std::string& attempt, const std::optional<std::string>& receipt) {
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::vector<std::string> headers;
    if (receipt) headers.push_back(std::string(kHeader) + ": " + *receipt);
    return Post(engine.url("/v1/reports?id=" + testing::TestClusterId(n)),
                EncodeUpdateReport(testing::TestReport(n, false, attempt, now)), headers);
  }

  testing::TempDir dir_;
  std::unique_ptr<ServiceProcess> builder_;
};

TEST_F(PollReceiptServiceTest, AnEngineThatNeverSawTheClusterTakesItsReportByTheReceiptOfAnother) {
  auto a = Engine("shared.key"), b = Engine("shared.key"), stranger = Engine("other.key");
  // The CVO's poll (no header) gets no receipt.
  auto plain = Poll(*a, 1, std::nullopt);
  ASSERT_EQ(plain.status, 200);
  EXPECT_EQ(plain.Header(kHeader), nullptr);
  // Cluster 1 polls engine a three times, asking for receipts, then a, b and a again.
  std::string receipt;
  for (ServiceProcess* engine : {a.get(), a.get(), b.get()}) {
    auto polled = Poll(*engine, 1, receipt);
    ASSERT_EQ(polled.status, 200);
    ASSERT_NE(polled.Header(kHeader), nullptr) << "a poll that asks gets a receipt";
    receipt = *polled.Header(kHeader);
  }
  std::vector<std::string> fields;
  for (size_t at = 0, dot; at <= receipt.size(); at = dot + 1) {
    dot = std::min(receipt.find('.', at), receipt.size());
    fields.push_back(receipt.substr(at, dot - at));
  }
  ASSERT_EQ(fields.size(), 5u) << receipt;
  EXPECT_EQ(fields[3], "3") << "three polls counted: " << receipt;
  // An engine that saw one of them does not admit it by its sightings, and without the
  // receipt it refuses it, as a replica did before receipts.
  auto refused = Report(*b, 1, "a1", std::nullopt);
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_NE(refused.body.find("unknown_poller"), std::string::npos) << refused.body;
  // With it, any engine of the shared key takes it, and its graph builder records it.
  auto taken = Report(*b, 1, "a1", receipt);
  EXPECT_EQ(taken.status, 200) << taken.body << b->log();
  EXPECT_EQ(taken.body, R"({"status":"accepted"})");
  // A service of another key does not, nor the receipt of another cluster.
  auto elsewhere = Report(*stranger, 1, "a2", receipt);
  EXPECT_EQ(elsewhere.status, 403) << elsewhere.body;
  auto borrowed = Report(*b, 2, "a1", receipt);
  EXPECT_EQ(borrowed.status, 403) << borrowed.body;
}

}  // namespace
}  // namespace cincinnati
