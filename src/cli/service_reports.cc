#include "cli/service_reports.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "kube/api_access.h"
#include "reports/postgres_report_store.h"
#include "reports/report_relay.h"

namespace cincinnati::cli {
namespace {

Result<double> Number(const Settings& s, const std::string& key, double fallback) {
  if (!s.Has(key)) return fallback;
  const std::string text = s.String(key, "");
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return Status::InvalidArgument(fmt::format("{}: '{}' is not a number", key, text));
  return v;
}

Result<std::string> Token(const Settings& s, const std::string& key) {
  if (!s.Has(key)) return std::string();
  return kube::ReadTokenFile(s.String(key, ""), key);
}

// The sequential rule's prior, checked when that rule decides or when either setting is
// given (a prior set for nothing is a mistake worth saying).
Result<reports::MixturePrior> Prior(const Settings& s, const reports::BrakeSettings& settings) {
  reports::MixturePrior prior;
  CINCINNATI_ASSIGN_OR_RETURN(prior.mean, Number(s, "brakes.prior_mean", prior.mean));
  CINCINNATI_ASSIGN_OR_RETURN(prior.strength, Number(s, "brakes.prior_strength", prior.strength));
  if (settings.kind == reports::BrakeRuleKind::kSequential || s.Has("brakes.prior_mean") || s.Has("brakes.prior_strength")) {
    CINCINNATI_RETURN_IF_ERROR(reports::ValidateMixturePrior(prior, settings.rule));
  }
  return prior;
}

Result<std::unique_ptr<reports::BrakeBoard>> OpenBoard(const Settings& s, const std::string& shared, reports::BrakeSettings settings,
                                                       env::Clock& clock, http_server::Registry& metrics) {
  const std::string state_dir = s.String("reports.state_dir", "");
  if (shared.empty()) return reports::BrakeBoard::Open(state_dir, std::move(settings), clock, metrics);
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<reports::PostgresReportStore> store,
                              reports::PostgresReportStore::Open(shared, reports::ReportLedger::Options{settings.counted_reasons}));
  spdlog::info("reports and brakes on {}, shared by every graph builder that names it{}", store->Describe(),
               state_dir.empty() ? "; no brake files are written (reports.state_dir)" : "");
  return reports::BrakeBoard::Open(std::move(store), state_dir, std::move(settings), clock, metrics);
}

// Brakes other replicas decided are read within a second; edges are judged again once
// a minute as attempts cross the horizon (the sequential rule); reports older than the
// retention go once an hour (0: kept for ever).
void KeepUp(ReportParts& parts, env::Clock& clock, int64_t retention_secs) {
  auto next_prune = std::make_shared<int64_t>(0);
  auto next_redecide = std::make_shared<int64_t>(0);
  parts.upkeep.Start(std::chrono::seconds(1), [board = parts.board.get(), &clock, retention_secs, next_prune, next_redecide] {
    board->Follow();
    const int64_t now = env::UnixSeconds(clock);
    if (now >= *next_redecide) {
      *next_redecide = now + 60;
      if (auto braked = board->Redecide(); !braked.ok()) spdlog::error("brakes: {}", braked.status().message());
    }
    if (retention_secs > 0 && now >= *next_prune) {
      *next_prune = now + 3600;
      if (auto gone = board->Prune(retention_secs); !gone.ok()) spdlog::error("reports: {}", gone.status().message());
    }
    return true;
  });
}

}  // namespace

Result<std::string> PostgresUrl(const Settings& s) {
  if (s.Has("reports.postgres") && s.Has("reports.postgres_file")) {
    return Status::InvalidArgument("reports.postgres and reports.postgres_file: give one");
  }
  if (s.Has("reports.postgres")) {
    std::string url = s.String("reports.postgres", "");
    if (url.empty()) return Status::InvalidArgument("reports.postgres: empty");
    return url;
  }
  if (!s.Has("reports.postgres_file")) return std::string();
  // The same reader as a token's: at most 64 KiB, whitespace trimmed.
  CINCINNATI_ASSIGN_OR_RETURN(std::string url, kube::ReadTokenFile(s.String("reports.postgres_file", ""), "reports.postgres_file"));
  if (url.empty()) return Status::InvalidArgument("reports.postgres_file: the file is empty");
  return url;
}

std::vector<ReportFlag> ReportFlags(bool graph_builder, bool policy_engine) {
  std::vector<ReportFlag> flags = {
      {"--reports.postgres", "reports.postgres",
       "PostgreSQL URL of the state replicas share (reports, brakes and graph generations of graph builders; adoption "
       "sketches of policy engines); unset: each process keeps its own (reports.state_dir). Prefer --reports.postgres_file: "
       "a URL on the command line shows in ps"},
      {"--reports.postgres_file", "reports.postgres_file", "A file holding the PostgreSQL URL (a mounted Secret)"},
  };
  if (graph_builder) {
    std::vector<ReportFlag> graph_builder_flags = {
        {"--reports.state_dir", "reports.state_dir",
         "Keep update reports and automatic brakes here (reports.db, blocked-edges/); set, the service takes reports"},
        {"--brakes.enabled", "brakes.enabled", "Brake an edge when its reports cross the rule (true or false; default true)"},
        {"--brakes.rule", "brakes.rule",
         "How an edge is judged: sequential (the default: a sequential test on its attempts in the order they started, "
         "whose false-brake probability holds over the whole rollout; a stuck attempt counts as failed after 2 h) or "
         "wilson (the Wilson lower bound of its clusters' failure rate, at every report)"},
        {"--brakes.min_clusters", "brakes.min_clusters", "Distinct clusters an edge needs reports from before a brake (20)"},
        {"--brakes.threshold", "brakes.threshold", "Failure rate an edge must credibly exceed to be braked (0.05)"},
        {"--brakes.confidence", "brakes.confidence", "Confidence the rule brakes at (0.95)"},
        {"--brakes.prior_mean", "brakes.prior_mean",
         "The sequential rule's prior: the mean failure rate of a bad edge, above brakes.threshold and below 1 (0.12)"},
        {"--brakes.prior_strength", "brakes.prior_strength",
         "The sequential rule's prior: its strength, a + b of its Beta distribution, from 0.5 to 1000000 (50)"},
        {"--brakes.url_base", "brakes.url_base",
         "A brake's risk URL is this + /FROM-TO: the https:// address clusters reach this service's {prefix}/v1/brakes at "
         "(required with brakes on: graph-data takes only https risk URLs)"},
        {"--brakes.admin_token_file", "brakes.admin_token_file", "Bearer token needed to confirm or clear a brake"},
        {"--reports.retention_days", "reports.retention_days",
         "Reports older than this many days are deleted, hourly (90; 0: never); per-edge counts and brakes stay"},
    };
    flags.insert(flags.begin(), graph_builder_flags.begin(), graph_builder_flags.end());
  }
  if (graph_builder && !policy_engine) {
    flags.push_back({"--reports.token_file", "reports.token_file", "Bearer token policy engines forward reports with"});
  }
  if (policy_engine) {
    std::vector<ReportFlag> pe = {
        {"--reports.sighting_window_secs", "reports.sighting_window_secs",
         "A report is accepted from a cluster seen polling at its from-version within these seconds (86400)"},
        {"--reports.min_poller_age_secs", "reports.min_poller_age_secs",
         "... and first seen polling there (or at its to-version) at least these seconds ago (1800)"},
        {"--reports.min_polls", "reports.min_polls", "... at least this many times (3; agents poll every 2 to 4 minutes)"},
        {"--reports.per_cluster_per_day", "reports.per_cluster_per_day", "Reports a cluster may send per day (24)"},
        {"--reports.max_per_sec", "reports.max_per_sec", "Reports accepted per second from everyone (500)"},
        {"--reports.sightings", "reports.sightings", "Cluster ids remembered, about 77 bytes each (1048576)"},
        {"--reports.receipt_key_file", "reports.receipt_key_file",
         "A file of at least 32 random bytes, the key of the poll receipts agents carry from their polls to their "
         "reports; replicas behind one address must share it (unset: a random key per process, for a lone replica)"},
    };
    flags.insert(flags.end(), pe.begin(), pe.end());
  }
  if (policy_engine && !graph_builder) {
    std::vector<ReportFlag> pe = {
        {"--reports.enabled", "reports.enabled", "Take agents' update reports and forward them upstream (default false)"},
        {"--reports.upstream_url", "reports.upstream_url", "The graph builder's reports URL (default: the upstream's /v1/reports)"},
        {"--reports.upstream_token_file", "reports.upstream_token_file", "Bearer token for the graph builder's reports URL"},
    };
    flags.insert(flags.end(), pe.begin(), pe.end());
  }
  return flags;
}

Result<std::unique_ptr<ReportParts>> SetUpReports(const Settings& s, bool graph_builder, bool policy_engine,
                                                  const std::string& prefix,
                                                  const std::string& upstream_url, env::Clock& clock) {
  const bool serve = graph_builder && policy_engine;
  CINCINNATI_ASSIGN_OR_RETURN(bool pe_enabled, s.Bool("reports.enabled", false));
  CINCINNATI_ASSIGN_OR_RETURN(const std::string shared, PostgresUrl(s));
  const bool keeps = graph_builder && (s.Has("reports.state_dir") || !shared.empty());
  if (!keeps && !(policy_engine && !graph_builder && pe_enabled)) return std::unique_ptr<ReportParts>();
  auto parts = std::make_unique<ReportParts>(graph_builder ? "cincinnati_gb_" : "cincinnati_pe_");
  if (keeps) {
    reports::BrakeSettings settings;
    CINCINNATI_ASSIGN_OR_RETURN(settings.enabled, s.Bool("brakes.enabled", true));
    CINCINNATI_ASSIGN_OR_RETURN(settings.kind, reports::ParseBrakeRuleKind(s.String("brakes.rule", "sequential")));
    CINCINNATI_ASSIGN_OR_RETURN(uint64_t min_clusters, s.Unsigned("brakes.min_clusters", 20));
    settings.rule.min_clusters = static_cast<int64_t>(min_clusters);
    CINCINNATI_ASSIGN_OR_RETURN(settings.rule.threshold, Number(s, "brakes.threshold", 0.05));
    CINCINNATI_ASSIGN_OR_RETURN(settings.rule.confidence, Number(s, "brakes.confidence", 0.95));
    CINCINNATI_ASSIGN_OR_RETURN(settings.prior, Prior(s, settings));
    settings.url_base = s.String("brakes.url_base", "");
    CINCINNATI_ASSIGN_OR_RETURN(parts->board, OpenBoard(s, shared, settings, clock, parts->metrics));
    CINCINNATI_ASSIGN_OR_RETURN(uint64_t retention_days, s.Unsigned("reports.retention_days", 90));
    KeepUp(*parts, clock, static_cast<int64_t>(std::min<uint64_t>(retention_days, 100 * 365)) * 86400);
    server::ReportRoutesOptions routes;
    routes.path_prefix = prefix;
    routes.batches = !serve;
    CINCINNATI_ASSIGN_OR_RETURN(routes.batch_token, Token(s, "reports.token_file"));
    if (routes.batches && routes.batch_token.empty()) {
      return Status::InvalidArgument("reports.token_file: required with reports.state_dir (policy engines forward reports with it)");
    }
    CINCINNATI_ASSIGN_OR_RETURN(routes.admin_token, Token(s, "brakes.admin_token_file"));
    parts->routes = std::make_unique<server::ReportRoutes>(*parts->board, std::move(routes));
  }
  if (!policy_engine) return parts;
  server::ReportIntakeOptions o;
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t window, s.Unsigned("reports.sighting_window_secs", 86400));
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t min_age, s.Unsigned("reports.min_poller_age_secs", 1800));
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t min_polls, s.Unsigned("reports.min_polls", 3));
  o.min_polls = static_cast<int>(std::clamp<uint64_t>(min_polls, 1, 1000));
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t per_day, s.Unsigned("reports.per_cluster_per_day", 24));
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t sightings, s.Unsigned("reports.sightings", 1 << 20));
  CINCINNATI_ASSIGN_OR_RETURN(o.max_per_second, Number(s, "reports.max_per_sec", 500));
  o.sighting_window_secs = static_cast<int64_t>(window);
  o.min_poller_age_secs = static_cast<int64_t>(min_age);
  o.per_cluster_per_day = static_cast<int>(std::min<uint64_t>(per_day, 1 << 20));
  o.sightings = static_cast<size_t>(std::max<uint64_t>(64, sightings));
  std::shared_ptr<server::ReportSink> sink;
  if (serve) {
    sink = server::MakeBoardSink(*parts->board);
  } else {
    server::ReportRelayOptions relay;
    relay.url = s.String("reports.upstream_url", server::ReportsUrlFor(upstream_url));
    CINCINNATI_ASSIGN_OR_RETURN(relay.token, Token(s, "reports.upstream_token_file"));
    if (relay.token.empty()) {
      return Status::InvalidArgument("reports.upstream_token_file: required with reports.enabled (the graph builder's reports token)");
    }
    sink = server::MakeReportRelay(std::move(relay));
  }
  server::PollReceipts receipts = server::PollReceipts::Random();
  if (s.Has("reports.receipt_key_file")) {
    auto loaded = server::PollReceipts::FromKeyFile(s.String("reports.receipt_key_file", ""));
    if (!loaded.ok()) return loaded.status().WithContext("reports.receipt_key_file");
    receipts = std::move(loaded).value();
  }
  parts->intake = std::make_shared<server::ReportIntake>(std::move(sink), o, clock, parts->metrics, std::move(receipts));
  return parts;
}

}  // namespace cincinnati::cli
