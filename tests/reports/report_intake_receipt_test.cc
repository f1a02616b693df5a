// ReportIntake with poll receipts, in process on a ManualClock: two replicas share a key
// and a round-robin balancer sends a cluster's polls to one and its report to the other,
// which never saw it poll; the receipt the agent carries admits the report there, and
// nothing else about admission changes (a receipt of another key, version or cluster,
// too young or too few polls, is refused; the daily allowance holds for ids admitted by
// receipt alone, and charges a Started report as a final one; a duplicate gives it back).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "env/clock.h"
#include "reports/report_intake.h"
#include "update_report_util.h"

namespace cincinnati::server {
namespace {

using namespace std::chrono_literals;
using reports::ReportVerdict;

// Takes every report; says duplicate for an attempt's start, or end, it took before.
class TakingSink : public ReportSink {
 public:
  void Submit(UpdateReport report, std::function<void(Result<ReportVerdict>)> done) override {
    const std::string key = report.cluster_id + report.attempt + (report.result == UpdateResult::kStarted ? "/start" : "/end");
    const bool seen = attempts_.count(key) > 0;
    attempts_.insert(key);
    ++submitted;
    done(ReportVerdict{seen ? ReportVerdict::Kind::kDuplicate : ReportVerdict::Kind::kRecorded, ""});
  }
  int submitted = 0;

 private:
  std::set<std::string> attempts_;
};

struct Replica {
  Replica(env::Clock& clock, PollReceipts receipts, int per_day = 24, double per_second = 500)
      : sink(std::make_shared<TakingSink>()),
        intake(sink, Options(per_day, per_second), clock, metrics, std::move(receipts)) {
    intake.SetEdgeCheck([](const UpdateReport&, std::function<void(Status)> done) { done(Status::OK()); });
  }
  static ReportIntakeOptions Options(int per_day, double per_second) {
    ReportIntakeOptions o;
    o.per_cluster_per_day = per_day;
    o.max_per_second = per_second;
    o.sightings = 1024;
    return o;
  }
  // A poll answered, as the policy engine's graph path records it: the receipt it answers.
  std::string Poll(const std::string& id, const std::string& version, const std::string& receipt) {
    const int64_t now = intake.SawPoll(id, version);
    return intake.receipts().Next(receipt, id, version, now);
  }
  // The report's status and body.
  std::pair<int, std::string> Report(const UpdateReport& report, const std::optional<std::string>& receipt) {
    http_server::Request request;
    request.method = "POST";
    request.path = "/v1/reports";
    request.query = "id=" + report.cluster_id;
    request.headers["Content-Type"] = "application/json";
    if (receipt) request.headers[std::string(kPollReceiptHeader)] = *receipt;
    request.body = EncodeUpdateReport(report);
    std::pair<int, std::string> out{0, ""};
    intake.Handle(request, [&](http_server::Response r) { out = {r.status, r.body ? *r.body : ""}; });
    return out;
  }

  http_server::Registry metrics{"test_"};
  std::shared_ptr<TakingSink> sink;
  ReportIntake intake;
};

int64_t Seconds(env::Clock& clock) { return std::chrono::duration_cast<std::chrono::seconds>(clock.Now().time_since_epoch()).count(); }

class ReportIntakeReceiptTest : public ::testing::Test {
 protected:
  // Cluster n polls at 4.13.1 `polls` times three minutes apart, every poll answered by
  // replica a; returns the receipt it holds.
  std::string PollAtA(int n, int polls) {
    std::string receipt;
    for (int i = 0; i < polls; ++i) {
      if (i > 0) clock_.Advance(180s);
      receipt = a_.Poll(testing::TestClusterId(n), "4.13.1", receipt);
    }
    return receipt;
  }
  UpdateReport Report(int n, const std::string& attempt = "a1") {
    return testing::TestReport(n, true, attempt, Seconds(clock_));
  }

  env::ManualClock clock_;
  PollReceipts shared_ = *PollReceipts::FromKey(std::string(32, 's'));
  Replica a_{clock_, shared_}, b_{clock_, shared_};
};

TEST_F(ReportIntakeReceiptTest, AReplicaThatNeverSawTheClusterAdmitsItsReportByReceipt) {
  const std::string receipt = PollAtA(1, 3);
  clock_.Advance(1800s);
  EXPECT_EQ(b_.Report(Report(1), std::nullopt).first, 403) << "b never saw cluster 1 poll";
  auto refused = b_.Report(Report(1), "");
  EXPECT_EQ(refused.first, 403);
  EXPECT_NE(refused.second.find("unknown_poller"), std::string::npos) << refused.second;
  auto taken = b_.Report(Report(1), receipt);
  EXPECT_EQ(taken.first, 200) << taken.second;
  EXPECT_EQ(taken.second, R"({"status":"accepted"})");
  EXPECT_EQ(b_.sink->submitted, 1);
  // a admits it by its own sightings, with or without the receipt.
  EXPECT_EQ(a_.Report(Report(1, "a2"), std::nullopt).first, 200);
}

TEST_F(ReportIntakeReceiptTest, AReceiptProvesNoMoreThanThePollsItCounts) {
  const std::string young = PollAtA(1, 3);
  EXPECT_EQ(b_.Report(Report(1), young).first, 403) << "first poll 6 minutes ago, not 30";
  const std::string two = PollAtA(2, 2);
  clock_.Advance(1800s);
  EXPECT_EQ(b_.Report(Report(2), two).first, 403) << "two polls are not three";
  EXPECT_EQ(b_.Report(Report(1), young).first, 200) << "the same receipt, old enough now";
  // Another cluster's receipt, or one for another from-version, proves nothing here.
  EXPECT_EQ(b_.Report(Report(3), young).first, 403);
  UpdateReport from_other = Report(1, "a3");
  from_other.from = "4.13.0";
  EXPECT_EQ(b_.Report(from_other, young).first, 403);
  // A replica of another key (a service elsewhere, or a forgotten key file) refuses it.
  Replica stranger(clock_, *PollReceipts::FromKey(std::string(32, 'x')));
  EXPECT_EQ(stranger.Report(Report(1, "a4"), young).first, 403);
  // And a day after its last poll it proves nothing any more.
  clock_.Advance(86400s);
  EXPECT_EQ(b_.Report(Report(1, "a5"), young).first, 403);
}

TEST_F(ReportIntakeReceiptTest, TheDailyAllowanceHoldsForIdsAdmittedByReceiptAlone) {
  Replica strict(clock_, shared_, 2);
  const std::string receipt = PollAtA(1, 3);
  clock_.Advance(1800s);
  EXPECT_EQ(strict.Report(Report(1, "a1"), receipt).first, 200);
  EXPECT_EQ(strict.Report(Report(1, "a1"), receipt).second, R"({"status":"duplicate"})") << "a resend costs nothing";
  EXPECT_EQ(strict.Report(Report(1, "a2"), receipt).first, 200);
  auto third = strict.Report(Report(1, "a3"), receipt);
  EXPECT_EQ(third.first, 429) << third.second;
  EXPECT_NE(third.second.find("rate_limited"), std::string::npos);
  clock_.Advance(86400s);
  const std::string again = strict.Poll(testing::TestClusterId(1), "4.13.1", receipt);
  EXPECT_EQ(strict.Report(Report(1, "a3"), again).first, 200) << "a new day, a new allowance";
}

// A Started report is charged to the daily allowance as a final one is (report_intake.h:
// an announced attempt that never ends counts as a failure, so starts must not be free):
// with 2 a day, one attempt's start and end use it up; a resent start costs nothing.
TEST_F(ReportIntakeReceiptTest, AStartedReportIsChargedToTheDailyAllowance) {
  Replica strict(clock_, shared_, 2);
  const std::string receipt = PollAtA(1, 3);
  clock_.Advance(1800s);
  auto started = [&](const std::string& attempt) {
    UpdateReport r = testing::TestReport(1, false, attempt, Seconds(clock_));
    r.result = UpdateResult::kStarted;
    r.ended = 0;
    return r;
  };
  auto first = strict.Report(started("a1"), receipt);
  EXPECT_EQ(first.first, 200) << first.second;
  EXPECT_EQ(strict.Report(started("a1"), receipt).second, R"({"status":"duplicate"})") << "a resend costs nothing";
  EXPECT_EQ(strict.Report(Report(1, "a1"), receipt).first, 200);
  auto next = strict.Report(started("a2"), receipt);
  EXPECT_EQ(next.first, 429) << next.second;
  EXPECT_NE(next.second.find("rate_limited"), std::string::npos) << next.second;
  EXPECT_EQ(strict.sink->submitted, 3);
}

// Someone patient enough to poll with many invented ids fills the table of allowances
// kept for ids admitted by receipt alone: the table makes room, and a genuine cluster
// that comes after is still admitted.
TEST_F(ReportIntakeReceiptTest, AFullTableOfAllowancesTurnsNoGenuineClusterAway) {
  Replica flooded(clock_, shared_, 24, 1e9);
  const int64_t first = Seconds(clock_);
  clock_.Advance(3600s);
  const int64_t now = Seconds(clock_);
  constexpr int kInvented = (1 << 16) + 100;
  for (int n = 1000; n < 1000 + kInvented; ++n) {
    const std::string id = testing::TestClusterId(n);
    std::string receipt;
    for (int64_t t : {first, first + 180, now - 60}) receipt = shared_.Next(receipt, id, "4.13.1", t);
    ASSERT_EQ(flooded.Report(Report(n), receipt).first, 200) << n;
  }
  const std::string genuine = PollAtA(1, 3);
  clock_.Advance(1800s);
  EXPECT_EQ(flooded.Report(Report(1), genuine).first, 200);
}

}  // namespace
}  // namespace cincinnati::server
