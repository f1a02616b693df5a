#include "reports/brake_board.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/date_time.h"
#include "env/file_system.h"
#include "reports/sqlite_report_store.h"

namespace cincinnati::reports {
namespace {

// The service's address for `brakes --url`: the brakes' URL base without its route
// (".../api/upgrades_info/v1/brakes" -> ".../api/upgrades_info"), or a placeholder.
std::string ServiceUrl(std::string_view url_base) {
  constexpr std::string_view kRoute = "/v1/brakes";
  while (!url_base.empty() && url_base.back() == '/') url_base.remove_suffix(1);
  if (url_base.size() > kRoute.size() && url_base.substr(url_base.size() - kRoute.size()) == kRoute) {
    return std::string(url_base.substr(0, url_base.size() - kRoute.size()));
  }
  return "SERVICE_URL";
}

namespace fs = std::filesystem;

int64_t UnixNow(env::Clock& clock) { return env::UnixSeconds(clock); }

// "network 5, etcd 2": failed clusters per component, most first ("unknown" for none named).
std::string ComponentList(const std::map<std::string, int64_t>& components) {
  std::vector<std::pair<int64_t, std::string>> sorted;
  for (const auto& [name, count] : components) sorted.push_back({-count, name.empty() ? "unknown" : name});
  std::sort(sorted.begin(), sorted.end());
  std::string out;
  for (const auto& [count, name] : sorted) out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", name, -count);
  return out;
}

// A brake's file is written for graph-data, whose check takes only https risk URLs.
Status ValidateUrlBase(const std::string& url) {
  if (url.empty()) {
    return Status::InvalidArgument(
        "brakes.url_base is required with brakes on: the https:// address clusters reach this service's {prefix}/v1/brakes "
        "at (a brake's risk URL, in its graph-data file too); or brakes.enabled false");
  }
  const bool plain = std::all_of(url.begin(), url.end(), [](char c) { return c > ' ' && c != 0x7F; });
  if (url.rfind("https://", 0) != 0 || url.size() <= 8 || !plain || url.size() > 2048) {
    return Status::InvalidArgument(fmt::format("brakes.url_base '{}' must be an https:// URL without spaces: a brake's file is "
                                               "written for graph-data, whose check takes only https risk URLs",
                                               YamlLineSafe(url.substr(0, 200))));
  }
  return Status::OK();
}

}  // namespace

Result<BrakeRuleKind> ParseBrakeRuleKind(std::string_view name) {
  if (name == "sequential") return BrakeRuleKind::kSequential;
  if (name == "wilson") return BrakeRuleKind::kWilson;
  return Status::InvalidArgument(fmt::format(
      "brakes.rule '{}': must be \"sequential\" (a sequential test on attempts in the order they started) or \"wilson\" "
      "(the Wilson lower bound on every report)",
      YamlLineSafe(name.substr(0, 64))));
}

std::string_view BrakeRuleKindName(BrakeRuleKind kind) { return kind == BrakeRuleKind::kSequential ? "sequential" : "wilson"; }

BrakeBoard::BrakeBoard(std::string files_dir, BrakeSettings settings, env::Clock& clock, http_server::Registry& metrics,
                       std::unique_ptr<ReportStore> store)
    : files_dir_(std::move(files_dir)),
      settings_(std::move(settings)),
      clock_(clock),
      store_(std::move(store)),
      received_(metrics.AddCounter("reports_received_total", "Update reports recorded, by result", {"result"})),
      duplicates_(metrics.AddCounter("reports_duplicate_total", "Update reports received again (same cluster and attempt)").Get()),
      off_graph_(metrics.AddCounter("reports_off_graph_total",
                                    "Update reports refused: no such edge in the report's channel of the served graph").Get()),
      active_(metrics.AddGauge("brakes_active", "Edges braked automatically and not cleared").Get()),
      actions_(metrics.AddCounter("brake_actions_total", "Brakes applied, confirmed and cleared", {"action"})),
      delay_(metrics.AddHistogram("brake_delay_seconds", "Seconds from an edge's first counted failure to its brake",
                                  {60, 300, 900, 1800, 3600, 7200, 21600, 86400}).Get()),
      pruned_(metrics.AddCounter("reports_pruned_total", "Update reports deleted for being older than the retention").Get()) {}

BrakeBoard::~BrakeBoard() = default;

Result<std::unique_ptr<BrakeBoard>> BrakeBoard::Open(const std::string& state_dir, BrakeSettings settings, env::Clock& clock,
                                                     http_server::Registry& metrics) {
  if (Status made = env::DefaultFileSystem().CreateDirectories(state_dir); !made.ok()) {
    return Status::IoError(fmt::format("reports state directory {}: {}", state_dir, made.message()));
  }
  CINCINNATI_ASSIGN_OR_RETURN(
      std::unique_ptr<SqliteReportStore> store,
      SqliteReportStore::Open((fs::path(state_dir) / "reports.db").string(), ReportLedger::Options{settings.counted_reasons}));
  return Open(std::move(store), state_dir, std::move(settings), clock, metrics);
}

Result<std::unique_ptr<BrakeBoard>> BrakeBoard::Open(std::unique_ptr<ReportStore> store, const std::string& files_dir,
                                                     BrakeSettings settings, env::Clock& clock, http_server::Registry& metrics) {
  CINCINNATI_RETURN_IF_ERROR(ValidateBrakeRule(settings.rule));
  if (settings.kind == BrakeRuleKind::kSequential) CINCINNATI_RETURN_IF_ERROR(ValidateMixturePrior(settings.prior, settings.rule));
  if (settings.enabled) CINCINNATI_RETURN_IF_ERROR(ValidateUrlBase(settings.url_base));
  if (!files_dir.empty()) {
    if (Status made = env::DefaultFileSystem().CreateDirectories(fs::path(files_dir) / "blocked-edges"); !made.ok()) {
      return Status::IoError(fmt::format("brake files directory {}: {}", files_dir, made.message()));
    }
  }
  std::unique_ptr<BrakeBoard> board(new BrakeBoard(files_dir, std::move(settings), clock, metrics, std::move(store)));
  CINCINNATI_RETURN_IF_ERROR(board->Load());
  return board;
}

Status BrakeBoard::Load() {
  // The mark first: a change made between the two reads is read again at the next Follow.
  CINCINNATI_ASSIGN_OR_RETURN(int64_t mark, store_->ChangeMark());
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<BrakeRecord> brakes, store_->Brakes());
  std::lock_guard lock(mu_);
  mark_ = mark;
  for (BrakeRecord& r : brakes) brakes_[{r.from, r.to}] = std::move(r);
  // Every file written again (one lost, or never written: a full disk at the decision)
  // and those of cleared brakes removed (a clear that died before its file went).
  WriteFiles({});
  CountActive();
  return Status::OK();
}

void BrakeBoard::WriteFiles(const std::map<EdgeKey, BrakeRecord>& before) {
  if (files_dir_.empty()) return;
  for (const auto& [key, record] : brakes_) {
    auto was = before.find(key);
    const bool same = was != before.end() && was->second.state == record.state && was->second.since == record.since &&
                      was->second.by == record.by && was->second.note == record.note;
    if (same && !before.empty()) continue;
    if (!InForceState(record.state)) {
      env::RemoveLeftover(env::DefaultFileSystem(), file_path(record.from, record.to), "a cleared brake's file");
      continue;
    }
    if (Status s = WriteFile(record); !s.ok()) spdlog::error("brake {} -> {}: its file: {}", record.from, record.to, s.message());
  }
}

void BrakeBoard::CountActive() {
  active_.Set(static_cast<double>(std::count_if(brakes_.begin(), brakes_.end(), [](const auto& b) { return InForceState(b.second.state); })));
}

std::string BrakeBoard::file_path(const std::string& from, const std::string& to) const {
  return (fs::path(files_dir_) / BrakeFileName(from, to)).string();
}

Brake BrakeBoard::BrakeOf(const BrakeRecord& r) const {
  std::string comment = fmt::format("Written by the graph builder's automatic brake at {} (state: {}).\n{}", FormatUnixSeconds(r.since),
                                    BrakeStateName(r.state), r.evidence);
  if (r.state == BrakeState::kConfirmed) comment += fmt::format("\nConfirmed by {}{}.", r.by, r.note.empty() ? "" : ": " + r.note);
  return Brake{r.from, r.to, fmt::format("{}/{}-{}", settings_.url_base, r.from, r.to), r.message, comment};
}

Status BrakeBoard::WriteFile(const BrakeRecord& record) {
  if (files_dir_.empty()) return Status::OK();
  return env::WriteFileDurably(file_path(record.from, record.to), BrakeFileYaml(BrakeOf(record)),
                                env::DefaultFileSystem(), env::kUserFileMode);
}

std::optional<BrakeRecord> BrakeBoard::DecideSequential(const EdgeState& edge, int64_t now) const {
  // The first prefix that brakes (any may: sequential_brake.h, start_order.h).
  for (const SequentialCounts& counts : edge.prefixes) {
    const SequentialVerdict verdict = EvaluateSequential(counts, settings_.rule, settings_.prior);
    if (!verdict.brake) continue;
    BrakeRecord r;
    r.from = edge.from;
    r.to = edge.to;
    r.since = now;
    r.first_failure = edge.first_failure;
    r.counts = {counts.clusters, counts.failures};
    r.lower_bound = WilsonLowerBound(counts.failures, counts.clusters, OneSidedZ(settings_.rule.confidence));
    const std::string components = ComponentList(edge.failed_components);
    const std::string baseline =
        counts.excluded == 0 ? "none" : fmt::format("{} of {}, {:.1f}%", counts.excluded_failures, counts.excluded, verdict.baseline_rate * 100);
    // Failures may all be attempts that never ended: no report names a component or a time.
    const std::string most = components.empty() ? "attempts that never ended" : components.substr(0, components.find(','));
    const std::string first = edge.first_failure > 0 ? fmt::format(" First failure {}.", FormatUnixSeconds(edge.first_failure)) : "";
    r.message = fmt::format(
        "Automatically blocked at {}: {} of {} clusters that updated from {} to {} failed ({:.1f}%; clusters whose previous "
        "update failed, not counted: {}), more than {:g}% with {:g}% confidence over the whole rollout, most often on {}.{}",
        FormatUnixSeconds(now), counts.failures, counts.clusters, edge.from, edge.to, verdict.edge_rate * 100, baseline,
        settings_.rule.threshold * 100, settings_.rule.confidence * 100, most, first);
    r.evidence = fmt::format(
        "Evidence: {} failed of {} attempts counted in the order they started (a stuck one as failed); the sequential test's "
        "log likelihood ratio {:.2f}; known-bad sites kept apart: {}; failed clusters per component: {}.\n"
        "Review it, then commit this file to graph-data, or clear the brake: cincinnati brakes clear --url {} "
        "--token-file ADMIN_TOKEN_FILE --from {} --to {} --by YOUR_NAME",
        counts.failures, counts.clusters, verdict.log_ratio, baseline, components, ServiceUrl(settings_.url_base), edge.from, edge.to);
    return r;
  }
  return std::nullopt;
}

std::optional<BrakeRecord> BrakeBoard::Decide(const EdgeState& edge, int64_t now) const {
  if (settings_.kind == BrakeRuleKind::kSequential) return DecideSequential(edge, now);
  const BrakeVerdict verdict = Evaluate(edge.counts, settings_.rule);
  if (!verdict.brake) return std::nullopt;
  BrakeRecord r;
  r.from = edge.from;
  r.to = edge.to;
  r.since = now;
  r.first_failure = edge.first_failure;
  r.counts = edge.counts;
  r.lower_bound = verdict.lower_bound;
  const std::string components = ComponentList(edge.failed_components);
  r.message = fmt::format(
      "Automatically blocked at {}: {} of {} clusters that updated from {} to {} failed ({:g}% confidence that more than {:g}% "
      "fail), most often on {}. First failure {}.",
      FormatUnixSeconds(now), edge.counts.failures, edge.counts.clusters, edge.from, edge.to, settings_.rule.confidence * 100,
      settings_.rule.threshold * 100, components.substr(0, components.find(',')), FormatUnixSeconds(edge.first_failure));
  r.evidence = fmt::format(
      "Evidence: {} failed of {} clusters (Wilson lower bound of the failure rate {:.1f}%); failed clusters per component: {}.\n"
      "Review it, then commit this file to graph-data, or clear the brake: cincinnati brakes clear --url {} "
      "--token-file ADMIN_TOKEN_FILE --from {} --to {} --by YOUR_NAME",
      edge.counts.failures, edge.counts.clusters, verdict.lower_bound * 100, components, ServiceUrl(settings_.url_base),
      edge.from, edge.to);
  return r;
}

void BrakeBoard::Applied(std::vector<BrakeRecord> braked, int64_t now) {
  std::lock_guard lock(mu_);
  for (BrakeRecord& brake : braked) {
    if (Status s = WriteFile(brake); !s.ok()) spdlog::error("brake {} -> {}: its file: {}", brake.from, brake.to, s.message());
    spdlog::warn("brake: {} -> {} is blocked for every cluster: {}", brake.from, brake.to, brake.message);
    delay_.Observe(static_cast<double>(std::max<int64_t>(0, now - brake.first_failure)));
    actions_.With({"applied"}).Increment();
    brakes_[{brake.from, brake.to}] = std::move(brake);
  }
  ++local_changes_;
  CountActive();
}

Result<std::vector<ReportVerdict>> BrakeBoard::Submit(const std::vector<UpdateReport>& batch) {
  const int64_t now = UnixNow(clock_);
  std::shared_ptr<const ServedEdges> edges;
  {
    std::lock_guard lock(mu_);
    edges = edges_;
  }
  if (!edges) return Status::IoError("the graph builder has no graph yet to check reports against");
  std::vector<ReportVerdict> verdicts(batch.size());
  std::vector<UpdateReport> on_graph;
  std::vector<size_t> at;  // on_graph[k] is batch[at[k]]
  for (size_t i = 0; i < batch.size(); ++i) {
    const UpdateReport& r = batch[i];
    if (!edges->Has(r.channel, r.arch, r.from, r.to, now)) {
      off_graph_.Increment();
      verdicts[i] = {ReportVerdict::Kind::kRefused,
                     fmt::format("{} -> {} is not an update edge of channel {} for {} in the graph builder's graph", r.from, r.to,
                                 r.channel, r.arch)};
      continue;
    }
    on_graph.push_back(r);
    at.push_back(i);
  }
  if (on_graph.empty()) return verdicts;
  CINCINNATI_RETURN_IF_ERROR(store_->ClampEpochs(now));
  ReportStore::Decide decide;
  if (settings_.enabled) decide = [this, now](const EdgeState& edge) { return Decide(edge, now); };
  else decide = [](const EdgeState&) { return std::optional<BrakeRecord>(); };
  CINCINNATI_ASSIGN_OR_RETURN(ReportStore::Recorded recorded, store_->Record(on_graph, now, decide));
  for (size_t k = 0; k < on_graph.size(); ++k) {
    if (recorded.outcomes[k] == ReportLedger::Outcome::kDuplicate) {
      duplicates_.Increment();
      verdicts[at[k]].kind = ReportVerdict::Kind::kDuplicate;
      continue;
    }
    received_.With({std::string(UpdateResultName(on_graph[k].result))}).Increment();
  }
  if (!recorded.braked.empty()) {
    Applied(std::move(recorded.braked), now);
    Changed();
  }
  return verdicts;
}

void BrakeBoard::SetGraph(std::shared_ptr<const ServedEdges> edges) {
  bool first = false;
  // Restarts of a count made while the clock was ahead count from now (a new graph comes
  // at start and at every refresh).
  if (Status s = store_->ClampEpochs(UnixNow(clock_)); !s.ok()) spdlog::error("brakes: {}", s.message());
  {
    std::lock_guard lock(mu_);
    edges_ = edges;
    first = !std::exchange(recovered_, true);
    store_->Retain([&](const std::string& from, const std::string& to) {
      auto brake = brakes_.find({from, to});
      return edges->HasAnywhere(from, to) || (brake != brakes_.end() && InForceState(brake->second.state));
    });
  }
  if (!first || !settings_.enabled) return;
  // Reports committed just before a crash that kept their brake from being saved: a
  // second look at the edges of this graph with counted failures.
  auto failing = store_->EdgesWithFailures();
  if (!failing.ok()) {
    spdlog::error("brakes: the edges with failures cannot be read: {}", failing.status().message());
    return;
  }
  std::erase_if(*failing, [&](const auto& e) { return !edges->HasAnywhere(e.first, e.second); });
  const int64_t now = UnixNow(clock_);
  auto braked = store_->Reconsider(*failing, [this, now](const EdgeState& edge) { return Decide(edge, now); });
  if (!braked.ok()) {
    spdlog::error("brakes: {}", braked.status().message());
    return;
  }
  if (braked->empty()) return;
  Applied(std::move(braked).value(), now);
  Changed();
}

bool BrakeBoard::Follow() {
  auto mark = store_->ChangeMark();
  if (!mark.ok()) {
    spdlog::debug("brakes: {}", mark.status().message());  // the store logs an outage; the brakes read last stay
    return false;
  }
  uint64_t local = 0;
  {
    std::lock_guard lock(mu_);
    if (*mark == mark_) return false;
    local = local_changes_;
  }
  auto brakes = store_->Brakes();
  if (!brakes.ok()) return false;
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    // A brake this replica applied or changed meanwhile is newer than what was read:
    // the read is dropped, and the next call reads again (mark_ has not moved).
    if (local_changes_ != local) return false;
    std::map<EdgeKey, BrakeRecord> before = std::move(brakes_);
    brakes_.clear();
    for (BrakeRecord& r : *brakes) brakes_[{r.from, r.to}] = std::move(r);
    mark_ = *mark;
    std::set<EdgeKey> was, is;
    for (const auto& [key, r] : before) {
      if (InForceState(r.state)) was.insert(key);
    }
    for (const auto& [key, r] : brakes_) {
      if (InForceState(r.state)) is.insert(key);
      auto old = before.find(key);
      // A confirmation changes the risk's comment, not the edges: published all the same.
      if (old == before.end() || old->second.state != r.state || old->second.since != r.since) changed = true;
    }
    changed = changed || was != is;
    WriteFiles(before);
    CountActive();
  }
  if (changed) {
    spdlog::info("brakes: read again from {} (changed by another replica)", store_->Describe());
    Changed();
  }
  return changed;
}

Result<std::vector<BrakeRecord>> BrakeBoard::Redecide() {
  if (!settings_.enabled || settings_.kind != BrakeRuleKind::kSequential) return std::vector<BrakeRecord>();
  const int64_t now = UnixNow(clock_);
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<EdgeKey> recent, store_->Tick(now));
  {
    std::lock_guard lock(mu_);
    std::erase_if(recent, [&](const EdgeKey& e) { return edges_ && !edges_->HasAnywhere(e.first, e.second); });
  }
  if (recent.empty()) return std::vector<BrakeRecord>();
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<BrakeRecord> braked,
                              store_->Reconsider(recent, [this, now](const EdgeState& edge) { return Decide(edge, now); }));
  if (braked.empty()) return braked;
  Applied(braked, now);
  Changed();
  return braked;
}

Result<int64_t> BrakeBoard::Prune(int64_t retention_secs) {
  CINCINNATI_ASSIGN_OR_RETURN(int64_t gone, store_->Prune(UnixNow(clock_) - retention_secs));
  if (gone > 0) {
    pruned_.Increment(static_cast<double>(gone));
    spdlog::info("reports: {} older than {} days deleted", gone, retention_secs / 86400);
  }
  return gone;
}

Status BrakeBoard::ChangeState(const std::string& from, const std::string& to, BrakeState state, const std::string& by,
                               const std::string& note) {
  if (by.empty()) return Status::InvalidArgument("say who you are ('by')");
  const std::string_view action = state == BrakeState::kCleared ? "cleared" : "confirmed";
  // The store says whether a brake is in force (another replica may have decided or
  // cleared it a moment ago); no lock of the board is held while it is asked.
  CINCINNATI_ASSIGN_OR_RETURN(BrakeRecord record, store_->ChangeState({from, to}, state, by, note, action, UnixNow(clock_)));
  actions_.With({std::string(action)}).Increment();
  spdlog::warn("brake: {} -> {} {} by {}{}", from, to, action, by, note.empty() ? "" : ": " + note);
  {
    std::lock_guard lock(mu_);
    brakes_[{from, to}] = record;
    ++local_changes_;
    CountActive();
    if (state != BrakeState::kCleared) return WriteFile(record);
    if (!files_dir_.empty()) {
      CINCINNATI_RETURN_IF_ERROR(env::DefaultFileSystem().RemoveFile(file_path(from, to)));
      CINCINNATI_RETURN_IF_ERROR(env::DefaultFileSystem().SyncPath(fs::path(file_path(from, to)).parent_path()));
    }
  }
  Changed();
  return Status::OK();
}

Status BrakeBoard::Confirm(const std::string& from, const std::string& to, const std::string& by, const std::string& note) {
  return ChangeState(from, to, BrakeState::kConfirmed, by, note);
}

Status BrakeBoard::Clear(const std::string& from, const std::string& to, const std::string& by, const std::string& note) {
  return ChangeState(from, to, BrakeState::kCleared, by, note);
}

std::vector<Brake> BrakeBoard::InForce() const {
  std::lock_guard lock(mu_);
  std::vector<Brake> out;
  for (const auto& [key, record] : brakes_) {
    if (InForceState(record.state)) out.push_back(BrakeOf(record));
  }
  return out;
}

std::vector<BrakeRecord> BrakeBoard::List() const {
  std::lock_guard lock(mu_);
  std::vector<BrakeRecord> out;
  for (const auto& [key, record] : brakes_) out.push_back(record);
  return out;
}

void BrakeBoard::OnChange(std::function<void()> fn) {
  std::lock_guard lock(change_mu_);  // waits for a call under way: after this, the old one is never called
  on_change_ = std::move(fn);
}

void BrakeBoard::Changed() {
  std::lock_guard lock(change_mu_);
  if (on_change_) on_change_();
}

}  // namespace cincinnati::reports
