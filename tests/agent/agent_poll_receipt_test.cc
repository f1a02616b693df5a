// Poll receipts, the agent's side, in process: the book keeps the latest two versions'
// receipts and nothing unsafe to send back; the retriever sends the receipt held for its
// version and keeps the answer's; an attempt saves its from-version's receipt across a
// restart; the outbox keeps it in the queued file (an older file still reads) and sends
// it as the report's Cincinnati-Poll-Receipt header.
#include <gtest/gtest.h>

#include "agent/poll_receipt_book.h"
#include "agent/report_outbox.h"
#include "agent/update_retriever.h"
#include "agent/update_runner.h"
#include "agent_reports_receiver.h"
#include "env/clock.h"
#include "service_util.h"

namespace cincinnati::agent {
namespace {

using namespace std::chrono_literals;
using testing::ReportReceiver;
using testing::TempDir;

constexpr char kCluster[] = "0f1e2d3c-4b5a-4697-8876-a5b4c3d2e1f0";

TEST(AgentPollReceiptTest, TheBookKeepsTheLatestTwoVersionsAndOnlyWhatIsSafeToSendBack) {
  PollReceiptBook book;
  EXPECT_EQ(book.For("4.1.0"), "");
  book.Keep("4.1.0", "1.2.3.1.abc_-");
  book.Keep("4.1.0", "1.2.4.2.abc_-");
  book.Keep("4.1.1", "1.5.5.1.xyz");
  EXPECT_EQ(book.For("4.1.0"), "1.2.4.2.abc_-");
  EXPECT_EQ(book.For("4.1.1"), "1.5.5.1.xyz");
  book.Keep("4.1.0", "1.2.6.3.abc");  // back at the older one: both stay
  EXPECT_EQ(book.For("4.1.1"), "1.5.5.1.xyz");
  book.Keep("4.1.2", "1.7.7.1.def");
  EXPECT_EQ(book.For("4.1.1"), "") << "the third version pushes out the least recent";
  EXPECT_EQ(book.For("4.1.0"), "1.2.6.3.abc");
  for (const std::string& unsafe : {std::string("a\r\nX-Injected: 1"), std::string("a b"), std::string(201, 'a'), std::string()}) {
    book.Keep("4.1.2", unsafe);
    EXPECT_EQ(book.For("4.1.2"), "1.7.7.1.def") << unsafe;
  }
  EXPECT_EQ(book.For(""), "");
}

TEST(AgentPollReceiptTest, TheRetrieverSendsTheReceiptOfItsVersionAndKeepsTheAnswers) {
  ReportReceiver service;
  HttpGraphFetcher fetcher({}, 10s);
  env::ManualClock clock;
  PollReceiptBook book;
  RetrieverSettings settings;
  settings.poll_interval = 1min;
  settings.receipts = &book;
  UpdateRetriever retriever(fetcher, [](const std::vector<MatchingRule>&) -> Result<bool> { return false; }, clock, settings);
  GraphRequestInputs inputs{service.graph_url(), kCluster, "amd64", "4.1.0", "stable-4.1"};
  retriever.Run(inputs);
  clock.Advance(61s);
  retriever.Run(inputs);
  inputs.version = "4.1.1";
  retriever.Run(inputs);
  const auto polls = service.polls();
  ASSERT_EQ(polls.size(), 3u);
  EXPECT_EQ(polls[0].receipt, std::optional<std::string>("")) << "an empty header asks for a first receipt";
  EXPECT_EQ(polls[1].receipt, std::optional<std::string>("r-4.1.0-1"));
  EXPECT_EQ(polls[2].receipt, std::optional<std::string>("")) << "none held for the new version";
  EXPECT_EQ(book.For("4.1.0"), "r-4.1.0-2");
  EXPECT_EQ(book.For("4.1.1"), "r-4.1.1-1");

  // Without a book (an agent that sends no reports), no header at all, as the CVO.
  UpdateRetriever plain(fetcher, [](const std::vector<MatchingRule>&) -> Result<bool> { return false; }, clock, {});
  plain.Run(inputs);
  ASSERT_EQ(service.polls().size(), 4u);
  EXPECT_EQ(service.polls()[3].receipt, std::nullopt);
}

TEST(AgentPollReceiptTest, AnAttemptKeepsItsFromVersionsReceiptAcrossARestart) {
  TempDir dir;
  FileObjectStore store(dir.path());
  ComponentObjects components(store);
  env::ManualClock clock;
  PollReceiptBook book;
  book.Keep("4.1.0", "r-4.1.0-7");
  book.Keep("4.1.1", "r-4.1.1-1");
  UpdateOptions options;
  options.payload_root = (dir / "payloads").string();
  options.poll_receipts = &book;
  ClusterVersion cv;
  cv.spec.cluster_id = kCluster;
  cv.spec.channel = "stable-4.1";
  cv.status.desired = Release{"4.1.0", "example.com/ocp@sha256:" + std::string(64, '0'), "", {}, false};
  ResolvedTarget target;
  target.release = Release{"4.1.1", "example.com/ocp@sha256:" + std::string(64, '1'), "", {}, false};
  UpdateRunner runner(store, components, options, clock);
  ASSERT_TRUE(runner.Load().ok());
  runner.Step(cv, target, false);  // nothing can verify it: refused, an attempt ended
  ASSERT_TRUE(runner.UnreportedEnd());
  EXPECT_EQ(runner.UnreportedEnd()->attempt.poll_receipt, "r-4.1.0-7");

  UpdateOptions without = options;
  without.poll_receipts = nullptr;  // a new process: its book is empty
  UpdateRunner restarted(store, components, without, clock);
  ASSERT_TRUE(restarted.Load().ok());
  ASSERT_TRUE(restarted.UnreportedEnd());
  EXPECT_EQ(restarted.UnreportedEnd()->attempt.poll_receipt, "r-4.1.0-7") << "saved with the attempt";
}

UpdateReport Sample(const std::string& attempt, int64_t ended) {
  UpdateReport r;
  r.cluster_id = kCluster;
  r.attempt = attempt;
  r.from = "4.1.0";
  r.to = "4.1.1";
  r.arch = "amd64";
  r.channel = "stable-4.1";
  r.started = ended - 600;
  r.ended = ended;
  return r;
}

TEST(AgentPollReceiptTest, TheQueuedReportKeepsItsReceiptAndSendsItAsAHeader) {
  TempDir dir;
  FileObjectStore store(dir.path());
  env::ManualClock clock;
  ReportReceiver receiver;
  ReportOutboxOptions o;
  o.url = receiver.url();
  o.seed = 7;
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(clock.Now().time_since_epoch()).count();
  {
    ReportOutbox outbox(store, o, clock);
    ASSERT_TRUE(outbox.Enqueue(Sample(std::string(32, 'a'), now), "1.2.3.4.receipt").ok());
    ASSERT_TRUE(outbox.Enqueue(Sample(std::string(32, 'b'), now)).ok());
  }
  auto kept = store.Get("reports", std::string(32, 'a'));
  ASSERT_TRUE(kept.ok() && *kept);
  EXPECT_EQ(kube::TextOf(*kube::FindMember(**kept, "pollReceipt")), "1.2.3.4.receipt");
  // A file whose receipt could not go into a header (edited by hand) still sends its report.
  auto edited = *kube::ParseJson(EncodeUpdateReport(Sample(std::string(32, 'c'), now)));
  kube::SetMember(edited, "pollReceipt", kube::JsonValue("x\r\nX-Injected: 1"));
  ASSERT_TRUE(store.Put("reports", std::string(32, 'c'), edited).ok());

  ReportOutbox restarted(store, o, clock);  // sends what the files hold
  EXPECT_EQ(restarted.SendDue(), 3u);
  const auto received = receiver.received();
  ASSERT_EQ(received.size(), 3u);
  EXPECT_EQ(received[0].receipt, std::optional<std::string>("1.2.3.4.receipt"));
  EXPECT_EQ(received[1].receipt, std::nullopt) << "queued without one (an older agent's file)";
  EXPECT_EQ(received[2].receipt, std::nullopt);
  EXPECT_EQ(receiver.taken().size(), 3u) << "each body is the report alone";
  EXPECT_EQ(restarted.stats().sent, 3);
}

}  // namespace
}  // namespace cincinnati::agent
