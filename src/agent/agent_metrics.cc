// The agent's /metrics, with the cluster-version operator's metric names and labels.
// Each scrape renders a registry built from the agent's state: the families in one
// order (the CVO's first, then ours), each concept declared and filled by one function.
#include "agent/agent.h"
#include "graph-data/time_format.h"
#include "http_server/metrics.h"

namespace cincinnati::agent {
namespace {
using kube::JsonArray;
using kube::FindMember;
using kube::TextOf;
using kube::ItemsOf;

using http_server::Counter;
using http_server::Family;
using http_server::Gauge;
using http_server::Registry;

double Seconds(const std::string& rfc3339) {
  auto t = graphdata::ParseDateTime(rfc3339);
  return t.ok() ? static_cast<double>(*t) : 0.0;
}

// The last completed version before `skip` entries of the history.
std::string CompletedVersion(const std::vector<UpdateHistoryEntry>& history, size_t skip) {
  for (const auto& h : history) {
    if (h.state != "Completed") continue;
    if (skip-- == 0) return h.version;
  }
  return "";
}

// The cluster-version operator's families: the cluster's versions, its operators and
// the payload being applied.
struct ClusterVersionFamilies {
  explicit ClusterVersionFamilies(Registry& r)
      : version(r.AddGauge("cluster_version",
                           "Reports the version of the cluster in terms of seconds since the epoch. Type "
                           "'current' is the version being applied, 'desired' the requested one while it is not "
                           "reached, 'completed' the last applied one, 'cluster' the creation time, 'initial' "
                           "the oldest history entry.",
                           {"type", "version", "image", "from_version"})),
        available(r.AddGauge("cluster_version_available_updates", "Report the count of available versions for an upstream and channel.",
                             {"upstream", "channel"})),
        operator_up(r.AddGauge("cluster_operator_up", "1 if a cluster operator is Available=True, 0 otherwise.",
                               {"name", "version", "reason"})),
        conditions(r.AddGauge("cluster_operator_conditions", "Report the conditions for active cluster operators. 0 is False and 1 is True.",
                              {"name", "condition", "reason"})),
        payload(r.AddGauge("cluster_version_payload", "Report the number of entries in the payload.", {"version", "type"})) {}
  Family<Gauge>& version;
  Family<Gauge>& available;
  Family<Gauge>& operator_up;
  Family<Gauge>& conditions;
  Family<Gauge>& payload;
};

// The ClusterVersion's own series: its versions, available updates and conditions.
void FillClusterVersion(ClusterVersionFamilies& f, const ClusterVersion& cv, bool updating, const std::string& upstream) {
  const auto& s = cv.status;
  const std::string last_completed = CompletedVersion(s.history, 0);
  if (!s.history.empty()) {
    const auto& newest = s.history.front();
    const auto& oldest = s.history.back();
    f.version.With({"current", s.desired.version, s.desired.image, last_completed}).Set(Seconds(newest.started_time));
    f.version.With({"cluster", s.desired.version, s.desired.image, oldest.version}).Set(Seconds(cv.creation_timestamp));
    f.version.With({"initial", oldest.version, oldest.image, ""}).Set(Seconds(oldest.completion_time));
    for (const auto& h : s.history) {
      if (h.state != "Completed") continue;
      f.version.With({"completed", h.version, h.image, CompletedVersion(s.history, 1)}).Set(Seconds(h.completion_time));
      break;
    }
  }
  if (cv.spec.desired_update && updating) {
    const Condition* progressing = cv.FindCondition("Progressing");
    f.version.With({"desired", cv.spec.desired_update->version, cv.spec.desired_update->image, last_completed})
        .Set(progressing ? Seconds(progressing->last_transition_time) : 0);
  }
  f.available.With({upstream, cv.spec.channel}).Set(static_cast<double>(s.available_updates.size()));
  for (const auto& c : s.conditions) {
    if (c.status == "True" || c.status == "False") {
      f.conditions.With({"version", c.type, c.reason}).Set(c.status == "True" ? 1 : 0);
    }
  }
}

// Each component's series: up (its Available condition) and every True or False condition.
void FillComponents(ClusterVersionFamilies& f, const JsonArray& components) {
  for (const auto& component : components) {
    const JsonValue* name = FindMember(component, "metadata") ? FindMember(*FindMember(component, "metadata"), "name") : nullptr;
    if (!name || !name->is_string()) continue;
    const JsonValue* status = FindMember(component, "status");
    std::string operator_version, reason = "NoAvailableCondition";
    double up = 0;
    if (status && FindMember(*status, "versions") && FindMember(*status, "versions")->is_array()) {
      for (const auto& v : ItemsOf(*FindMember(*status, "versions"))) {
        const JsonValue* n = FindMember(v, "name");
        const JsonValue* ver = FindMember(v, "version");
        if (n && n->is_string() && TextOf(*n) == "operator" && ver && ver->is_string()) operator_version = TextOf(*ver);
      }
    }
    if (status && FindMember(*status, "conditions") && FindMember(*status, "conditions")->is_array()) {
      for (const auto& c : ItemsOf(*FindMember(*status, "conditions"))) {
        auto text = [&](const char* key) { const JsonValue* v = FindMember(c, key); return v && v->is_string() ? TextOf(*v) : ""; };
        const std::string type = text("type"), value = text("status"), why = text("reason");
        if (value == "True" || value == "False") f.conditions.With({TextOf(*name), type, why}).Set(value == "True" ? 1 : 0);
        if (type == "Available") {
          reason = why;
          up = value == "True" ? 1 : 0;
        }
      }
    }
    f.operator_up.With({TextOf(*name), operator_version, reason}).Set(up);
  }
}

// What the agent's loops did: failed writes to its state, passes, polls of the update service.
struct LoopCounts {
  uint64_t retrieval_passes = 0, update_passes = 0, fetches = 0;
};
void AddLoopMetrics(Registry& r, const StorageHealth& storage, const LoopCounts& loops) {
  auto& storage_errors = r.AddCounter("cincinnati_agent_storage_errors_total",
                                      "Writes to the agent's state directory that failed, by kind: no_space "
                                      "(the disk or quota is full) or io.",
                                      {"kind"});
  storage_errors.With({"no_space"}).Increment(static_cast<double>(storage.no_space_errors()));
  storage_errors.With({"io"}).Increment(static_cast<double>(storage.io_errors()));
  auto& passes = r.AddCounter("cincinnati_agent_passes_total",
                              "Passes finished by each of the agent's loops: retrieval (the update service, "
                              "risks, Upgradeable) and update (the steps of an update).",
                              {"loop"});
  passes.With({"retrieval"}).Increment(static_cast<double>(loops.retrieval_passes));
  passes.With({"update"}).Increment(static_cast<double>(loops.update_passes));
  r.AddCounter("cincinnati_agent_update_service_requests_total",
               "Requests for the update graph sent to the update service (one per poll, answered or not).")
      .Get()
      .Increment(static_cast<double>(loops.fetches));
  r.AddGauge("cincinnati_agent_storage_full",
             "1 while the agent's last failed write found no space left and no write has succeeded since.")
      .Get()
      .Set(storage.full() ? 1 : 0);
}

// The update reports' outbox.
void AddReportMetrics(Registry& r, const ReportOutbox::Stats& reports) {
  r.AddGauge("cincinnati_agent_reports_pending",
             "Update reports queued in the state directory and not yet taken by the update service (--reports.url).")
      .Get()
      .Set(static_cast<double>(reports.pending));
  r.AddCounter("cincinnati_agent_reports_sent_total", "Update reports the update service took (a 2xx answer).")
      .Get()
      .Increment(static_cast<double>(reports.sent));
  r.AddCounter("cincinnati_agent_report_send_errors_total",
               "Tries to send an update report that will be retried: no answer, 3xx, 429, 5xx, or 403 "
               "unknown_poller.")
      .Get()
      .Increment(static_cast<double>(reports.send_errors));
  auto& dropped = r.AddCounter("cincinnati_agent_reports_dropped_total",
                               "Update reports given up, by reason: rejected (a 4xx answer), expired (not sent "
                               "within --reports.max_age) or invalid (no valid report could be made or read).",
                               {"reason"});
  dropped.With({"rejected"}).Increment(static_cast<double>(reports.rejected));
  dropped.With({"expired"}).Increment(static_cast<double>(reports.expired));
  dropped.With({"invalid"}).Increment(static_cast<double>(reports.invalid));
}

// Signed answers (--upstream.public-keys): what was checked, and the newest generation taken.
void AddAnswerTrustMetrics(Registry& r, const AnswerTrust& trust) {
  auto& signatures = r.AddCounter(
      "cincinnati_agent_answer_signatures_total",
      "Graph answers checked for their signature (--upstream.public-keys), by result: accepted, unsigned (used, "
      "--upstream.require-signature being off) or the reason of the refusal (SignatureMissing, SignatureMalformed, "
      "SignatureUnknownKey, SignatureInvalid, SignatureExpired, SignatureRolledBack).",
      {"result"});
  // Every result from the start, so that a first refusal is an increase, not a new series.
  signatures.With({"accepted"});
  signatures.With({std::string(kUnsignedAnswer)});
  for (SignatureVerdict v : {SignatureVerdict::kMissing, SignatureVerdict::kMalformed, SignatureVerdict::kUnknownKey,
                             SignatureVerdict::kInvalid, SignatureVerdict::kExpired, SignatureVerdict::kRolledBack}) {
    signatures.With({std::string(SignatureReason(v))});
  }
  for (const auto& [result, n] : trust.Counts()) signatures.With({result}).Increment(static_cast<double>(n));
  r.AddGauge("cincinnati_agent_answer_generation",
             "The newest graph generation of a signed answer the agent took; an older answer is refused "
             "(SignatureRolledBack).")
      .Get()
      .Set(static_cast<double>(trust.newest_generation()));
  r.AddGauge("cincinnati_agent_answer_signature_record_set_aside",
             "1 when the record of signed answers taken could not be read at start and was set aside: every "
             "upstream's trust on first use and newest generation started again.")
      .Get()
      .Set(trust.record_set_aside() ? 1 : 0);
}

}  // namespace

std::string Agent::Metrics() {
  Registry registry("");
  ClusterVersionFamilies cluster_version(registry);
  AddLoopMetrics(registry, storage_, {retrieval_loop_.passes.load(), update_loop_.passes.load(), fetches_.load()});
  AddReportMetrics(registry, outbox_ ? outbox_->stats() : ReportOutbox::Stats{});
  if (retrieval_.trust) AddAnswerTrustMetrics(registry, *retrieval_.trust);
  if (const UpdateRunner::Snapshot update = runner_->snapshot(); update.applied + update.pending > 0) {
    cluster_version.payload.With({update.progress.version, "applied"}).Set(static_cast<double>(update.applied));
    cluster_version.payload.With({update.progress.version, "pending"}).Set(static_cast<double>(update.pending));
  }

  JsonArray components;
  if (auto listed = ListComponents(); listed.ok()) components = std::move(listed).value();

  std::lock_guard lock(mu_);
  const bool updating = state_ == LoopState::kUpdateRequested || state_ == LoopState::kUpdating;
  const std::string upstream = options_.update_service.empty() ? cv_.spec.upstream : options_.update_service;
  FillClusterVersion(cluster_version, cv_, updating, upstream);
  FillComponents(cluster_version, components);
  return registry.Render();
}

}  // namespace cincinnati::agent
