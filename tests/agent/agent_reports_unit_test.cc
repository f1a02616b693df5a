// Update reports, the agent's side, in process on a ManualClock: the outbox
// against a real HTTP receiver on 127.0.0.1 (back-off, Retry-After, what is dropped),
// the runner's attempts (ids, ends, once a day for a repeated refusal, kept across a
// restart), and the agent queuing a report before it marks the attempt reported.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>

#include "agent/agent.h"
#include "agent/report_outbox.h"
#include "agent/update_runner.h"
#include "agent_reports_receiver.h"
#include "env/clock.h"
#include "service_util.h"

namespace cincinnati::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::ReportReceiver;
using testing::TempDir;
using Answer = ReportReceiver::Answer;

constexpr char kCluster[] = "0f1e2d3c-4b5a-4697-8876-a5b4c3d2e1f0";

UpdateReport Sample(const std::string& attempt, int64_t ended) {
  UpdateReport r;
  r.cluster_id = kCluster;
  r.attempt = attempt;
  r.from = "4.1.0";
  r.to = "4.1.1";
  r.arch = "amd64";
  r.channel = "stable-4.1";
  r.result = UpdateResult::kFailed;
  r.component = "ingress";
  r.reason = "ClusterOperatorDegraded";
  r.started = ended - 600;
  r.ended = ended;
  return r;
}

int64_t Seconds(env::Clock& clock) { return std::chrono::duration_cast<std::chrono::seconds>(clock.Now().time_since_epoch()).count(); }

class AgentReportsOutboxTest : public ::testing::Test {
 protected:
  ReportOutboxOptions Options(const std::string& url, uint64_t seed = 7) {
    ReportOutboxOptions o;
    o.url = url;
    o.seed = seed;
    return o;
  }
  size_t Files() {
    size_t n = 0;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir_ / "reports", ec); !ec && it != fs::directory_iterator(); ++it) ++n;
    return n;
  }
  // Seconds from now until the outbox's next try.
  int64_t Wait(ReportOutbox& outbox) {
    return std::chrono::duration_cast<std::chrono::seconds>(outbox.NextDue() - clock_.Now()).count();
  }

  TempDir dir_;
  FileObjectStore store_{dir_.path()};
  env::ManualClock clock_;
  ReportReceiver receiver_;
};

TEST_F(AgentReportsOutboxTest, AReportTheServiceTakesIsPostedOnceAndDeleted) {
  ReportOutbox outbox(store_, Options(receiver_.url()), clock_);
  const UpdateReport report = Sample("00112233445566778899aabbccddeeff", Seconds(clock_));
  ASSERT_TRUE(outbox.Enqueue(report).ok());
  ASSERT_TRUE(outbox.Enqueue(report).ok()) << "queuing the same attempt again rewrites its file";
  EXPECT_EQ(Files(), 1u);
  EXPECT_EQ(outbox.stats().pending, 1);
  EXPECT_LE(outbox.NextDue(), clock_.Now()) << "due at once";

  EXPECT_EQ(outbox.SendDue(), 1u);
  const auto got = receiver_.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].method, "POST");
  EXPECT_EQ(got[0].path, "/api/upgrades_info/v1/reports");
  EXPECT_EQ(got[0].query, std::string("id=") + kCluster);
  EXPECT_EQ(got[0].content_type, "application/json");
  EXPECT_EQ(got[0].body, EncodeUpdateReport(report));
  EXPECT_EQ(Files(), 0u);
  const auto stats = outbox.stats();
  EXPECT_EQ(stats.pending, 0);
  EXPECT_EQ(stats.sent, 1);
  EXPECT_EQ(stats.send_errors, 0);
  EXPECT_EQ(outbox.NextDue(), std::chrono::system_clock::time_point::max());
  EXPECT_EQ(outbox.SendDue(), 0u);
  EXPECT_EQ(receiver_.count(), 1u);

  // Off (no URL): nothing is sent.
  ReportOutbox off(store_, Options(""), clock_);
  ASSERT_TRUE(off.Enqueue(report).ok());
  EXPECT_EQ(off.SendDue(), 0u);
  EXPECT_EQ(receiver_.count(), 1u);
}

// 503s in a row back off 30 s, 60 s, ... up to an hour, each drawn in [half, whole] on
// the injected clock; the same seed draws the same waits. Retry-After wins when given.
TEST_F(AgentReportsOutboxTest, FailuresBackOffOnTheClockAndRetryAfterIsHonoured) {
  receiver_.SetDefault({503, "busy", ""});
  auto waits = [&](uint64_t seed) {
    TempDir dir;
    FileObjectStore store(dir.path());
    ReportOutbox outbox(store, Options(receiver_.url(), seed), clock_);
    EXPECT_TRUE(outbox.Enqueue(Sample("0a", Seconds(clock_))).ok());
    EXPECT_TRUE(outbox.Enqueue(Sample("0b", Seconds(clock_))).ok());
    std::vector<int64_t> out;
    for (int i = 0; i < 10; ++i) {
      const size_t before = receiver_.count();
      EXPECT_EQ(outbox.SendDue(), 1u) << "an endpoint failure ends the pass";
      EXPECT_EQ(receiver_.count(), before + 1);
      out.push_back(Wait(outbox));
      clock_.Advance(std::chrono::seconds(out.back() - 1));
      EXPECT_EQ(outbox.SendDue(), 0u) << "not due a second early";
      clock_.Advance(1s);
    }
    EXPECT_EQ(outbox.stats().send_errors, 10);
    EXPECT_EQ(outbox.stats().pending, 2);
    return out;
  };
  const std::vector<int64_t> first = waits(7);
  int64_t whole = 30;
  for (int64_t w : first) {
    EXPECT_GE(w, whole / 2);
    EXPECT_LE(w, whole);
    whole = std::min<int64_t>(whole * 2, 3600);
  }
  EXPECT_EQ(waits(7), first) << "seeded: the same waits";
  EXPECT_NE(waits(8), first) << "another seed, other waits";

  ReportOutbox outbox(store_, Options(receiver_.url()), clock_);
  ASSERT_TRUE(outbox.Enqueue(Sample("0c", Seconds(clock_))).ok());
  receiver_.Queue({429, "slow down", "120"});
  outbox.SendDue();
  EXPECT_EQ(Wait(outbox), 120);
  clock_.Advance(120s);
  receiver_.Queue({503, "busy", "Thu, 01 Jan 2099 00:00:00 GMT"});
  outbox.SendDue();
  EXPECT_EQ(Wait(outbox), 3600) << "a Retry-After is honoured up to the back-off's cap";
  clock_.Advance(3600s);
  receiver_.Queue({429, "slow down", "0"});
  outbox.SendDue();
  EXPECT_EQ(Wait(outbox), 5) << "and not below 5 s: a hostile service cannot make the agent post in a loop";
  clock_.Advance(5s);
  receiver_.Queue({200, "{}", ""});
  EXPECT_EQ(outbox.SendDue(), 1u);
  EXPECT_EQ(outbox.stats().sent, 1);
  EXPECT_EQ(outbox.stats().pending, 0);

  // No answer at all (nothing listens): the same back-off.
  ReportOutbox dead(store_, Options("http://127.0.0.1:1/v1/reports"), clock_);
  ASSERT_TRUE(dead.Enqueue(Sample("0d", Seconds(clock_))).ok());
  EXPECT_EQ(dead.SendDue(), 1u);
  EXPECT_EQ(dead.stats().send_errors, 1);
  EXPECT_GE(Wait(dead), 15);
  EXPECT_LE(Wait(dead), 30);
}

TEST_F(AgentReportsOutboxTest, RefusedExpiredAndUnreadableReportsAreDroppedAndCounted) {
  ReportOutbox outbox(store_, Options(receiver_.url()), clock_);
  // 400: the service refuses this report; dropped after one try. A 403 for another
  // reason (a proxy) or a 404 (a service without reports yet): the endpoint cannot take
  // reports now, and the report waits.
  ASSERT_TRUE(outbox.Enqueue(Sample("01", Seconds(clock_))).ok());
  ASSERT_TRUE(outbox.Enqueue(Sample("02", Seconds(clock_))).ok());
  receiver_.Queue({400, R"({"kind":"malformed"})", ""});
  receiver_.Queue({403, R"({"reason":"forbidden"})", ""});
  EXPECT_EQ(outbox.SendDue(), 2u);
  EXPECT_EQ(outbox.stats().rejected, 1);
  EXPECT_EQ(outbox.stats().pending, 1);
  EXPECT_EQ(Files(), 1u);
  EXPECT_EQ(outbox.SendDue(), 0u);
  clock_.Advance(std::chrono::seconds(Wait(outbox)));
  receiver_.Queue({404, "not found", ""});
  EXPECT_EQ(outbox.SendDue(), 1u);
  EXPECT_EQ(outbox.stats().pending, 1);
  clock_.Advance(std::chrono::seconds(Wait(outbox)));
  EXPECT_EQ(outbox.SendDue(), 1u);  // the receiver's default: taken
  EXPECT_EQ(outbox.stats().pending, 0);
  EXPECT_EQ(outbox.stats().sent, 1);
  EXPECT_EQ(receiver_.count(), 4u);

  // 403 unknown_poller: that report alone waits; the next one goes in the same pass.
  ASSERT_TRUE(outbox.Enqueue(Sample("03", Seconds(clock_))).ok());
  ASSERT_TRUE(outbox.Enqueue(Sample("04", Seconds(clock_))).ok());
  receiver_.Queue({403, R"({"kind":"unknown_poller","value":"no poll at 4.1.0 seen"})", ""});
  EXPECT_EQ(outbox.SendDue(), 2u);
  EXPECT_EQ(outbox.stats().sent, 2);
  EXPECT_EQ(outbox.stats().pending, 1);
  EXPECT_GE(Wait(outbox), 15);
  EXPECT_LE(Wait(outbox), 30);
  clock_.Advance(std::chrono::seconds(Wait(outbox)));
  EXPECT_EQ(outbox.SendDue(), 1u);
  EXPECT_EQ(outbox.stats().pending, 0);
  EXPECT_EQ(outbox.stats().sent, 3);

  // Ended more than 7 days ago, or unreadable: dropped without a request.
  const size_t posts = receiver_.count();
  ASSERT_TRUE(outbox.Enqueue(Sample("05", Seconds(clock_) - 8 * 24 * 3600)).ok());
  testing::WriteFile(dir_ / "reports" / "06.json", R"({"clusterID":"not a report"})");
  ReportOutbox reopened(store_, Options(receiver_.url()), clock_);
  EXPECT_EQ(reopened.stats().pending, 2);
  reopened.SendDue();
  EXPECT_EQ(receiver_.count(), posts);
  EXPECT_EQ(reopened.stats().expired, 1);
  EXPECT_EQ(reopened.stats().invalid, 1);
  EXPECT_EQ(Files(), 0u);

  // At most 8 tries a pass; the rest are due at once, for the next pass.
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(reopened.Enqueue(Sample(fmt::format("1{}", i), Seconds(clock_))).ok());
  EXPECT_EQ(reopened.SendDue(), 8u);
  EXPECT_LE(reopened.NextDue(), clock_.Now());
  EXPECT_EQ(reopened.SendDue(), 2u);
  EXPECT_EQ(reopened.stats().pending, 0);
}

// Back-off lives in memory: a new process sends what an earlier one queued, at once.
TEST_F(AgentReportsOutboxTest, ARestartSendsWhatWasQueuedAtOnce) {
  receiver_.Queue({503, "busy", ""});
  {
    ReportOutbox outbox(store_, Options(receiver_.url()), clock_);
    ASSERT_TRUE(outbox.Enqueue(Sample("0e", Seconds(clock_))).ok());
    outbox.SendDue();
    EXPECT_GE(Wait(outbox), 15);
  }
  ReportOutbox restarted(store_, Options(receiver_.url()), clock_);
  EXPECT_EQ(restarted.stats().pending, 1);
  EXPECT_EQ(restarted.SendDue(), 1u);
  ASSERT_EQ(receiver_.taken().size(), 1u);
  EXPECT_EQ(receiver_.taken()[0].attempt, "0e");
  EXPECT_EQ(Files(), 0u);
}

// An attempt begins at Start and at each retry, ends once, and stays unreported until
// marked so, across a restart (a kill -9 before the mark queues the same report again).
// A refusal repeated for the same reason is reported once a day.
TEST(AgentReportsAttemptTest, AttemptsBeginEndAndAreMarkedOnceAcrossRestarts) {
  TempDir dir;
  FileObjectStore store(dir.path());
  ComponentObjects components(store);
  env::ManualClock clock;
  UpdateOptions options;
  options.payload_root = (dir / "payloads").string();
  options.arch = "arm64";
  ClusterVersion cv;
  cv.spec.cluster_id = kCluster;
  cv.spec.channel = "stable-4.1";
  cv.status.desired = Release{"4.1.0", "example.com/ocp@sha256:" + std::string(64, '0'), "", {}, false};
  ResolvedTarget target;
  target.release = Release{"4.1.1", "example.com/ocp@sha256:" + std::string(64, '1'), "", {}, false};

  UpdateRunner runner(store, components, options, clock);
  ASSERT_TRUE(runner.Load().ok());
  EXPECT_FALSE(runner.UnreportedEnd()) << "no attempt yet";
  runner.Step(cv, target, false);  // nothing can verify it: refused
  const UpdateProgress& p = runner.progress();
  ASSERT_EQ(p.phase, UpdatePhase::kFailed);
  EXPECT_TRUE(std::regex_match(p.attempt.id, std::regex("[0-9a-f]{32}"))) << p.attempt.id;
  EXPECT_EQ(p.attempt.from_version, "4.1.0");
  EXPECT_EQ(p.attempt.channel, "stable-4.1");
  EXPECT_EQ(p.attempt.arch, "arm64");
  EXPECT_EQ(p.attempt.result, "Failed");
  EXPECT_EQ(p.attempt.result_reason, "ImageVerificationFailed");
  EXPECT_EQ(p.attempt.result_component, "");
  ASSERT_TRUE(runner.UnreportedEnd());
  const std::string first = p.attempt.id;
  auto report = ReportOfAttempt(*runner.UnreportedEnd(), kCluster);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->to, "4.1.1");
  EXPECT_EQ(report->result, UpdateResult::kFailed);
  EXPECT_EQ(report->started, report->ended);

  UpdateRunner restarted(store, components, options, clock);  // as after a kill -9 before the mark
  ASSERT_TRUE(restarted.Load().ok());
  ASSERT_TRUE(restarted.UnreportedEnd());
  EXPECT_EQ(restarted.UnreportedEnd()->attempt.id, first) << "the same attempt, so the same report";
  ASSERT_TRUE(restarted.MarkReported().ok());
  UpdateRunner again(store, components, options, clock);
  ASSERT_TRUE(again.Load().ok());
  EXPECT_FALSE(again.UnreportedEnd()) << "marked, and saved so";

  // The retry (after --update-retry) is a new attempt, refused for the same reason:
  // not reported again today.
  clock.Advance(61s);
  again.Step(cv, target, false);
  EXPECT_NE(again.progress().attempt.id, first);
  EXPECT_EQ(again.progress().attempt.result, "Failed");
  EXPECT_FALSE(again.UnreportedEnd());
  // A day later it is.
  clock.Advance(25h);
  again.Step(cv, target, false);
  ASSERT_TRUE(again.UnreportedEnd());
  EXPECT_EQ(again.UnreportedEnd()->attempt.result_reason, "ImageVerificationFailed");
}

TEST(AgentReportsAttemptTest, TheAttemptFieldsRoundTripAndAnOlderProgressReads) {
  UpdateProgress p;
  p.phase = UpdatePhase::kApplying;
  p.attempt.id = std::string(32, 'a');
  p.attempt.from_version = "4.1.0", p.attempt.from_image = "r@sha256:0";
  p.attempt.channel = "stable-4.1", p.attempt.arch = "amd64";
  p.attempt.degraded_since = "2026-01-01T00:00:00Z", p.attempt.ended = "2026-01-01T00:10:00Z";
  p.attempt.result = "Failed", p.attempt.result_component = "ingress";
  p.attempt.result_reason = "ClusterOperatorDegraded";
  p.attempt.reported = true;
  p.last_refusal.key = "r@sha256:1 ImageVerificationFailed", p.last_refusal.at = 1767225600;
  auto back = UpdateProgressFromJson(ToJson(p));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(kube::WriteJson(ToJson(*back)), kube::WriteJson(ToJson(p)));

  auto older = UpdateProgressFromJson(*kube::ParseJson(R"({"phase":"Applying","image":"r@sha256:0","version":"4.1.1",)"
                                                       R"("nextGroup":2,"started":"2026-01-01T00:00:00Z"})"));
  ASSERT_TRUE(older.ok()) << older.status().message();
  EXPECT_EQ(older->attempt.id, "");
  EXPECT_FALSE(older->attempt.reported);
  EXPECT_FALSE(UpdateProgressFromJson(*kube::ParseJson(R"({"result":"Maybe"})")).ok());
}

// A store whose writes the test fails: a full disk for the reports, or for the progress
// right after a report was queued (what a kill -9 at that instant leaves on disk).
class FailingStore : public FileObjectStore {
 public:
  using FileObjectStore::FileObjectStore;
  Status Put(const std::string& kind, const std::string& name, const JsonValue& object) override {
    if (kind == "reports" && reports_full) return Status::NoSpace("write reports/" + name + ": No space left on device");
    if (kind == "agentstate" && progress_full_after_report && report_written) {
      return Status::NoSpace("write agentstate/update: No space left on device");
    }
    Status s = FileObjectStore::Put(kind, name, object);
    if (kind == "reports" && s.ok()) report_written = true;
    return s;
  }
  bool reports_full = false, progress_full_after_report = false, report_written = false;
};

TEST(AgentReportsQueueTest, AReportIsQueuedBeforeItsAttemptIsMarkedAndAFullDiskHoldsNothingBack) {
  TempDir dir;
  ReportReceiver receiver;
  receiver.SetDefault({503, "busy", ""});
  env::ManualClock clock;
  testing::WriteFile(dir / "release.json", R"({"kind":"cincinnati-metadata-v0","version":"4.1.0","payload":"r@sha256:)" +
                                               std::string(64, '0') + R"("})");
  AgentOptions options;
  options.release.release_document = (dir / "release.json").string();
  options.initial_upstream = "http://127.0.0.1:1/graph";
  options.initial_channel = "stable-4.1";
  options.poll_interval = 1h;
  options.reports.url = receiver.url();
  options.reports.seed = 1;
  auto store = std::make_shared<FailingStore>(dir.path() / "state");
  auto agent = Agent::Open(store, options, clock);
  ASSERT_TRUE(agent.ok()) << agent.status().message();
  ASSERT_TRUE((*agent)->PatchClusterVersion(*kube::ParseJson(R"({"spec":{"desiredUpdate":{"version":"4.1.1","image":"r@sha256:)" +
                                                              std::string(64, '1') + R"("}}})")).ok());
  // The disk is full for reports: the update is refused all the same (nothing of it
  // waits on the report), and the report is queued once there is room.
  store->reports_full = true;
  (void)(*agent)->RunPass();
  EXPECT_EQ((*agent)->update_progress().phase, UpdatePhase::kFailed);
  EXPECT_FALSE((*agent)->update_progress().attempt.reported);
  EXPECT_EQ(receiver.count(), 0u);
  EXPECT_EQ(testing::MetricValue((*agent)->Metrics(), "cincinnati_agent_storage_errors_total{kind=\"no_space\"}"), 1);
  const std::string attempt = (*agent)->update_progress().attempt.id;

  // Room again, but the progress cannot be saved right after the report is queued: the
  // state on disk is what a kill -9 at that instant leaves. The service answers 503.
  store->reports_full = false;
  store->progress_full_after_report = true;
  (void)(*agent)->RunPass();
  EXPECT_TRUE(fs::exists(dir / "state" / "reports" / (attempt + ".json")));
  EXPECT_EQ(receiver.count(), 1u);
  EXPECT_EQ(testing::MetricValue((*agent)->Metrics(), "cincinnati_agent_reports_pending"), 1);
  agent->reset();

  // Restarted: the same attempt's report is queued again (the same file) and taken once.
  receiver.SetDefault({});
  auto plain = std::make_shared<FileObjectStore>(dir.path() / "state");
  auto restarted = Agent::Open(plain, options, clock);
  ASSERT_TRUE(restarted.ok()) << restarted.status().message();
  (void)(*restarted)->RunPass();
  ASSERT_EQ(receiver.taken().size(), 1u);
  EXPECT_EQ(receiver.taken()[0].attempt, attempt);
  EXPECT_EQ(receiver.taken()[0].reason, "ImageVerificationFailed");
  for (const auto& r : receiver.received()) EXPECT_NE(r.body.find(attempt), std::string::npos) << r.body;
  EXPECT_TRUE((*restarted)->update_progress().attempt.reported);
  EXPECT_FALSE(fs::exists(dir / "state" / "reports" / (attempt + ".json")));
  const std::string metrics = (*restarted)->Metrics();
  EXPECT_EQ(testing::MetricValue(metrics, "cincinnati_agent_reports_sent_total"), 1) << metrics;
  EXPECT_EQ(testing::MetricValue(metrics, "cincinnati_agent_reports_pending"), 0);
  (void)(*restarted)->RunPass();
  EXPECT_EQ(receiver.count(), 2u) << "nothing more is sent";
}

}  // namespace
}  // namespace cincinnati::agent
