#include "reports/report_intake.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/date_time.h"
#include "core/error_document.h"
#include "core/strings.h"
#include "http_server/query.h"
#include "kube/api_access.h"

namespace cincinnati::server {
namespace {

using http_server::Response;

// Ids admitted by receipt alone whose allowance is kept a day, at least (about 130 bytes
// each): a small --reports.sightings must not turn away the reports of a large fleet.
constexpr size_t kMinReceiptAllowances = 1 << 16;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

ReportIntake::ReportIntake(std::shared_ptr<ReportSink> sink, ReportIntakeOptions options, env::Clock& clock,
                           http_server::Registry& metrics, PollReceipts receipts)
    : sink_(std::move(sink)),
      options_(options),
      clock_(clock),
      sightings_(options.sightings),
      receipts_(std::move(receipts)),
      accepted_(metrics.AddCounter("reports_accepted_total", "Update reports passed on to the graph builder").Get()),
      refused_(metrics.AddCounter("reports_refused_total", "Update reports refused, by reason", {"reason"})),
      tokens_(options.max_per_second),
      refilled_(clock.Steady()) {}

// The sightings read an id's 128 bits whatever its case.
int64_t ReportIntake::SawPoll(std::string_view id, std::string_view version) {
  const int64_t now = UnixNow();
  sightings_.Record(id, version, now);
  return now;
}

int64_t ReportIntake::UnixNow() const {
  return std::chrono::duration_cast<std::chrono::seconds>(clock_.Now().time_since_epoch()).count();
}

bool ReportIntake::TakeToken() {
  std::lock_guard lock(bucket_mu_);
  const auto now = clock_.Steady();
  const double elapsed = std::chrono::duration<double>(now - refilled_).count();
  refilled_ = now;
  tokens_ = std::min(options_.max_per_second, tokens_ + elapsed * options_.max_per_second);
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

Response ReportIntake::RateLimited(const std::string& message) {
  Response r = Refuse(429, "rate_limited", message);
  r.headers["Retry-After"] = "60";
  return r;
}

Response ReportIntake::Refuse(int status, const std::string& kind, const std::string& message) {
  refused_.With({kind}).Increment();
  ErrorDocument doc{kind, message, status};
  return Response::Text(status, doc.ToJson(), "application/json");
}

void ReportIntake::Handle(const http_server::Request& request, std::function<void(Response)> respond) {
  if (request.method != "POST") return respond(Response::Empty(405));
  if (request.body.size() > kMaxUpdateReportBytes) {
    return respond(Refuse(413, "too_large", fmt::format("a report has at most {} bytes", kMaxUpdateReportBytes)));
  }
  if (!kube::IsJsonRequest(request.Header("Content-Type"), {"application/json"})) return respond(Refuse(415, "not_json", "POST with Content-Type: application/json"));
  Result<UpdateReport> report = DecodeUpdateReport(request.body);
  if (!report.ok()) return respond(Refuse(400, "invalid_report", report.status().message()));
  auto params = http_server::ParseQuery(request.query);
  auto id = params.ok() ? params->find("id") : Parameters::const_iterator{};
  if (!params.ok() || id == params->end() || Lower(id->second) != report->cluster_id) {
    return respond(Refuse(400, "invalid_report", "the query's id must be the report's clusterID"));
  }
  const int64_t now = UnixNow();
  // Times are the client's: one from the future would pass for an old poller, and would
  // outlive a person's clearing of a brake.
  if (report->started > now + kClockSkew || report->ended > now + kClockSkew) {
    return respond(Refuse(400, "invalid_report", fmt::format("the attempt ends after the service's now, {}", FormatUnixSeconds(now))));
  }
  // A cluster that has polled at `from`, the version it updated from, for a while: so
  // one set of ids cannot weigh on every edge into a version. Checked before any rate is
  // charged: a stranger's reports use up nobody's allowance, nor the edge check's work.
  const Voucher voucher = Admit(request, *report, now);
  if (voucher == Voucher::kNone) {
    return respond(Refuse(403, "unknown_poller",
                          fmt::format("cluster {} has not been polling at {} for {} s", report->cluster_id, report->from,
                                      options_.min_poller_age_secs)));
  }
  // The id's own allowance first, then everyone's: one id cannot use up the rate of all
  // (a report that gets no further than the edge check still costs its sender).
  if (!Charge(report->cluster_id, voucher, now)) {
    return respond(RateLimited("this cluster sent its reports for today"));
  }
  if (!TakeToken()) {
    Refund(report->cluster_id, voucher, now);
    return respond(RateLimited("too many reports: try again later"));
  }
  CheckEdgeAndSubmit(std::move(report).value(), voucher, now, std::move(respond));
}

// This engine's own sightings first (no MAC to compute); then the receipt the agent
// kept from whichever replica answered its polls.
ReportIntake::Voucher ReportIntake::Admit(const http_server::Request& request, const UpdateReport& report, int64_t now) const {
  if (sightings_.SeenAt(report.cluster_id, report.from, now, options_.sighting_window_secs, options_.min_poller_age_secs,
                        options_.min_polls)) {
    return Voucher::kSightings;
  }
  const std::string* receipt = request.Header(kPollReceiptHeader);
  if (receipt && receipts_.Proves(*receipt, report.cluster_id, report.from, now, options_.sighting_window_secs,
                                  options_.min_poller_age_secs, options_.min_polls)) {
    return Voucher::kReceipt;
  }
  return Voucher::kNone;
}

// An id admitted by its receipt may be unknown to the sightings, which keep allowances
// only for ids they know: its allowance is kept here, for the day. The table is bounded:
// when it is full an entry is dropped to make room (below), so that nobody can fill it
// to turn genuine clusters away.
bool ReportIntake::Charge(const std::string& id, Voucher voucher, int64_t now) {
  if (voucher == Voucher::kSightings) return sightings_.ChargeReport(id, now, options_.per_cluster_per_day);
  ReceiptAllowance& a = receipt_allowance_;
  std::lock_guard lock(a.mu);
  if (a.day != now / 86400) {
    a.day = now / 86400;
    a.reports.clear();
  }
  auto it = a.reports.find(id);
  if (it == a.reports.end()) {
    // Full: one entry goes (whichever the table holds first), never the new id: a flood
    // of invented ids with receipts then lets some id report again today, which the
    // ledger's one count per (cluster, attempt) and per edge bounds, and refuses no
    // genuine cluster.
    if (a.reports.size() >= std::max<size_t>(kMinReceiptAllowances, options_.sightings / 4)) a.reports.erase(a.reports.begin());
    it = a.reports.emplace(id, 0).first;
  }
  if (it->second >= options_.per_cluster_per_day) return false;
  ++it->second;
  return true;
}

void ReportIntake::Refund(const std::string& id, Voucher voucher, int64_t now) {
  if (voucher == Voucher::kSightings) return sightings_.RefundReport(id, now);
  ReceiptAllowance& a = receipt_allowance_;
  std::lock_guard lock(a.mu);
  auto it = a.reports.find(id);
  if (a.day == now / 86400 && it != a.reports.end() && it->second > 0) --it->second;
}

void ReportIntake::CheckEdgeAndSubmit(UpdateReport report, Voucher voucher, int64_t now, std::function<void(Response)> respond) {
  if (!edge_check_) return respond(Refuse(503, "report_not_recorded", "this service has no graph to check reports against"));
  // The check may answer on another thread (a forwarding engine asks its upstream).
  auto shared = std::make_shared<UpdateReport>(std::move(report));
  edge_check_(*shared, [this, shared, voucher, now, respond = std::move(respond)](Status edge) mutable {
    if (edge.code() == Status::Code::kInvalidArgument) return respond(Refuse(400, "invalid_report", edge.message()));
    if (!edge.ok()) return respond(Refuse(503, "report_not_recorded", edge.message()));
    Submit(std::move(*shared), voucher, now, std::move(respond));
  });
}

void ReportIntake::Submit(UpdateReport report, Voucher voucher, int64_t now, std::function<void(Response)> respond) {
  const std::string id = report.cluster_id;
  sink_->Submit(std::move(report), [this, id, voucher, now, respond = std::move(respond)](Result<reports::ReportVerdict> verdict) {
    using Kind = reports::ReportVerdict::Kind;
    // A resend (a duplicate) and a report the sink could not record give the allowance
    // back: the agent sends them again, and they are no new report.
    if (!verdict.ok() || verdict->kind == Kind::kDuplicate) Refund(id, voucher, now);
    if (!verdict.ok()) return respond(Refuse(503, "report_not_recorded", verdict.status().message()));
    if (verdict->kind == Kind::kRefused) return respond(Refuse(400, "invalid_report", verdict->why));
    accepted_.Increment();
    respond(Response::Text(200, verdict->kind == Kind::kDuplicate ? R"({"status":"duplicate"})" : R"({"status":"accepted"})",
                           "application/json"));
  });
}

}  // namespace cincinnati::server
