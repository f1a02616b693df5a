// `cincinnati fleet simulate`: its parsers, the digests it reads answers
// into, and whole runs against the `serve` it starts (real processes, real HTTP on
// 127.0.0.1, a simulated clock both share): a failing edge is braked and later clusters
// do not take it, more clusters fail without brakes, phased clusters take an edge at their
// own instants, the outputs add up, and wrong flags are clear errors.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/date_time.h"
#include "fleet/answer_digest.h"
#include "fleet/fleet_random.h"
#include "fleet/fleet_spec.h"
#include "fleet/service_documents.h"
#include "graph-data/time_format.h"
#include "policy/phased_rollout.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati::fleet {
namespace {

namespace fs = std::filesystem;
using testing::RunCincinnati;
using testing::TempDir;

// ---- Parsers ----

TEST(FleetSpecTest, DurationsAreSecondsWithUnits) {
  EXPECT_EQ(*ParseSimDuration("0"), 0);
  EXPECT_EQ(*ParseSimDuration("90s"), 90);
  EXPECT_EQ(*ParseSimDuration("30m"), 1800);
  EXPECT_EQ(*ParseSimDuration("1h30m"), 5400);
  EXPECT_EQ(*ParseSimDuration(" 2d "), 172800);
  for (const char* bad : {"", "1", "h", "5y", "-1h", "1h-", "400d", "1.5h"}) {
    auto d = ParseSimDuration(bad);
    EXPECT_FALSE(d.ok()) << bad;
    if (!d.ok()) {
      EXPECT_NE(d.status().message().find("a duration such as"), std::string::npos) << d.status().message();
    }
  }
  EXPECT_EQ(FormatSimDuration(5400), "1h30m");
  EXPECT_EQ(FormatSimDuration(0), "0s");
}

TEST(FleetSpecTest, DistributionsAreFixedExponentialOrUniform) {
  auto fixed = ParseDistribution("6h");
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->Sample(0.3), 21600);
  auto uniform = ParseDistribution("uniform:30m-90m");
  ASSERT_TRUE(uniform.ok());
  EXPECT_EQ(uniform->Sample(0), 1800);
  EXPECT_EQ(uniform->Sample(0.5), 3600);
  EXPECT_EQ(uniform->ToString(), "uniform:30m-1h30m");
  auto exp = ParseDistribution("exp:6h");
  ASSERT_TRUE(exp.ok());
  EXPECT_EQ(exp->Sample(0), 0);
  EXPECT_NEAR(static_cast<double>(exp->Sample(0.5)), 21600 * std::log(2.0), 1);  // the median
  double sum = 0;
  for (int i = 0; i < 10000; ++i) sum += static_cast<double>(exp->Sample((i + 0.5) / 10000));
  EXPECT_NEAR(sum / 10000, 21600, 300);  // the mean
  for (const char* bad : {"uniform:5h-1h", "uniform:1h", "exp:", "normal:1h", "soon"}) {
    auto d = ParseDistribution(bad);
    EXPECT_FALSE(d.ok()) << bad;
  }
}

TEST(FleetSpecTest, FailureRulesNameAnEdgeARateAndAComponent) {
  auto rule = ParseFailureRule("4.13.1->4.13.2: 20%, component=network");
  ASSERT_TRUE(rule.ok()) << rule.status().message();
  EXPECT_EQ(rule->from, "4.13.1");
  EXPECT_EQ(rule->to, "4.13.2");
  EXPECT_DOUBLE_EQ(rule->rate, 0.2);
  EXPECT_EQ(rule->component, "network");
  EXPECT_EQ(rule->reason, "ClusterOperatorDegraded");
  auto other = ParseFailureRule("4.13.1 -> 4.14.0-rc.1 : 12.5 % , reason=ClusterOperatorNotAvailable");
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_DOUBLE_EQ(other->rate, 0.125);
  EXPECT_EQ(other->reason, "ClusterOperatorNotAvailable");
  EXPECT_EQ(other->component, "");
  for (const char* bad : {"x", "4.13.1->4.13.2", "4.13.1->4.13.2: 120%", "4.13.1->4.13.2: 20", "a->b: 20%",
                          "4.13.1->4.13.1: 20%", "4.13.1->4.13.2: 20%, colour=red", "4.13.1->4.13.2: 20%, component=Net_work",
                          "4.13.1->4.13.2: 20%, reason=degraded"}) {
    auto r = ParseFailureRule(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("--failure '"), std::string::npos) << r.status().message();
    }
  }
}

TEST(FleetSpecTest, StartVersionsAddUpToAHundredPercent) {
  auto v = ParseStartVersions("4.13.1=70%, 4.13.0=30%");
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_EQ(v->size(), 2u);
  EXPECT_EQ((*v)[0].version, "4.13.1");
  EXPECT_DOUBLE_EQ((*v)[1].share, 0.3);
  auto short_of = ParseStartVersions("4.13.1=50%");
  ASSERT_FALSE(short_of.ok());
  EXPECT_NE(short_of.status().message().find("add up to 50.0%"), std::string::npos) << short_of.status().message();
  EXPECT_FALSE(ParseStartVersions("4.13.1=50%,4.13.1=50%").ok());
  EXPECT_FALSE(ParseStartVersions("4.13=100%").ok());
  EXPECT_FALSE(ParseStartVersions("").ok());
}

TEST(FleetRandomTest, ClusterIdsAreVersionFourUuidsFromTheSeed) {
  const std::string id = ClusterId(7, 12);
  EXPECT_TRUE(policy::IsValidClusterId(id)) << id;
  EXPECT_EQ(id[14], '4');
  EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << id;
  EXPECT_EQ(id, ClusterId(7, 12));
  EXPECT_NE(id, ClusterId(7, 13));
  EXPECT_NE(id, ClusterId(8, 12));
  EXPECT_EQ(DrawUnit(1, 2, Draw::kFailure, 3, 4), DrawUnit(1, 2, Draw::kFailure, 3, 4));
  EXPECT_NE(DrawUnit(1, 2, Draw::kFailure, 3, 4), DrawUnit(1, 2, Draw::kDelay, 3, 4));
}

TEST(AnswerDigestTest, EachNodeGetsItsNewestRecommendedTargetAndConditionalEdgesAreNot) {
  VersionTable versions;
  const std::string answer = R"({"version":1,"nodes":[{"version":"4.13.0","payload":"p"},{"version":"4.13.2","payload":"p"},
      {"version":"4.13.1","payload":"p"},{"version":"4.13.3","payload":"p"}],"edges":[[0,2],[0,1],[2,1]],
      "conditionalEdges":[{"edges":[{"from":"4.13.1","to":"4.13.3"}],"risks":[]}]})";
  auto digest = DigestAnswer(answer, versions);
  ASSERT_TRUE(digest.ok()) << digest.status().message();
  EXPECT_EQ(versions.Name((*digest)->NewestFrom(versions.Find("4.13.0"))), "4.13.2");
  EXPECT_EQ(versions.Name((*digest)->NewestFrom(versions.Find("4.13.1"))), "4.13.2");
  EXPECT_EQ((*digest)->NewestFrom(versions.Find("4.13.2")), kNoVersion);
  EXPECT_EQ((*digest)->NewestFrom(versions.Find("4.13.3")), kNoVersion);
  EXPECT_EQ((*digest)->NewestFrom(kNoVersion - 1), kNoVersion);
  EXPECT_FALSE(DigestAnswer(R"({"nodes":[{"version":"4.13.0"}],"edges":[[0,1]]})", versions).ok());
  EXPECT_FALSE(DigestAnswer(R"({"nodes":[{"version":"four"}],"edges":[]})", versions).ok());
  EXPECT_FALSE(DigestAnswer("{", versions).ok());
  AnswerCache cache(2);
  cache.Put("\"a\"", *digest);
  cache.Put("\"b\"", *digest);
  EXPECT_NE(cache.Find("\"a\""), nullptr);
  cache.Put("\"c\"", *digest);  // full: starts afresh
  EXPECT_EQ(cache.Find("\"a\""), nullptr);
  EXPECT_NE(cache.Find("\"c\""), nullptr);
}

TEST(ServiceDocumentsTest, RolloutsAndBrakesAreReadStrictly) {
  auto rollouts = ParseRollouts(R"({"channel":"c","now":"2026-01-01T00:00:00Z","rollouts":[{"from":"4.13.1","to":"4.13.2",
      "share":0.5,"begin":"2026-01-01T00:00:00Z","completeAt":"2026-01-02T00:00:00Z"}]})");
  ASSERT_TRUE(rollouts.ok()) << rollouts.status().message();
  EXPECT_EQ(rollouts->now, 1767225600);
  ASSERT_EQ(rollouts->windows.size(), 1u);
  EXPECT_EQ(rollouts->windows[0].complete_at - rollouts->windows[0].begin, 86400);
  EXPECT_FALSE(ParseRollouts(R"({"now":"2026-01-01T00:00:00Z","rollouts":[{"from":"4.13.1"}]})").ok());
  auto brakes = ParseBrakes(R"({"brakes":[{"from":"4.13.1","to":"4.13.2","state":"active","since":"2026-01-01T02:00:00Z",
      "firstFailure":"2026-01-01T01:00:00Z","clusters":20,"failures":3,"lowerBound":0.06}]})");
  ASSERT_TRUE(brakes.ok()) << brakes.status().message();
  ASSERT_EQ(brakes->size(), 1u);
  EXPECT_EQ((*brakes)[0].since - (*brakes)[0].first_failure, 3600);
  EXPECT_EQ((*brakes)[0].failures, 3);
  EXPECT_FALSE(ParseBrakes(R"({"brakes":[{"from":"4.13.1"}]})").ok());
}

// ---- Whole runs ----

const fs::path kExample = testing::Examples() / "ocp-4x";
constexpr int64_t kStart = 1767225600;  // 2026-01-01T00:00:00Z
// Simulated seconds per real second. The sanitizers slow both processes down, and a
// slower clock keeps the simulator's lag as small against the run. Bounds on what takes
// real time (a republish, a request on a busy machine) are written in real seconds times
// the scale.
#ifdef CINCINNATI_SANITIZED
constexpr double kScale = 2500;
#else
constexpr double kScale = 10000;
#endif

struct Summary {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  int64_t Int(std::string_view pointer) { return root.at_pointer(pointer).get_int64().value(); }
  bool IsNull(std::string_view pointer) { return root.at_pointer(pointer).is_null(); }
  std::string Text(std::string_view pointer) { return std::string(root.at_pointer(pointer).get_string().value()); }
};

bool ReadSummary(const fs::path& out, Summary& s) {
  auto text = testing::ReadFile(out / "summary.json");
  return !text.empty() && !s.parser.parse(text).get(s.root);
}

std::vector<std::vector<std::string>> Csv(const fs::path& file) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(testing::ReadFile(file));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> row;
    std::istringstream fields(line);
    for (std::string f; std::getline(fields, f, ',');) row.push_back(f);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string Simulate(const fs::path& out, const std::string& extra) {
  return fmt::format("fleet simulate --releases {} --graph-data {} --channel stable-4.13 --start 2026-01-01T00:00:00Z "
                     "--failure '4.13.1->4.13.2: 20%, component=network' --out {} {}",
                     (kExample / "releases").string(), (kExample / "graph-data").string(), out.string(), extra);
}

// The CSVs agree with the summary: one versions.csv row per finished update, and each
// adoption.csv row counts every cluster once.
void ExpectOutputsAddUp(const fs::path& out, Summary& s) {
  const auto versions = Csv(out / "versions.csv");
  ASSERT_FALSE(versions.empty());
  EXPECT_EQ(versions[0], (std::vector<std::string>{"time", "cluster", "from", "to", "result"}));
  std::map<std::string, int64_t> results;
  int64_t on_edge = 0;
  for (size_t i = 1; i < versions.size(); ++i) {
    ASSERT_EQ(versions[i].size(), 5u);
    ++results[versions[i][4]];
    on_edge += versions[i][2] == "4.13.1" && versions[i][3] == "4.13.2";
  }
  EXPECT_EQ(results["Completed"], s.Int("/updates/completed"));
  EXPECT_EQ(results["Failed"], s.Int("/updates/failed"));
  EXPECT_EQ(results["Failed"], s.Int("/edges/0/failed"));
  EXPECT_EQ(on_edge, s.Int("/edges/0/completed") + s.Int("/edges/0/failed"));
  const auto adoption = Csv(out / "adoption.csv");
  ASSERT_GE(adoption.size(), 2u);
  const auto& header = adoption[0];
  const auto& last = adoption.back();
  int64_t clusters = 0;
  for (size_t i = 1; i < header.size() && header[i] != "failed"; ++i) clusters += std::stoll(last[i]);
  EXPECT_EQ(clusters, s.Int("/clusters"));
  const size_t failed = std::find(header.begin(), header.end(), "failed") - header.begin();
  ASSERT_LT(failed, header.size());
  EXPECT_EQ(std::stoll(last[failed]), s.Int("/failedClusters"));
  EXPECT_EQ(s.Int("/failedClusters"), s.Int("/updates/failed"));
  EXPECT_EQ(s.Int("/reports/accepted") + s.Int("/reports/duplicate"), s.Int("/updates/completed") + s.Int("/updates/failed"));
  // Started reports are counted apart (no outcomes): one per update started, bar those
  // still waiting to be sent at the end.
  int64_t starts = s.Int("/reports/started/accepted") + s.Int("/reports/started/duplicate");
  // Held by value: value() of a temporary result refers into it, which ends with the statement.
  const simdjson::dom::object refused = s.root.at_pointer("/reports/started/refused").get_object().value();
  for (auto [kind, n] : refused) starts += n.get_int64().value();
  EXPECT_LE(starts, s.Int("/updates/started"));
  EXPECT_GE(starts, s.Int("/updates/started") - s.Int("/reports/unsent"));
  EXPECT_NE(testing::ReadFile(out / "adoption.svg").find("took 4.13.1 -&gt; 4.13.2"), std::string::npos);
}

TEST(FleetSimulateTest, TheBrakeStopsTheBadEdgeWhereWithoutBrakesMoreClustersFail) {
  TempDir dir;
  const std::string fleet = fmt::format("--clusters 300 --days 1 --time-scale {} --start-versions '4.13.1=70%,4.13.0=30%' "
                                        "--delay uniform:0h-12h --update-duration uniform:30m-90m", kScale);
  auto on = RunCincinnati(Simulate(dir / "on", fleet + " --brakes true"));
  ASSERT_EQ(on.exit_code, 0) << on.err << testing::ReadFile(dir / "on" / "service" / "serve.log");
  auto off = RunCincinnati(Simulate(dir / "off", fleet + " --brakes false"));
  ASSERT_EQ(off.exit_code, 0) << off.err;
  Summary with, without;
  ASSERT_TRUE(ReadSummary(dir / "on", with));
  ASSERT_TRUE(ReadSummary(dir / "off", without));

  // With brakes: the service braked the edge, on the simulated clock, soon after the rule
  // was crossed, and clusters that meant to take it later found it gone.
  ASSERT_FALSE(with.IsNull("/edges/0/brake")) << on.out;
  const int64_t since = graphdata::ParseDateTime(with.Text("/edges/0/brake/since")).value();
  const int64_t crossed = graphdata::ParseDateTime(with.Text("/edges/0/ruleCrossed")).value();
  EXPECT_GT(since, kStart);
  EXPECT_LT(since, kStart + 86400);
  EXPECT_GE(since, crossed);
  EXPECT_LT(since - crossed, 0.3 * kScale) << "the brake comes as soon as the rule is crossed";
  EXPECT_EQ(with.Text("/edges/0/brake/state"), "active");
  EXPECT_GE(with.Int("/edges/0/brake/clusters"), 20);
  EXPECT_GT(with.Int("/edges/0/stoppedAtStart"), 50) << on.out;
  EXPECT_LE(with.Int("/edges/0/took") - with.Int("/edges/0/tookBeforeBrake"), 5) << on.out;
  EXPECT_TRUE(fs::exists(dir / "on" / "service" / "blocked-edges" / "4.13.2-AutomaticallyBlocked_4_13_1_to_4_13_2.yaml"));
  EXPECT_NE(on.out.find("before its brake"), std::string::npos) << on.out;
  // The hourly count of clusters that took the edge stops growing an hour after the brake
  // (updates then under way still finish; none starts).
  const auto adoption = Csv(dir / "on" / "adoption.csv");
  const size_t took = std::find(adoption[0].begin(), adoption[0].end(), "took 4.13.1->4.13.2") - adoption[0].begin();
  ASSERT_LT(took, adoption[0].size());
  std::string at_brake;
  for (size_t i = 1; i < adoption.size(); ++i) {
    if (graphdata::ParseDateTime(adoption[i][0]).value() < since + 3600) continue;
    if (at_brake.empty()) at_brake = adoption[i][took];
    EXPECT_EQ(adoption[i][took], at_brake) << adoption[i][0];
  }

  // Without brakes the same fleet (same seed: the same clusters fail the same edge) keeps
  // taking the edge, and many more clusters fail.
  EXPECT_TRUE(without.IsNull("/edges/0/brake"));
  EXPECT_FALSE(without.IsNull("/edges/0/ruleCrossed")) << "the rule is crossed; nobody brakes";
  EXPECT_EQ(without.Int("/edges/0/stoppedAtStart"), 0);
  EXPECT_GT(without.Int("/edges/0/failed"), 2 * with.Int("/edges/0/failed")) << on.out << off.out;
  EXPECT_GT(without.Int("/edges/0/took"), 3 * with.Int("/edges/0/took")) << on.out << off.out;
  EXPECT_EQ(with.root.at_pointer("/reports/refused").get_object().value().size(), 0u) << on.out;
  EXPECT_EQ(with.root.at_pointer("/reports/started/refused").get_object().value().size(), 0u) << on.out;
  EXPECT_GT(with.Int("/reports/started/accepted"), 0) << on.out;

  ExpectOutputsAddUp(dir / "on", with);
  ExpectOutputsAddUp(dir / "off", without);
  // The simulator kept to the clock: its largest lag is small against the run.
  EXPECT_LT(with.root.at_pointer("/maxLagSeconds").get_double().value(), kScale) << on.out;
}

// A service that remembers 64 cluster ids (one per shard of its sightings) forgets most
// of 300 clusters' polls before their reports come: the poll receipts the simulated
// clusters carry from their polls to their reports admit them all the same.
TEST(FleetSimulateTest, PollReceiptsAdmitReportsTheServiceHasNoSightingsFor) {
  TempDir dir;
  const std::string fleet = fmt::format("--clusters 300 --days 1 --time-scale {} --start-versions '4.13.1=100%' "
                                        "--delay uniform:0h-12h --update-duration uniform:30m-90m --brakes false "
                                        "--serve-arg=--reports.sightings=64", kScale);
  const mode_t umask_before = ::umask(022);
  auto run = RunCincinnati(Simulate(dir / "out", fleet));
  ::umask(umask_before);
  ASSERT_EQ(run.exit_code, 0) << run.err << testing::ReadFile(dir / "out" / "service" / "serve.log");
  // The outputs are made to be published: the umask (022) decides their mode, as for `cp`.
  for (const char* name : {"summary.json", "adoption.csv", "adoption.svg", "versions.csv"}) {
    struct stat st {};
    ASSERT_EQ(::stat((dir / "out" / name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_mode & 0777, 0644u) << name;
  }
  Summary s;
  ASSERT_TRUE(ReadSummary(dir / "out", s));
  EXPECT_GT(s.Int("/updates/completed") + s.Int("/updates/failed"), 100) << run.out;
  EXPECT_EQ(s.root.at_pointer("/reports/refused").get_object().value().size(), 0u) << run.out;
  EXPECT_EQ(s.Int("/reports/accepted") + s.Int("/reports/duplicate"), s.Int("/updates/completed") + s.Int("/updates/failed"));
  // Started reports are counted apart (no outcomes): one per update started, bar those
  // still waiting to be sent at the end.
  int64_t starts = s.Int("/reports/started/accepted") + s.Int("/reports/started/duplicate");
  // Held by value: value() of a temporary result refers into it, which ends with the statement.
  const simdjson::dom::object refused = s.root.at_pointer("/reports/started/refused").get_object().value();
  for (auto [kind, n] : refused) starts += n.get_int64().value();
  EXPECT_LE(starts, s.Int("/updates/started"));
  EXPECT_GE(starts, s.Int("/updates/started") - s.Int("/reports/unsent"));
}

// A graph-data 2.0.0 tree: 4.13.2 starts at 02:00 and reaches stable-4.13's clusters over
// one day, each at its own instant.
void WritePhasedTree(const fs::path& root) {
  for (const char* v : {"4.13.0", "4.13.1", "4.13.2"}) {
    std::string previous = std::string(v) == "4.13.0" ? "" : std::string(v) == "4.13.1" ? R"("4.13.0")" : R"("4.13.0","4.13.1")";
    testing::WriteFile(root / "releases" / (std::string(v) + ".json"),
                       fmt::format(R"({{"kind":"cincinnati-metadata-v0","version":"{}","previous":[{}],"metadata":{{}}}})", v, previous));
  }
  testing::WriteFile(root / "graph-data" / "version", "2.0.0\n");
  testing::WriteFile(root / "graph-data" / "raw" / "metadata.json", "{}\n");
  testing::WriteFile(root / "graph-data" / "channels" / "stable-4.13.yaml",
                     "channels:\n- name: stable-4.13\n  phasedRollouts:\n  - duration: P1D\n"
                     "versions:\n- {name: 4.13.0, start: 2025-12-01T00:00:00Z}\n- {name: 4.13.1, start: 2025-12-01T00:00:00Z}\n"
                     "- {name: 4.13.2, start: 2026-01-01T02:00:00Z}\n");
  fs::create_directories(root / "graph-data" / "blocked-edges");
}

TEST(FleetSimulateTest, PhasedClustersTakeTheEdgeAtTheirOwnInstantsUntilTheBrake) {
  TempDir dir;
  WritePhasedTree(dir.path());
  const fs::path out = dir / "out";
  auto run = RunCincinnati(fmt::format(
      "fleet simulate --releases {} --graph-data {} --channel stable-4.13 --start 2026-01-01T00:00:00Z --start-versions 4.13.1=100% "
      "--clusters 400 --days 1.5 --time-scale {} --update-duration 1h --failure '4.13.1->4.13.2: 20%, component=network' "
      "--out {}",
      (dir / "releases").string(), (dir / "graph-data").string(), 1.5 * kScale, out.string()));
  ASSERT_EQ(run.exit_code, 0) << run.err << testing::ReadFile(out / "service" / "serve.log");
  Summary s;
  ASSERT_TRUE(ReadSummary(out, s));
  ASSERT_FALSE(s.IsNull("/edges/0/brake")) << run.out;
  const int64_t since = graphdata::ParseDateTime(s.Text("/edges/0/brake/since")).value();
  // Each cluster started at its own instant of the window (begin + u * 1 day), at its next
  // poll (within its 4-minute interval), when that poll's answer came back and was read:
  // the simulator measures the largest such delay (sending, the service's answer and any
  // stall of its own on a busy machine), in simulated seconds, 1.5 * kScale a real second.
  // None started before its instant.
  const int64_t begin = kStart + 7200;
  // Every poll was answered (a failed one is asked again an interval later).
  ASSERT_EQ(s.Int("/requests/errors"), 0) << run.out;
  const double answer_lag = s.root.at_pointer("/maxAnswerLagSeconds").get_double().value();
  EXPECT_LT(answer_lag / (1.5 * kScale), 10.0) << "no answer waited 10 real seconds to be read";
  const auto versions = Csv(out / "versions.csv");
  ASSERT_GT(versions.size(), 21u) << run.out;
  for (size_t i = 1; i < versions.size(); ++i) {
    const int64_t started = graphdata::ParseDateTime(versions[i][0]).value() - 3600;
    const double instant = static_cast<double>(begin) + policy::RolloutPosition(versions[i][1], "4.13.2") * 86400;
    EXPECT_GE(static_cast<double>(started), instant) << versions[i][1];
    EXPECT_LE(static_cast<double>(started), instant + 240 + answer_lag + 2) << versions[i][1];
    // The brake is served within 0.2 real s of `since` (a republish); a poll answered
    // before then starts when its answer is read.
    EXPECT_LT(started, since + 0.3 * kScale + answer_lag) << "no cluster takes the edge once its brake is served";
  }
  // The brake came early in the window: most clusters never saw the edge.
  EXPECT_LT(s.Int("/edges/0/took"), 200) << run.out;
  EXPECT_EQ(s.Int("/edges/0/took"), s.Int("/edges/0/completed") + s.Int("/edges/0/failed"));
  // Clusters asked at their own instants: about one poll per cluster that took the edge
  // (the poll that started it), not one per cluster per interval.
  EXPECT_LT(s.Int("/requests/polls") + s.Int("/requests/startPolls"), 3 * s.Int("/edges/0/took") + 50) << run.out;
}

TEST(FleetSimulateTest, ARunningServiceOnTheSameClockCanBeDriven) {
  TempDir dir;
  WritePhasedTree(dir.path());
  const double epoch = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() + 1;
  const std::string clock = fmt::format("{:.3f}", epoch), scale = fmt::format("{}", 2 * kScale);
  testing::ServiceProcess serve("serve", {"--releases", (dir / "releases").string(), "--graph-data", (dir / "graph-data").string(),
                                          "--testing.now", "2026-01-01T00:00:00Z", "--testing.time_scale", scale, "--testing.epoch",
                                          clock, "--reports.state_dir", (dir / "state").string(), "--brakes.url_base", "https://updates.example.com/api/upgrades_info/v1/brakes", "--reports.min_poller_age_secs", "0",
                                          "--reports.min_polls", "1"});
  ASSERT_TRUE(serve.running()) << serve.log();
  // Listening is not serving: the graph is there once /readyz says so.
  ASSERT_TRUE(testing::WaitFor([&] { return testing::Get(serve.url("/readyz", "status")).status == 200; }, std::chrono::seconds(60))) << serve.log();
  const std::string base = serve.url("/api/upgrades_info");
  // A wrong epoch: the service's clock and the simulator's disagree, and it says so.
  auto skewed = RunCincinnati(fmt::format("fleet simulate --service {} --start 2026-01-01T00:00:00Z --time-scale {} --epoch {:.3f} "
                                          "--channel stable-4.13 --start-versions 4.13.1=100% --clusters 10 --days 0.1 --out {}",
                                          base, scale, epoch - 3600, (dir / "skewed").string()));
  EXPECT_EQ(skewed.exit_code, 1) << skewed.err;
  EXPECT_NE(skewed.err.find("--start, --time-scale and --epoch must be the service's"), std::string::npos) << skewed.err;
  auto run = RunCincinnati(fmt::format("fleet simulate --service {} --start 2026-01-01T00:00:00Z --time-scale {} --epoch {} "
                                       "--channel stable-4.13 --start-versions 4.13.1=100% --clusters 200 --days 1.2 "
                                       "--failure '4.13.1->4.13.2: 20%' --out {}",
                                       base, scale, clock, (dir / "out").string()));
  ASSERT_EQ(run.exit_code, 0) << run.err << serve.log();
  Summary s;
  ASSERT_TRUE(ReadSummary(dir / "out", s));
  EXPECT_GT(s.Int("/edges/0/took"), 0) << run.out;
  EXPECT_GT(s.Int("/reports/accepted"), 0) << run.out;
  EXPECT_EQ(s.root.at_pointer("/reports/refused").get_object().value().size(), 0u) << run.out;
  EXPECT_EQ(serve.Stop(), 0) << serve.log();
}

TEST(FleetSimulateTest, AWrongFlagIsAClearErrorBeforeAnythingStarts) {
  TempDir dir;
  const std::string common = fmt::format("fleet simulate --releases {} --graph-data {} --channel stable-4.13 --out {} ",
                                         (kExample / "releases").string(), (kExample / "graph-data").string(), (dir / "out").string());
  struct Case {
    std::string flags, message;
  };
  for (const Case& c : std::vector<Case>{
           {"--start-versions 4.13.1=100% --failure 'x'", "--failure 'x': FROM->TO: RATE%"},
           {"--start-versions 4.13.1=100% --delay soon", "--delay: distribution 'soon'"},
           {"--start-versions 4.13.1=50%", "the shares add up to 50.0%"},
           {"--start-versions 4.13.1=100% --brakes maybe", "--brakes 'maybe': true or false"},
           {"--start-versions 4.13.1=100% --clusters 0", "--clusters '0'"},
           {"--start-versions 4.13.1=100% --serve-arg=--testing.now=2020-01-01T00:00:00Z", "the simulator sets it"},
       }) {
    auto r = RunCincinnati(common + c.flags);
    EXPECT_NE(r.exit_code, 0) << c.flags;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.flags << "\n" << r.err;
  }
  EXPECT_FALSE(fs::exists(dir / "out" / "service" / "serve.log")) << "no service was started";
  auto both = RunCincinnati("fleet simulate --service http://127.0.0.1:1 --releases x --graph-data y --channel c --start-versions 4.1.1=100% "
                            "--out " + (dir / "o2").string());
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("either --service URL or both --releases and --graph-data"), std::string::npos) << both.err;
}

TEST(FleetSimulateTest, AStartVersionTheChannelDoesNotHaveIsAnError) {
  TempDir dir;
  auto r = RunCincinnati(Simulate(dir / "out", "--clusters 10 --days 0.1 --start-versions 4.13.9=100%"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--start-versions: 4.13.9 is not a release of channel stable-4.13 (amd64) at the start"), std::string::npos)
      << r.err;
}

TEST(FleetSimulateTest, AFailureOnAnEdgeTheChannelNeverOffersIsAnError) {
  TempDir dir;
  auto r = RunCincinnati(fmt::format(
      "fleet simulate --releases {} --graph-data {} --channel stable-4.13 --start 2026-01-01T00:00:00Z "
      "--failure '4.12.9->4.13.2: 20%, component=network' --out {} --clusters 10 --days 0.1 --start-versions 4.13.1=100%",
      (kExample / "releases").string(), (kExample / "graph-data").string(), (dir / "out").string()));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--failure 4.12.9->4.13.2: 4.12.9 is not a release of channel stable-4.13 (amd64); its releases: "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("4.13.1, 4.13.2"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cincinnati::fleet
