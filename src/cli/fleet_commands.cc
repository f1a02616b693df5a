#include "cli/fleet_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "core/strings.h"
#include "env/clock.h"
#include "env/file_system.h"
#include "env/scaled_clock.h"
#include "fleet/fleet_results.h"
#include "fleet/fleet_spec.h"
#include "fleet/service_child.h"
#include "fleet/simulation.h"
#include "graph-data/time_format.h"

namespace cincinnati::cli {
namespace {

using fleet::SimulationSpec;

// The flags as typed; parsed into a SimulationSpec by Parse, whose errors quote them.
struct FleetFlags {
  std::string service, releases, graph_data, start, time_scale = "1000", epoch, days = "14", clusters = "10000", seed = "1";
  std::string channel, arch = "amd64", start_versions, auto_share = "100%", delay = "0", duration = "1h", brakes = "true";
  std::string out, probe_every = "1m", parallel = "32", polls = "needed", brakes_url;
  std::vector<std::string> failures, serve_args;
};

Result<double> Number(const std::string& flag, const std::string& text, double min, double max) {
  double v = 0;
  std::string_view t = TrimWhitespace(text);
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.remove_suffix(1);
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (percent) v /= 100;
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !(v >= min && v <= max)) {
    return Status::InvalidArgument(fmt::format("{} '{}': a number from {} to {}", flag, Printable(text), min, max));
  }
  return v;
}

Result<SimulationSpec> Parse(const FleetFlags& f, fleet::PollMode& polls) {
  SimulationSpec s;
  s.service_url = f.service;
  while (!s.service_url.empty() && s.service_url.back() == '/') s.service_url.pop_back();
  s.brakes_url = f.brakes_url;
  while (!s.brakes_url.empty() && s.brakes_url.back() == '/') s.brakes_url.pop_back();
  s.releases = f.releases;
  s.graph_data = f.graph_data;
  s.serve_args = f.serve_args;
  if (f.brakes != "true" && f.brakes != "false") return Status::InvalidArgument(fmt::format("--brakes '{}': true or false", f.brakes));
  s.brakes = f.brakes == "true";
  if (f.start.empty()) {
    const auto now = env::UnixSeconds(env::RealClock());
    s.start = now - now % 60;
  } else {
    auto t = graphdata::ParseDateTime(f.start);
    if (!t.ok()) return t.status().WithContext("--start");
    s.start = *t;
  }
  CINCINNATI_ASSIGN_OR_RETURN(s.time_scale, Number("--time-scale", f.time_scale, 1e-3, 1e6));
  if (!f.epoch.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(s.epoch, Number("--epoch", f.epoch, 1, 1e11));
  }
  CINCINNATI_ASSIGN_OR_RETURN(double days, Number("--days", f.days, 1.0 / 24, 366));
  s.seconds = std::llround(days * 86400);
  CINCINNATI_ASSIGN_OR_RETURN(double clusters, Number("--clusters", f.clusters, 1, static_cast<double>(fleet::kMaxClusters)));
  s.clusters = static_cast<uint64_t>(clusters);
  CINCINNATI_ASSIGN_OR_RETURN(double seed, Number("--seed", f.seed, 0, 1e15));
  s.seed = static_cast<uint64_t>(seed);
  s.channel = f.channel;
  s.arch = f.arch;
  if (!f.start_versions.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(s.start_versions, fleet::ParseStartVersions(f.start_versions));
  }
  CINCINNATI_ASSIGN_OR_RETURN(s.auto_update_share, Number("--auto-update-share", f.auto_share, 0, 1));
  auto delay = fleet::ParseDistribution(f.delay);
  if (!delay.ok()) return delay.status().WithContext("--delay");
  s.delay = *delay;
  auto duration = fleet::ParseDistribution(f.duration);
  if (!duration.ok()) return duration.status().WithContext("--update-duration");
  s.update_duration = *duration;
  for (const std::string& text : f.failures) {
    CINCINNATI_ASSIGN_OR_RETURN(fleet::FailureRule rule, fleet::ParseFailureRule(text));
    s.failures.push_back(std::move(rule));
  }
  s.out_dir = f.out;
  auto probe = fleet::ParseSimDuration(f.probe_every);
  if (!probe.ok()) return probe.status().WithContext("--probe-every");
  s.probe_every = *probe;
  CINCINNATI_ASSIGN_OR_RETURN(double parallel, Number("--parallel", f.parallel, 1, 1024));
  s.parallel = static_cast<int>(parallel);
  if (f.polls != "needed" && f.polls != "all") return Status::InvalidArgument(fmt::format("--polls '{}': needed or all", f.polls));
  polls = f.polls == "all" ? fleet::PollMode::kAll : fleet::PollMode::kNeeded;
  CINCINNATI_RETURN_IF_ERROR(fleet::ValidateSpec(s));
  return s;
}

double RealNow() { return std::chrono::duration<double>(env::RealClock().Now().time_since_epoch()).count(); }

bool Given(const std::vector<std::string>& args, const std::string& flag) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) { return a == flag || a.starts_with(flag + "="); });
}

// `serve` on the simulator's clock, starting `grace` seconds from now so that it is ready
// when its clock reads --start; started again with more grace when it was not.
Result<std::unique_ptr<fleet::ServiceChild>> StartService(SimulationSpec& s) {
  for (const char* owned : {"--testing.now", "--testing.time_scale", "--testing.epoch", "--reports.state_dir", "--testing.ports_file"}) {
    if (Given(s.serve_args, owned)) return Status::InvalidArgument(fmt::format("--serve-arg {}: the simulator sets it", owned));
  }
  const std::string dir = s.out_dir + "/service";
  double grace = 2;
  for (int attempt = 0;; ++attempt) {
    // A previous run's reports must not count: not removed, no run.
    CINCINNATI_RETURN_IF_ERROR(env::DefaultFileSystem().RemoveTree(dir).WithContext("removing the previous run's service"));
    s.epoch = RealNow() + grace;
    std::vector<std::string> args = {"--releases", s.releases, "--graph-data", s.graph_data,
                                     "--testing.now", graphdata::FormatDateTime(s.start),
                                     "--testing.time_scale", fmt::format("{}", s.time_scale),
                                     "--testing.epoch", fmt::format("{:.6f}", s.epoch),
                                     "--reports.state_dir", dir,
                                     "--brakes.enabled", s.brakes ? "true" : "false"};
    // Brake files name a risk URL graph-data's check accepts; nobody follows it here.
    if (!Given(s.serve_args, "--brakes.url_base")) args.insert(args.end(), {"--brakes.url_base", "https://simulated-fleet.invalid/v1/brakes"});
    // Clusters report once they have polled at `from` at all: the simulator sends only the
    // polls that can change what a cluster does (a real agent's polls every 2 to 4 minutes
    // would pass the service's checks), and a big fleet needs its every id remembered.
    if (!Given(s.serve_args, "--reports.min_poller_age_secs")) args.insert(args.end(), {"--reports.min_poller_age_secs", "0"});
    if (!Given(s.serve_args, "--reports.min_polls")) args.insert(args.end(), {"--reports.min_polls", "1"});
    if (!Given(s.serve_args, "--reports.sightings")) {
      args.insert(args.end(), {"--reports.sightings", std::to_string(std::max<uint64_t>(1 << 20, s.clusters + s.clusters / 4))});
    }
    args.insert(args.end(), s.serve_args.begin(), s.serve_args.end());
    const double launched = RealNow();
    CINCINNATI_ASSIGN_OR_RETURN(auto child, fleet::ServiceChild::Start(args, dir, std::chrono::seconds(300)));
    if (RealNow() < s.epoch) return child;
    if (attempt == 3) return Status::Internal(fmt::format("the service took {:.1f} s to start, again", RealNow() - launched));
    grace = (RealNow() - launched) * 1.5 + 1;
    std::cerr << fmt::format("fleet: the service took {:.1f} s to start; starting it again with {:.1f} s to spare\n",
                             RealNow() - launched, grace);
    child->Stop();
  }
}

Status Run(const FleetFlags& flags, bool& flag_error) {
  fleet::PollMode polls = fleet::PollMode::kNeeded;
  auto parsed = Parse(flags, polls);
  flag_error = !parsed.ok();
  if (!parsed.ok()) return parsed.status();
  SimulationSpec s = std::move(parsed).value();
  CINCINNATI_RETURN_IF_ERROR(env::DefaultFileSystem().CreateDirectories(s.out_dir).WithContext("--out"));
  std::unique_ptr<fleet::ServiceChild> child;
  std::string base = s.service_url;
  if (base.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(child, StartService(s));
    base = child->base_url();
    std::cerr << fmt::format("fleet: serve on {} (log {})\n", base, child->log_path());
  }
  using namespace std::chrono;
  const env::ScaledClock clock(system_clock::time_point(seconds(s.start)), s.time_scale,
                               system_clock::time_point(duration_cast<system_clock::duration>(duration<double>(s.epoch))));
  // Against a running service the run starts at its clock's reading now (or at --start).
  const int64_t begin =
      std::max<int64_t>(s.start, static_cast<int64_t>(std::ceil(duration<double>(clock.Now().time_since_epoch()).count())));
  fleet::Simulation simulation(s, polls, base, clock, begin, std::cerr);
  if (child) simulation.SetServiceCheck([&child] { return child->Running(); });
  auto results = simulation.Run();
  if (!results.ok() && child) std::cerr << "fleet: the service's log ends:\n" << child->LogTail() << '\n';
  if (child && child->Stop() != 0) std::cerr << "fleet: the service did not stop cleanly; see " << child->log_path() << '\n';
  if (!results.ok()) return results.status();
  CINCINNATI_RETURN_IF_ERROR(fleet::WriteOutputs(*results, s.out_dir));
  fleet::PrintSummary(*results, std::cout);
  return Status::OK();
}

}  // namespace

void RegisterFleetCommands(CLI::App& app, int& exit_code) {
  CLI::App* fleet = app.add_subcommand("fleet", "Simulate a fleet of clusters against an update service");
  fleet->require_subcommand(1);
  auto f = std::make_shared<FleetFlags>();
  CLI::App* sim = fleet->add_subcommand(
      "simulate", "Run simulated clusters that poll, update, fail and report, on a simulated clock shared with the service");
  sim->add_option("--service", f->service, "A running service's {prefix} URL (started with the same clock flags)");
  sim->add_option("--releases", f->releases, "Start `cincinnati serve` with these releases")->type_name("PATH");
  sim->add_option("--graph-data", f->graph_data, "... and this graph-data directory")->type_name("DIR");
  sim->add_option("--start", f->start, "Simulated time at the start (RFC 3339; default: now, to the minute)")->type_name("TIME");
  sim->add_option("--time-scale", f->time_scale, "Simulated seconds per real second")->capture_default_str();
  sim->add_option("--brakes-url", f->brakes_url, "With --service as a policy engine: its graph builder's {prefix} URL, where brakes are listed")
      ->type_name("URL");
  sim->add_option("--epoch", f->epoch, "With --service: the real Unix time at which its clock read --start")->type_name("SECONDS");
  sim->add_option("--days", f->days, "Simulated days to run")->capture_default_str();
  sim->add_option("--clusters", f->clusters, "Clusters in the fleet (up to 10,000,000)")->capture_default_str();
  sim->add_option("--seed", f->seed, "Seed of every draw (ids, intervals, versions, delays, failures)")->capture_default_str();
  sim->add_option("--channel", f->channel, "The channel every cluster follows")->required();
  sim->add_option("--arch", f->arch, "The clusters' architecture")->capture_default_str();
  sim->add_option("--start-versions", f->start_versions, "Versions at the start, e.g. '4.13.1=70%,4.13.0=30%'")->required();
  sim->add_option("--auto-update-share", f->auto_share, "Share of clusters that take the newest recommended update")
      ->capture_default_str();
  sim->add_option("--delay", f->delay, "Admin delay before taking an update: 0, 6h, exp:6h, uniform:0h-48h")->capture_default_str();
  sim->add_option("--update-duration", f->duration, "How long an update takes: 1h, uniform:30m-90m, exp:1h")->capture_default_str();
  sim->add_option("--failure", f->failures, "A failing edge: 'FROM->TO: 20%, component=network[, reason=...]' (repeatable)");
  sim->add_option("--brakes", f->brakes, "With the service it starts: --brakes.enabled (true or false)")->capture_default_str();
  sim->add_option("--serve-arg", f->serve_args, "An extra argument for `cincinnati serve`, written --serve-arg=--flag=value (repeatable)")->allow_extra_args(false);
  sim->add_option("--out", f->out, "Output directory (versions.csv, adoption.csv, adoption.svg, summary.json, service/)")->required();
  sim->add_option("--probe-every", f->probe_every, "Simulated time between probes of the channel's answer")->capture_default_str();
  sim->add_option("--parallel", f->parallel, "Graph requests in flight at once (reports: four times as many)")->capture_default_str();
  sim->add_option("--polls", f->polls, "needed: only polls whose answer can change anything; all: every poll (load, and "
                  "what a --service with the default report checks needs: clusters that polled 3 times over 30 minutes)")
      ->capture_default_str();
  sim->callback([f, &exit_code] {
    bool flag_error = false;
    Status st = Run(*f, flag_error);
    if (!st.ok()) {
      std::cerr << "error: " << st.message() << '\n';
      exit_code = flag_error ? 2 : 1;
    }
  });
}

}  // namespace cincinnati::cli
