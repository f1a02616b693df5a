// Update reports end to end: real `cincinnati agent` processes with
// --reports.url, releases in a real registry (update_test_fixture.h), and a real HTTP
// receiver on 127.0.0.1 standing in for the update service's {prefix}/v1/reports.
#include <set>

#include "agent_reports_receiver.h"
#include "update_test_fixture.h"

namespace cincinnati::agent {

using kube::WriteJson;
using kube::TextOf;
using kube::BoolOf;
namespace {

using namespace update_test;
using testing::ReportReceiver;

class AgentReportsTest : public UpdateTest {
 protected:
  std::unique_ptr<ServiceProcess> StartReporting(std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--reports.url", receiver_.url(), "--arch", "amd64"});
    return StartAgent(extra);
  }
  void Components(ServiceProcess& agent, const char* degraded = "False") {
    for (const char* name : {"ingress", "dns"}) {
      auto put = Send("PUT", agent.url(kOperators + std::string(name)), R"({"metadata":{"name":")" + std::string(name) + "\"}}");
      ASSERT_EQ(put.status, 200) << put.body;
      Report(agent, name, "4.1.0", std::string(name) == "ingress" ? degraded : "False");
    }
  }
  double Metric(ServiceProcess& agent, const std::string& series) {
    return testing::MetricValue(Get(agent.url("/metrics")).body, series);
  }
  JsonValue Progress(ServiceProcess& agent) { return Read(agent, "/apis/agent.cincinnati.openshift.io/v1/updateprogress"); }
  size_t QueuedFiles() {
    size_t n = 0;
    std::error_code ec;
    for (auto it = fs::directory_iterator(state_ / "agent" / "reports", ec); !ec && it != fs::directory_iterator(); ++it) ++n;
    return n;
  }
  // Both loops have run, and a retrieval pass (which sends) began after an update pass
  // (which queues): whatever this process would queue or send, it has.
  void Settle(ServiceProcess& agent) {
    auto passes = [&](const char* loop) {
      return Metric(agent, std::string("cincinnati_agent_passes_total{loop=\"") + loop + "\"}");
    };
    ASSERT_TRUE(WaitFor([&] { return passes("update") >= 1; }, kPatience)) << agent.log();
    const double retrievals = passes("retrieval");
    // Any component change wakes both loops.
    ASSERT_EQ(Send("PUT", agent.url(kOperators + std::string("wake")), R"({"metadata":{"name":"wake"}})").status, 200);
    ASSERT_TRUE(WaitFor([&] { return passes("retrieval") > retrievals; }, kPatience)) << agent.log();
  }

  // The final reports taken, and the Started ones (an attempt announced as it applies).
  std::vector<UpdateReport> Finals() { return Taken(false); }
  std::vector<UpdateReport> Starts() { return Taken(true); }
  std::vector<UpdateReport> Taken(bool started) {
    std::vector<UpdateReport> out;
    for (UpdateReport& r : receiver_.taken()) {
      if ((r.result == UpdateResult::kStarted) == started) out.push_back(std::move(r));
    }
    return out;
  }
  size_t FinalPosts() {
    size_t n = 0;
    for (const auto& r : receiver_.received()) n += r.body.find(R"("result":"Started")") == std::string::npos;
    return n;
  }

  ReportReceiver receiver_;
};

TEST_F(AgentReportsTest, ACompletedUpdateSendsOneCompletedReport) {
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  auto agent = StartReporting();
  Components(*agent);
  const std::string cluster = TextOf(At(Cv(*agent), {"spec", "clusterID"}));
  Request(*agent, target, "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "ingress") == "4.1.1"; }, kPatience)) << WriteJson(Cv(*agent), 2) << agent->log();
  Report(*agent, "ingress", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "dns") == "4.1.1"; }, kPatience)) << WriteJson(Cv(*agent), 2);
  EXPECT_EQ(FinalPosts(), 0u) << "no final report before the attempt ends";
  // The attempt is announced while it applies, before it ends (again by the process
  // the agent handed over to when it was sent already: the service takes it once).
  ASSERT_TRUE(WaitFor([&] { return !Starts().empty(); }, kPatience)) << agent->log();
  Report(*agent, "dns", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return Finals().size() == 1; }, kPatience)) << agent->log();
  const std::vector<UpdateReport> starts = Starts();
  ASSERT_LE(starts.size(), 2u);
  for (const UpdateReport& start : starts) {
    EXPECT_EQ(start, starts[0]) << "each is the same report";
    EXPECT_EQ(start.cluster_id, cluster);
    EXPECT_EQ(start.attempt, Finals()[0].attempt);
    EXPECT_EQ(start.from, "4.1.0");
    EXPECT_EQ(start.to, "4.1.1");
    EXPECT_EQ(start.channel, "stable-4.1");
    EXPECT_EQ(start.started, Finals()[0].started);
    EXPECT_EQ(start.ended, 0);
  }
  EXPECT_NE(receiver_.received()[0].body.find(R"("result":"Started")"), std::string::npos) << "the start is sent first";
  EXPECT_EQ(receiver_.received().back().body.find(R"("result":"Started")"), std::string::npos) << "the final report last";

  const UpdateReport report = Finals()[0];
  EXPECT_EQ(report.cluster_id, cluster);
  EXPECT_EQ(report.attempt.size(), 32u);
  EXPECT_EQ(report.from, "4.1.0");
  EXPECT_EQ(report.to, "4.1.1");
  EXPECT_EQ(report.arch, "amd64");
  EXPECT_EQ(report.channel, "stable-4.1");
  EXPECT_EQ(report.result, UpdateResult::kCompleted);
  EXPECT_EQ(report.component, "");
  EXPECT_EQ(report.reason, "");
  EXPECT_LE(report.started, report.ended);
  EXPECT_LT(report.ended - report.started, 300);
  const auto received = receiver_.received();
  for (const auto& r : received) {
    EXPECT_EQ(r.query, "id=" + cluster);
    EXPECT_EQ(r.content_type, "application/json");
  }
  const JsonValue progress = Progress(*agent);
  EXPECT_EQ(TextOf(At(progress, {"attemptId"})), report.attempt);
  EXPECT_TRUE(BoolOf(At(progress, {"reported"})));
  // This process's own: the final report, and the start when the one before had not sent it.
  ASSERT_TRUE(WaitFor([&] { return Metric(*agent, "cincinnati_agent_reports_sent_total") >= 1; }, kPatience));
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_reports_pending"), 0);
  EXPECT_EQ(QueuedFiles(), 0u);

  // Restarted, the agent has nothing to report again.
  StopAgentAt(agent->url(""));
  agent = StartReporting();
  const size_t posts = receiver_.count();
  Settle(*agent);
  EXPECT_EQ(receiver_.count(), posts);
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_reports_pending"), 0);
}

// Polls ask the update service for poll receipts, and the report of an update carries
// the one of its from-version, although the agent that sends it is the new process the
// old one handed over to (the receipt went with the attempt's saved progress and the
// queued report): a replica that never saw the polls can tell the cluster polled there.
TEST_F(AgentReportsTest, TheReportCarriesTheReceiptOfItsFromVersionAcrossTheHandOver) {
  const std::string target = Push("4.1.1", "4.1.0");
  Sign(target);
  auto agent = StartReporting({"--update-service", receiver_.graph_url()});
  ASSERT_TRUE(WaitFor([&] { return !receiver_.polls().empty(); }, kPatience)) << agent->log();
  EXPECT_EQ(receiver_.polls()[0].receipt, std::optional<std::string>("")) << "asks for a first receipt";
  const int64_t first_pid = AgentPid(agent->url(""));
  Components(*agent);
  Request(*agent, target, "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "ingress") == "4.1.1"; }, kPatience)) << WriteJson(Cv(*agent), 2) << agent->log();
  Report(*agent, "ingress", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "dns") == "4.1.1"; }, kPatience)) << WriteJson(Cv(*agent), 2);
  Report(*agent, "dns", "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return Finals().size() == 1; }, kPatience)) << agent->log();
  EXPECT_NE(AgentPid(agent->url("")), first_pid) << "the report is the new process's";
  std::vector<ReportReceiver::Received> received;
  for (const auto& r : receiver_.received()) {
    if (r.body.find(R"("result":"Started")") == std::string::npos) {
      received.push_back(r);
    } else {
      EXPECT_TRUE(r.receipt && r.receipt->starts_with("r-4.1.0-")) << "a start carries the receipt too";
    }
  }
  ASSERT_EQ(received.size(), 1u);
  ASSERT_TRUE(received[0].receipt) << "the report carries a receipt";
  EXPECT_TRUE(received[0].receipt->starts_with("r-4.1.0-")) << *received[0].receipt;
  // One the service answered a poll at 4.1.0 with (the latest before the attempt began).
  int polls_at_from = 0;
  for (const auto& poll : receiver_.polls()) polls_at_from += poll.query.find("version=4.1.0") != std::string::npos;
  const int n = std::stoi(received[0].receipt->substr(8));
  EXPECT_TRUE(n >= 1 && n <= polls_at_from) << *received[0].receipt << " of " << polls_at_from;
}

// A release refused before anything is applied ends its attempt Failed with the
// refusal's reason; its retries (every second here) are not reported again today.
TEST_F(AgentReportsTest, ARefusedReleaseIsReportedOnceNotAtEveryRetry) {
  auto agent = StartReporting({"--update-retry", "1"});
  const std::string image = Push("4.1.2", "4.1.0");  // never signed
  Request(*agent, image, "4.1.2");
  ASSERT_TRUE(WaitFor([&] { return Finals().size() == 1; }, kPatience)) << agent->log();
  const UpdateReport report = Finals()[0];
  EXPECT_EQ(report.result, UpdateResult::kFailed);
  EXPECT_EQ(report.reason, "ImageVerificationFailed");
  EXPECT_EQ(report.component, "");
  EXPECT_EQ(report.from, "4.1.0");
  EXPECT_EQ(report.to, "4.1.2");
  EXPECT_EQ(ConditionText(Cv(*agent), "ReleaseAccepted", "reason"), "ImageVerificationFailed");

  // Two retries later (new attempts, refused for the same reason), still one report.
  std::set<std::string> attempts;
  ASSERT_TRUE(WaitFor([&] {
    const JsonValue p = Progress(*agent);
    if (TextOf(At(p, {"result"})) == "Failed") attempts.insert(TextOf(At(p, {"attemptId"})));
    return attempts.size() >= 3;
  }, kPatience)) << WriteJson(Progress(*agent), 2);
  Settle(*agent);
  EXPECT_EQ(FinalPosts(), 1u);
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_reports_pending"), 0);
}

// The service answers 503 (Retry-After: 1): the report is sent again; the agent is
// killed (-9) with the report queued; the next process sends it, and the receiver
// takes it once, under the one attempt id every try carried.
TEST_F(AgentReportsTest, AReportOutlivesA503AndAKillNineAndIsTakenOnce) {
  receiver_.SetDefault({503, R"({"kind":"busy"})", "1"});
  auto agent = StartReporting({"--update-retry", "3600"});
  const std::string image = Push("4.1.2", "4.1.0");  // never signed
  Request(*agent, image, "4.1.2");
  ASSERT_TRUE(WaitFor([&] { return FinalPosts() >= 2; }, kPatience)) << agent->log();
  EXPECT_EQ(Finals().size(), 0u);
  const std::string attempt = TextOf(At(Progress(*agent), {"attemptId"}));
  ASSERT_EQ(attempt.size(), 32u);
  EXPECT_TRUE(fs::exists(state_ / "agent" / "reports" / (attempt + ".json")));
  EXPECT_GE(Metric(*agent, "cincinnati_agent_report_send_errors_total"), 2);
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_reports_pending"), 1);
  agent->Kill();

  receiver_.SetDefault({});
  agent = StartReporting({"--update-retry", "3600"});
  ASSERT_TRUE(WaitFor([&] { return Finals().size() == 1; }, kPatience)) << agent->log();
  for (const auto& r : receiver_.received()) {
    auto decoded = DecodeUpdateReport(r.body);
    ASSERT_TRUE(decoded.ok()) << r.body;
    EXPECT_EQ(decoded->attempt, attempt) << "a retry is the same report, never a new attempt";
  }
  ASSERT_TRUE(WaitFor([&] { return Metric(*agent, "cincinnati_agent_reports_pending") == 0; }, kPatience));
  EXPECT_EQ(QueuedFiles(), 0u);
  const size_t posts = FinalPosts();
  Settle(*agent);
  EXPECT_EQ(FinalPosts(), posts);
  EXPECT_EQ(Finals().size(), 1u);
}

// A component Degraded past --reports.degraded_grace ends the attempt Failed; one not
// done after --component-timeout ends the next attempt Failed; the recoveries after are
// not reported (one report per attempt).
TEST_F(AgentReportsTest, DegradedAndSlowComponentsEndTheirAttemptsFailedOnce) {
  const std::string first = Push("4.1.1", "4.1.0");
  Sign(first);
  const std::string second = Push("4.1.2", "4.1.0");
  Sign(second);
  auto agent = StartReporting({"--reports.degraded_grace", "2", "--component-timeout", "3"});
  Components(*agent, /*degraded=*/"True");
  Request(*agent, first, "4.1.1");
  ASSERT_TRUE(WaitFor([&] { return Finals().size() == 1; }, kPatience)) << WriteJson(Cv(*agent), 2) << agent->log();
  const UpdateReport degraded = Finals()[0];
  EXPECT_EQ(degraded.result, UpdateResult::kFailed);
  EXPECT_EQ(degraded.component, "ingress");
  EXPECT_EQ(degraded.reason, "ClusterOperatorDegraded");
  EXPECT_EQ(degraded.to, "4.1.1");
  EXPECT_GE(degraded.ended - degraded.started, 2);

  // No longer degraded but never done: Failing says so, and nothing more is reported
  // for this attempt. Then the administrator retargets: a new attempt.
  Report(*agent, "ingress", "4.1.0", "False");
  ASSERT_TRUE(WaitFor([&] { return ConditionText(Cv(*agent), "Failing", "reason") == "ClusterOperatorNotAvailable"; }, kPatience))
      << WriteJson(Cv(*agent), 2);
  Request(*agent, second, "4.1.2");
  ASSERT_TRUE(WaitFor([&] { return Finals().size() == 2; }, kPatience)) << WriteJson(Cv(*agent), 2) << agent->log();
  const UpdateReport slow = Finals()[1];
  EXPECT_NE(slow.attempt, degraded.attempt);
  EXPECT_EQ(slow.result, UpdateResult::kFailed);
  EXPECT_EQ(slow.component, "ingress");
  EXPECT_EQ(slow.reason, "ClusterOperatorNotAvailable");
  EXPECT_EQ(slow.from, "4.1.0");
  EXPECT_EQ(slow.to, "4.1.2");

  // The components catch up: the update completes, and is not reported again.
  Report(*agent, "ingress", "4.1.2");
  ASSERT_TRUE(WaitFor([&] { return DesiredOf(*agent, "dns") == "4.1.2"; }, kPatience)) << WriteJson(Cv(*agent), 2);
  Report(*agent, "dns", "4.1.2");
  ASSERT_TRUE(WaitFor([&] { return TextOf(At(HistoryEntry(Cv(*agent), 0), {"state"})) == "Completed"; }, kPatience))
      << WriteJson(Cv(*agent), 2);
  Settle(*agent);
  EXPECT_EQ(FinalPosts(), 2u);
  EXPECT_EQ(TextOf(At(Progress(*agent), {"result"})), "Failed") << "the attempt's first end stays";
}

}  // namespace
}  // namespace cincinnati::agent
