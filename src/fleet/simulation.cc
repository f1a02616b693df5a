// The simulation's set-up, its paced loop, and its end (the service's brakes).
#include "fleet/simulation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "core/date_time.h"
#include "fleet/fleet_random.h"
#include "fleet/service_documents.h"
#include "http/client.h"

namespace cincinnati::fleet {
namespace {

constexpr int kReportLaneFactor = 4;

}  // namespace

Simulation::Simulation(const SimulationSpec& spec, PollMode polls, std::string base_url, const env::Clock& clock,
                       int64_t begin, std::ostream& log)
    : spec_(spec),
      polls_(polls),
      base_url_(std::move(base_url)),
      clock_(clock),
      begin_(begin),
      end_(begin + spec.seconds),
      log_(log) {
  tally_.next_sample = begin;
}

Simulation::~Simulation() = default;

void Simulation::AppendVersionRow(std::string_view row) {
  versions_csv_.buffer += row;
  if (versions_csv_.buffer.size() >= (size_t{1} << 20)) FlushVersions();
}

void Simulation::FlushVersions() {
  if (versions_csv_.error.ok() && versions_csv_.file && !versions_csv_.buffer.empty()) versions_csv_.error = versions_csv_.file->Append(versions_csv_.buffer);
  versions_csv_.buffer.clear();
}

double Simulation::SimNow() const {
  const std::chrono::duration<double> since = clock_.Now().time_since_epoch();
  return since.count() - static_cast<double>(begin_);
}

uint32_t Simulation::BaseTime(uint32_t t) const {
  const double now = std::floor(SimNow());
  return now > t ? static_cast<uint32_t>(std::min<double>(now, kNever - 1)) : t;
}

void Simulation::Push(uint32_t t, uint32_t who, Kind kind) {
  if (static_cast<int64_t>(t) >= spec_.seconds) return;  // past the end: never sent
  queue_.push(Event{t, who, kind});
}

void Simulation::Note(const std::string& what) {
  // Logged the first time only (a failing service would repeat itself thousands of times).
  if (notes_[what]++ == 0) log_ << "fleet: " << what << '\n';
}

std::string Simulation::GraphUrl(uint32_t c) const {
  return fmt::format("{}/graph?channel={}&arch={}&version={}&id={}", base_url_, QueryEscape(spec_.channel),
                     QueryEscape(spec_.arch), QueryEscape(versions_.Name(clusters_[c].version)), ClusterId(spec_.seed, c));
}

Status Simulation::Prepare() {
  const std::string csv = spec_.out_dir + "/versions.csv";
  auto file = env::DefaultFileSystem().NewWritableFile(csv, env::kUserFileMode);
  if (!file.ok()) return Status::IoError(fmt::format("{}: cannot create", csv));
  versions_csv_.file = std::move(file).value();
  AppendVersionRow("time,cluster,from,to,result\n");
  std::vector<std::pair<double, uint16_t>> shares;  // cumulative
  double sum = 0;
  for (const VersionShare& s : spec_.start_versions) {
    CINCINNATI_ASSIGN_OR_RETURN(uint16_t v, versions_.Intern(s.version));
    shares.emplace_back(sum += s.share, v);
  }
  // The rule the service it starts applies (fleet_results.h): wilson only when asked.
  for (size_t i = 0; i < spec_.serve_args.size(); ++i) {
    const std::string& arg = spec_.serve_args[i];
    if (arg == "--brakes.rule=wilson" || (arg == "--brakes.rule" && i + 1 < spec_.serve_args.size() && spec_.serve_args[i + 1] == "wilson")) {
      results_.wilson_rule = true;
    }
  }
  for (const FailureRule& rule : spec_.failures) {
    CINCINNATI_ASSIGN_OR_RETURN(uint16_t from, versions_.Intern(rule.from));
    CINCINNATI_ASSIGN_OR_RETURN(uint16_t to, versions_.Intern(rule.to));
    tally_.edge_keys.emplace_back(from, to);
    results_.edges.push_back(EdgeResult{.rule = rule});
  }
  tally_.per_version.assign(versions_.size(), 0);
  clusters_.resize(spec_.clusters);
  for (uint32_t c = 0; c < clusters_.size(); ++c) {
    Cluster& cl = clusters_[c];
    const double u = DrawUnit(spec_.seed, c, Draw::kStartVersion);
    cl.version = shares.back().second;
    for (const auto& [upto, v] : shares) {
      if (u < upto) {
        cl.version = v;
        break;
      }
    }
    cl.auto_update = DrawUnit(spec_.seed, c, Draw::kAutoUpdate) < spec_.auto_update_share;
    ++tally_.per_version[cl.version];
    SchedulePoll(c, 0);  // the first poll, at the cluster's phase
  }
  // Graph requests and reports in lanes of their own (fleet_http.h). Reports get four
  // times the slots: the service commits what waits in one transaction, so more reports
  // in flight make fewer, larger commits, where each report waits for the disk.
  const int graphs = spec_.parallel, reports = kReportLaneFactor * spec_.parallel;
  http_ = std::make_unique<FleetHttp>(std::vector<int>{graphs, reports},
                                      [this](std::string_view etag) { return answers_.Find(etag) != nullptr; });
  requests_.pending.resize(static_cast<size_t>(graphs + reports));
  for (int i = graphs + reports - 1; i >= 0; --i) requests_.free.push_back(static_cast<uint32_t>(i));
  CINCINNATI_RETURN_IF_ERROR(ProbeNow());
  Push(static_cast<uint32_t>(spec_.probe_every), 0, Kind::kProbe);
  return Status::OK();
}

// The channel's answer without id and its rollouts, before the first event.
Status Simulation::ProbeNow() {
  const std::string channel = QueryEscape(spec_.channel);
  auto graph = http::Get(fmt::format("{}/graph?channel={}&arch={}", base_url_, channel, QueryEscape(spec_.arch)),
                         {.headers = {"Accept: application/json"}, .timeout = std::chrono::seconds(60), .accept_gzip = true});
  if (graph.status != 200) {
    // A service still loading its graph answers 5xx; its status port's /readyz says when it is ready.
    const char* hint = graph.status >= 500 ? " (is the service ready? its status port's /readyz answers 200 once it has a graph)" : "";
    return Status::InvalidArgument(fmt::format("the service's answer for channel {} ({}): HTTP {} {}{}{}", spec_.channel, spec_.arch,
                                               graph.status, graph.error, graph.body.substr(0, 300), hint));
  }
  CINCINNATI_ASSIGN_OR_RETURN(channel_.idless, DigestAnswer(graph.body, versions_));
  channel_.idless_body = graph.body;
  if (const std::string* etag = graph.Header("ETag")) channel_.idless_etag = *etag;
  // A start version the channel does not have is a typo: its clusters would never move.
  for (const VersionShare& s : spec_.start_versions) {
    const uint16_t v = versions_.Find(s.version);
    if (std::find(channel_.idless->nodes.begin(), channel_.idless->nodes.end(), v) == channel_.idless->nodes.end()) {
      return Status::InvalidArgument(fmt::format("--start-versions: {} is not a release of channel {} ({}) at the start",
                                                 s.version, spec_.channel, spec_.arch));
    }
  }
  ++results_.probes;
  auto rollouts = http::Get(fmt::format("{}/v1/ui/rollouts?channel={}", base_url_, channel),
                            {.headers = {"Accept: application/json"}, .timeout = std::chrono::seconds(60)});
  ++results_.probes;
  if (rollouts.status == 404) {
    Note("the service has no /v1/ui/rollouts (web.enabled false?): phased instants are found by the probe only");
    return CheckFailureEdges({});
  }
  if (rollouts.status != 200) return Status::Internal(fmt::format("rollouts: HTTP {} {}", rollouts.status, rollouts.error));
  CINCINNATI_ASSIGN_OR_RETURN(RolloutsDocument doc, ParseRollouts(rollouts.body));
  // The service's clock must be ours, or every phased instant would be off.
  const double skew = static_cast<double>(doc.now) - (SimNow() + static_cast<double>(begin_));
  if (std::abs(skew) > 5 + 2 * spec_.time_scale) {
    return Status::InvalidArgument(fmt::format(
        "the service's clock reads {} where the simulator's reads {}: --start, --time-scale and --epoch must be the service's",
        FormatUnixSeconds(doc.now), FormatUnixSeconds(static_cast<int64_t>(SimNow()) + begin_)));
  }
  SetWindows(doc.windows);
  return CheckFailureEdges(doc.windows);
}

// A --failure rule on an edge the channel never offers (a typo, another channel's
// release) would run the whole simulation to say "0 clusters took it": refused at the
// start instead, naming the channel's releases. A release that arrives in a phased
// rollout (the rollouts' windows) counts as the channel's.
Status Simulation::CheckFailureEdges(const std::vector<PhasedWindow>& windows) const {
  std::set<std::string> releases;
  for (uint16_t v : channel_.idless->nodes) releases.insert(versions_.Name(v));
  for (const PhasedWindow& w : windows) releases.insert({w.from, w.to});
  for (const FailureRule& rule : spec_.failures) {
    for (const std::string& v : {rule.from, rule.to}) {
      if (releases.count(v)) continue;
      std::vector<std::string> sorted(releases.begin(), releases.end());
      std::sort(sorted.begin(), sorted.end(), VersionNameLess);
      return Status::InvalidArgument(fmt::format("--failure {}->{}: {} is not a release of channel {} ({}); its releases: {}",
                                                 rule.from, rule.to, v, spec_.channel, spec_.arch, fmt::join(sorted, ", ")));
    }
  }
  return Status::OK();
}

void Simulation::SetWindows(const std::vector<PhasedWindow>& windows) {
  channel_.windows = windows;
  channel_.windows_from.clear();
  const int64_t now = begin_ + static_cast<int64_t>(SimNow());
  for (const PhasedWindow& w : windows) {
    // A window that is over adds nothing to any cluster's answer the one without id lacks.
    if (w.complete_at <= now) continue;
    auto from = versions_.Intern(w.from);
    auto to = versions_.Intern(w.to);
    if (!from.ok() || !to.ok()) continue;
    if (channel_.windows_from.size() <= *from) channel_.windows_from.resize(*from + 1u);
    channel_.windows_from[*from].push_back(Window{*to, w.to, w.begin, w.complete_at - w.begin});
  }
}

uint32_t Simulation::Send(FleetRequest request, Pending pending) {
  const uint32_t tag = requests_.free.back();
  requests_.free.pop_back();
  requests_.pending[tag] = pending;
  request.tag = tag;
  http_->Submit(std::move(request), LaneOf(pending.kind));
  ++results_.requests;
  return tag;
}

void Simulation::Dispatch(const Event& e) {
  switch (e.kind) {
    case Kind::kProbe: {
      ++results_.probes;
      FleetRequest r{.url = fmt::format("{}/graph?channel={}&arch={}", base_url_, QueryEscape(spec_.channel), QueryEscape(spec_.arch))};
      r.if_none_match = channel_.idless_etag;
      r.may_skip_body = false;  // compared with the last one
      Send(std::move(r), Pending{.kind = Kind::kProbe, .t = e.t});
      Push(e.t + static_cast<uint32_t>(spec_.probe_every), 0, Kind::kProbe);
      return;
    }
    case Kind::kPoll: return DispatchPoll(e.who, e.t);
    case Kind::kStart: return DispatchStart(e.who, e.t);
    case Kind::kFinish: return DispatchFinish(e.who, e.t);
    case Kind::kReport: return SendReport(e.who);
  }
}

void Simulation::SampleUntil(int64_t t) {
  while (tally_.next_sample <= begin_ + t && tally_.next_sample <= end_) {
    AdoptionRow row;
    row.time = tally_.next_sample;
    row.per_version = tally_.per_version;
    row.failed = tally_.failed;
    row.updating = tally_.updating;
    for (const EdgeResult& e : results_.edges) {
      row.edge_took.push_back(e.took);
      row.edge_failed.push_back(e.failed);
    }
    results_.adoption.push_back(std::move(row));
    tally_.next_sample += 3600;
  }
}

Status Simulation::Loop() {
  std::vector<FleetResponse> done;
  const uint32_t last = static_cast<uint32_t>(spec_.seconds);
  // Checked once a real second, whatever the simulated clock's scale.
  auto checked = env::RealClock().Steady();
  while (true) {
    // A service that died would turn the rest of the run into transport errors.
    if (service_alive_ && env::RealClock().Steady() - checked > std::chrono::seconds(1)) {
      checked = env::RealClock().Steady();
      if (!service_alive_()) return Status::Internal("the service exited during the simulation");
    }
    double now = SimNow();
    while (!queue_.empty() && !http_->Full(LaneOf(queue_.top().kind)) && queue_.top().t <= now && queue_.top().t < last) {
      const Event e = queue_.top();
      queue_.pop();
      SampleUntil(e.t);
      results_.max_lag = std::max(results_.max_lag, now - e.t);
      if (LaneOf(e.kind) == 1) results_.max_report_lag = std::max(results_.max_report_lag, now - e.t);
      Dispatch(e);
      now = SimNow();
    }
    const bool more = !queue_.empty() && queue_.top().t < last;
    if (!more && http_->in_flight() == 0) break;
    // Wait for an answer, or until the next event is due (at most 50 ms: the clock is
    // read again then).
    double wait_ms = 50;
    if (more && !http_->Full(LaneOf(queue_.top().kind))) wait_ms = std::clamp((queue_.top().t - now) / spec_.time_scale * 1000, 0.0, 50.0);
    done.clear();
    http_->Run(std::chrono::milliseconds(static_cast<int64_t>(std::ceil(wait_ms))), done);
    for (FleetResponse& r : done) OnResponse(std::move(r));
  }
  // The clock runs on to the end: the samples of hours in which nothing happened.
  SampleUntil(spec_.seconds);
  return Status::OK();
}

Status Simulation::Finish(FleetResults& out) {
  if (results_.adoption.empty() || results_.adoption.back().time < end_) {
    tally_.next_sample = end_;
    SampleUntil(spec_.seconds);
  }
  const std::string brakes_base = spec_.brakes_url.empty() ? base_url_ : spec_.brakes_url;
  auto brakes = http::Get(brakes_base + "/v1/brakes", {.headers = {"Accept: application/json"}, .timeout = std::chrono::seconds(30)});
  if (brakes.status == 200) {
    CINCINNATI_ASSIGN_OR_RETURN(std::vector<ServiceBrake> list, ParseBrakes(brakes.body));
    for (EdgeResult& e : results_.edges) {
      for (const ServiceBrake& b : list) {
        if (b.from == e.rule.from && b.to == e.rule.to) e.brake = b;
      }
    }
  } else {
    Note(fmt::format("GET {}/v1/brakes: HTTP {} (the service keeps no reports? behind a policy engine, give --brakes-url)",
                     brakes_base, brakes.status));
  }
  results_.reports_unsent = reports_.queued.size() - reports_.free.size();  // still waiting for a retry
  results_.connections = http_->connections_opened();
  results_.answers_parsed = answers_.parsed();
  results_.clusters = spec_.clusters;
  results_.start = begin_;
  results_.end = end_;
  results_.time_scale = spec_.time_scale;
  results_.brakes = spec_.brakes;
  results_.channel = spec_.channel;
  results_.arch = spec_.arch;
  for (size_t v = 0; v < versions_.size(); ++v) results_.version_names.push_back(versions_.Name(static_cast<uint16_t>(v)));
  FlushVersions();
  if (!versions_csv_.error.ok()) return Status::IoError(spec_.out_dir + "/versions.csv: write failed");
  out = std::move(results_);
  return Status::OK();
}

Result<FleetResults> Simulation::Run() {
  const auto real_start = std::chrono::steady_clock::now();
  CINCINNATI_RETURN_IF_ERROR(Prepare());
  CINCINNATI_RETURN_IF_ERROR(Loop());
  FleetResults out;
  CINCINNATI_RETURN_IF_ERROR(Finish(out));
  out.real_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - real_start).count();
  return out;
}

}  // namespace cincinnati::fleet
