#include "reports/brake_board.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/date_time.h"
#include "env/file_system.h"
#include "sqlite/database.h"

namespace cincinnati::reports {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS brakes(from_version TEXT NOT NULL, to_version TEXT NOT NULL, state TEXT NOT NULL, "
    "since INTEGER NOT NULL, first_failure INTEGER NOT NULL, clusters INTEGER NOT NULL, failures INTEGER NOT NULL, "
    "lower_bound REAL NOT NULL, message TEXT NOT NULL, evidence TEXT NOT NULL, by TEXT NOT NULL, note TEXT NOT NULL, "
    "PRIMARY KEY(from_version, to_version))",
    "CREATE TABLE IF NOT EXISTS brake_events(at INTEGER NOT NULL, from_version TEXT NOT NULL, to_version TEXT NOT NULL, "
    "action TEXT NOT NULL, by TEXT NOT NULL, note TEXT NOT NULL)",
};

int64_t UnixNow(env::Clock& clock) {
  return std::chrono::duration_cast<std::chrono::seconds>(clock.Now().time_since_epoch()).count();
}

BrakeState StateOf(std::string_view name) {
  return name == "confirmed" ? BrakeState::kConfirmed : name == "cleared" ? BrakeState::kCleared : BrakeState::kActive;
}

bool InForceState(BrakeState s) { return s != BrakeState::kCleared; }

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

std::string_view BrakeStateName(BrakeState state) {
  return state == BrakeState::kConfirmed ? "confirmed" : state == BrakeState::kCleared ? "cleared" : "active";
}

BrakeBoard::BrakeBoard(std::string state_dir, BrakeSettings settings, env::Clock& clock, http_server::Registry& metrics,
                       std::unique_ptr<ReportLedger> ledger, std::unique_ptr<sqlite::Database> db)
    : state_dir_(std::move(state_dir)),
      settings_(std::move(settings)),
      clock_(clock),
      ledger_(std::move(ledger)),
      db_(std::move(db)),
      received_(metrics.AddCounter("reports_received_total", "Update reports recorded, by result", {"result"})),
      duplicates_(metrics.AddCounter("reports_duplicate_total", "Update reports received again (same cluster and attempt)").Get()),
      off_graph_(metrics.AddCounter("reports_off_graph_total",
                                    "Update reports refused: no such edge in the report's channel of the served graph").Get()),
      active_(metrics.AddGauge("brakes_active", "Edges braked automatically and not cleared").Get()),
      actions_(metrics.AddCounter("brake_actions_total", "Brakes applied, confirmed and cleared", {"action"})),
      delay_(metrics.AddHistogram("brake_delay_seconds", "Seconds from an edge's first counted failure to its brake",
                                  {60, 300, 900, 1800, 3600, 7200, 21600, 86400}).Get()) {}

BrakeBoard::~BrakeBoard() = default;

Result<std::unique_ptr<BrakeBoard>> BrakeBoard::Open(const std::string& state_dir, BrakeSettings settings, env::Clock& clock,
                                                     http_server::Registry& metrics) {
  CINCINNATI_RETURN_IF_ERROR(ValidateBrakeRule(settings.rule));
  if (settings.enabled) CINCINNATI_RETURN_IF_ERROR(ValidateUrlBase(settings.url_base));
  if (Status made = env::DefaultFileSystem().CreateDirectories(fs::path(state_dir) / "blocked-edges"); !made.ok()) {
    return Status::IoError(fmt::format("reports state directory {}: {}", state_dir, made.message()));
  }
  const std::string path = (fs::path(state_dir) / "reports.db").string();
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<ReportLedger> ledger,
                              ReportLedger::Open(path, ReportLedger::Options{settings.counted_reasons}));
  sqlite::Database::Options options;
  options.access = sqlite::Database::Options::Access::kReadWrite;  // the ledger made the file
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Database> db, sqlite::Database::Open(path, "brakes " + path, options));
  for (const char* sql : kSchema) {
    if (!db->Exec(sql).ok()) return db->Failure("schema");
  }
  std::unique_ptr<BrakeBoard> board(
      new BrakeBoard(state_dir, std::move(settings), clock, metrics, std::move(ledger), std::move(db)));
  CINCINNATI_RETURN_IF_ERROR(board->Load());
  return board;
}

Status BrakeBoard::Load() {
  auto rows = db_->Prepare(
      "SELECT from_version, to_version, state, since, first_failure, clusters, failures, lower_bound, message, "
      "evidence, by, note FROM brakes");
  if (!rows.ok()) return db_->Failure("read");
  std::lock_guard lock(mu_);
  const Status read = rows->ForEachRow([&, &row = *rows] {
    BrakeRecord r{row.Text(0), row.Text(1), StateOf(row.Text(2)), row.Integer(3), row.Integer(4),
                  {row.Integer(5), row.Integer(6)}, row.Real(7), row.Text(8), row.Text(9), row.Text(10), row.Text(11)};
    brakes_[{r.from, r.to}] = r;
  });
  if (!read.ok()) return db_->Failure("read");
  int in_force = 0;
  for (const auto& [key, record] : brakes_) {
    if (!InForceState(record.state)) {
      // A clear that died before its file went: the file goes now.
      env::RemoveLeftover(env::DefaultFileSystem(), file_path(record.from, record.to), "a cleared brake's file");
      continue;
    }
    ++in_force;
    // A file lost or never written (a full disk at the decision) is written again.
    if (Status s = WriteFile(record); !s.ok()) spdlog::error("brake {} -> {}: {}", record.from, record.to, s.message());
  }
  active_.Set(in_force);
  return Status::OK();
}

bool BrakeBoard::EvaluateEdges(const std::vector<std::pair<std::string, std::string>>& edges, int64_t now) {
  if (!settings_.enabled) return false;
  bool changed = false;
  std::lock_guard lock(mu_);
  for (const auto& key : edges) {
    if (auto known = brakes_.find(key); known != brakes_.end() && InForceState(known->second.state)) continue;
    std::optional<BrakeRecord> brake = Decide(ledger_->Edge(key.first, key.second), now);
    if (!brake) continue;
    // Not saved, not braked: the edge is evaluated again with its next report.
    if (Status s = Save(*brake, "applied"); !s.ok()) {
      spdlog::error("brake {} -> {} not applied: {}", key.first, key.second, s.message());
      continue;
    }
    if (Status s = WriteFile(*brake); !s.ok()) spdlog::error("brake {} -> {}: its file: {}", key.first, key.second, s.message());
    spdlog::warn("brake: {} -> {} is blocked for every cluster: {}", key.first, key.second, brake->message);
    delay_.Observe(static_cast<double>(std::max<int64_t>(0, now - brake->first_failure)));
    actions_.With({"applied"}).Increment();
    brakes_[key] = std::move(*brake);
    changed = true;
  }
  active_.Set(static_cast<double>(std::count_if(brakes_.begin(), brakes_.end(), [](const auto& b) { return InForceState(b.second.state); })));
  return changed;
}

std::string BrakeBoard::file_path(const std::string& from, const std::string& to) const {
  return (fs::path(state_dir_) / BrakeFileName(from, to)).string();
}

Brake BrakeBoard::BrakeOf(const BrakeRecord& r) const {
  std::string comment = fmt::format("Written by the graph builder's automatic brake at {} (state: {}).\n{}", FormatUnixSeconds(r.since),
                                    BrakeStateName(r.state), r.evidence);
  if (r.state == BrakeState::kConfirmed) comment += fmt::format("\nConfirmed by {}{}.", r.by, r.note.empty() ? "" : ": " + r.note);
  return Brake{r.from, r.to, fmt::format("{}/{}-{}", settings_.url_base, r.from, r.to), r.message, comment};
}

Status BrakeBoard::WriteFile(const BrakeRecord& record) {
  return env::WriteFileDurably(file_path(record.from, record.to), BrakeFileYaml(BrakeOf(record)));
}

Status BrakeBoard::Save(const BrakeRecord& r, std::string_view action) {
  if (!db_->Begin().ok()) return db_->Failure("begin");
  auto put = db_->Prepare(
      "INSERT OR REPLACE INTO brakes(from_version, to_version, state, since, first_failure, clusters, failures, "
      "lower_bound, message, evidence, by, note) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  auto event = db_->Prepare("INSERT INTO brake_events(at, from_version, to_version, action, by, note) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
  if (!put.ok() || !event.ok()) return db_->Failure("prepare");
  put->Bind(1, r.from).Bind(2, r.to).Bind(3, BrakeStateName(r.state)).Bind(4, r.since).Bind(5, r.first_failure);
  put->Bind(6, r.counts.clusters).Bind(7, r.counts.failures).BindReal(8, r.lower_bound).Bind(9, r.message).Bind(10, r.evidence);
  put->Bind(11, r.by).Bind(12, r.note);
  if (!put->Run().ok()) return db_->Failure("save a brake");
  event->Bind(1, UnixNow(clock_)).Bind(2, r.from).Bind(3, r.to).Bind(4, action).Bind(5, r.by).Bind(6, r.note);
  if (!event->Run().ok()) return db_->Failure("record the action");
  if (!db_->Commit().ok()) return db_->Failure("commit");
  return Status::OK();
}

std::optional<BrakeRecord> BrakeBoard::Decide(const EdgeState& edge, int64_t now) const {
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
      "Review it, then commit this file to graph-data, or clear the brake: cincinnati brakes clear --from {} --to {}",
      edge.counts.failures, edge.counts.clusters, verdict.lower_bound * 100, components, edge.from, edge.to);
  return r;
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
  CINCINNATI_RETURN_IF_ERROR(ledger_->ClampEpochs(now));
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<ReportLedger::Outcome> outcomes, ledger_->Record(on_graph, now));
  std::set<std::pair<std::string, std::string>> touched;
  for (size_t k = 0; k < on_graph.size(); ++k) {
    if (outcomes[k] == ReportLedger::Outcome::kDuplicate) {
      duplicates_.Increment();
      verdicts[at[k]].kind = ReportVerdict::Kind::kDuplicate;
      continue;
    }
    received_.With({std::string(UpdateResultName(on_graph[k].result))}).Increment();
    touched.insert({on_graph[k].from, on_graph[k].to});
  }
  if (EvaluateEdges({touched.begin(), touched.end()}, now)) Changed();
  return verdicts;
}

void BrakeBoard::SetGraph(std::shared_ptr<const ServedEdges> edges) {
  bool first = false;
  // Restarts of a count made while the clock was ahead count from now (a new graph comes
  // at start and at every refresh).
  if (Status s = ledger_->ClampEpochs(UnixNow(clock_)); !s.ok()) spdlog::error("brakes: {}", s.message());
  {
    std::lock_guard lock(mu_);
    edges_ = edges;
    first = !std::exchange(recovered_, true);
    ledger_->Retain([&](const std::string& from, const std::string& to) {
      auto brake = brakes_.find({from, to});
      return edges->HasAnywhere(from, to) || (brake != brakes_.end() && InForceState(brake->second.state));
    });
  }
  if (!first) return;
  // Reports committed just before a crash that kept their brake from being saved: a
  // second look at the edges of this graph with counted failures.
  auto failing = ledger_->EdgesWithFailures();
  if (!failing.ok()) {
    spdlog::error("brakes: the edges with failures cannot be read: {}", failing.status().message());
    return;
  }
  std::erase_if(*failing, [&](const auto& e) { return !edges->HasAnywhere(e.first, e.second); });
  if (EvaluateEdges(*failing, UnixNow(clock_))) Changed();
}

Status BrakeBoard::ChangeState(const std::string& from, const std::string& to, BrakeState state, const std::string& by,
                               const std::string& note) {
  if (by.empty()) return Status::InvalidArgument("say who you are ('by')");
  {
    std::lock_guard lock(mu_);
    auto at = brakes_.find({from, to});
    if (at == brakes_.end() || !InForceState(at->second.state)) {
      return Status::NotFound(fmt::format("no brake is in force on {} -> {}", from, to));
    }
    BrakeRecord record = at->second;
    record.state = state;
    record.by = by;
    record.note = note;
    const std::string_view action = state == BrakeState::kCleared ? "cleared" : "confirmed";
    // A clear restarts the edge's count before the brake is lifted: a crash between the
    // two leaves the brake in force (the person clears again), never old evidence that
    // would brake the edge again at its next report.
    if (state == BrakeState::kCleared) CINCINNATI_RETURN_IF_ERROR(ledger_->RestartEdge(from, to, UnixNow(clock_)));
    CINCINNATI_RETURN_IF_ERROR(Save(record, action));
    at->second = record;
    actions_.With({std::string(action)}).Increment();
    spdlog::warn("brake: {} -> {} {} by {}{}", from, to, action, by, note.empty() ? "" : ": " + note);
    if (state != BrakeState::kCleared) return WriteFile(record);
    CINCINNATI_RETURN_IF_ERROR(env::DefaultFileSystem().RemoveFile(file_path(from, to)));
    CINCINNATI_RETURN_IF_ERROR(env::DefaultFileSystem().SyncPath(fs::path(file_path(from, to)).parent_path()));
    active_.Set(active_.value() - 1);
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
