#include "agent/report_outbox.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cctype>
#include <ctime>

#include "agent/poll_receipt_book.h"
#include "core/strings.h"
#include "graph-data/time_format.h"
#include "graph_client/graph_request.h"
#include "http/client.h"

namespace cincinnati::agent {
namespace {

using kube::ParseJson;
using kube::WriteJson;
using kube::FindMember;
using kube::TextOf;
using SystemTime = std::chrono::system_clock::time_point;

constexpr char kKind[] = "reports";
constexpr char kReceiptKey[] = "pollReceipt";
// What the service answers is read no further: only its status and a short reason matter.
constexpr size_t kMaxAnswerBytes = 64 << 10;
constexpr std::chrono::seconds kMinRetry{5};

int64_t UnixSeconds(SystemTime t) { return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count(); }

// Retry-After as delta-seconds or an HTTP-date (HTTP semantics); nullopt when absent or unreadable.
std::optional<std::chrono::seconds> RetryAfter(const http::Result& got, SystemTime now) {
  const std::string* value = got.Header("Retry-After");
  if (!value) return std::nullopt;
  const std::string text(TrimWhitespace(*value));
  int64_t seconds = 0;
  if (auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
      !text.empty() && ec == std::errc() && end == text.data() + text.size()) {
    return std::chrono::seconds(std::max<int64_t>(0, seconds));
  }
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end != '\0') return std::nullopt;
  return std::chrono::seconds(std::max<int64_t>(0, static_cast<int64_t>(::timegm(&tm)) - UnixSeconds(now)));
}

// A 403 that says the service has not seen this cluster poll yet (retryable), as
// {"reason":"unknown_poller"} or an error document {"kind":"unknown_poller"}.
bool UnknownPoller(const std::string& body) {
  auto json = ParseJson(body, kMaxAnswerBytes);
  if (!json.ok() || !json->is_object()) return false;
  for (const char* key : {"reason", "kind"}) {
    const JsonValue* v = FindMember(*json, key);
    if (v && v->is_string() && TextOf(*v) == "unknown_poller") return true;
  }
  return false;
}

// The poll receipt a queued file keeps beside the report, taken out of it ("": none),
// so that the rest decodes as the report alone.
std::string TakeReceipt(JsonValue& document) {
  const JsonValue* v = document.is_object() ? FindMember(document, kReceiptKey) : nullptr;
  if (!v) return "";
  std::string receipt = v->is_string() ? TextOf(*v) : "";
  kube::EraseMember(document, kReceiptKey);
  return receipt;
}

constexpr std::string_view kStartSuffix = "-started";

// The queued file's name: the attempt id, with a suffix for its start.
std::string FileName(const UpdateReport& report) {
  return report.result == UpdateResult::kStarted ? report.attempt + std::string(kStartSuffix) : report.attempt;
}

std::string LowerCase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

Result<UpdateReport> ReportOfStart(const UpdateProgress& a, const std::string& cluster_id, int64_t now) {
  UpdateReport r;
  r.cluster_id = LowerCase(cluster_id);
  r.attempt = a.attempt.id;
  r.from = a.attempt.from_version;
  r.to = a.version;
  r.arch = a.attempt.arch;
  r.channel = IsReportChannel(a.attempt.channel) ? a.attempt.channel : "";
  r.result = UpdateResult::kStarted;
  auto started = graphdata::ParseDateTime(a.started);
  r.started = started.ok() ? *started : now;
  CINCINNATI_RETURN_IF_ERROR(ValidateUpdateReport(r));
  return r;
}

Result<UpdateReport> ReportOfAttempt(const UpdateProgress& a, const std::string& cluster_id) {
  UpdateReport r;
  r.cluster_id = cluster_id;
  std::transform(r.cluster_id.begin(), r.cluster_id.end(), r.cluster_id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  r.attempt = a.attempt.id;
  r.from = a.attempt.from_version;
  r.to = a.version;
  r.arch = a.attempt.arch;
  r.channel = IsReportChannel(a.attempt.channel) ? a.attempt.channel : "";
  r.result = a.attempt.result == "Failed" ? UpdateResult::kFailed : UpdateResult::kCompleted;
  r.component = IsObjectName(a.attempt.result_component) ? a.attempt.result_component : "";
  r.reason = a.attempt.result_reason;
  auto ended = graphdata::ParseDateTime(a.attempt.ended);
  if (!ended.ok()) return ended.status().WithContext("the attempt's end");
  auto started = graphdata::ParseDateTime(a.started);
  r.ended = *ended;
  // A clock set back during the attempt must not make the report unsendable.
  r.started = started.ok() ? std::min(*started, *ended) : *ended;
  CINCINNATI_RETURN_IF_ERROR(ValidateUpdateReport(r));
  return r;
}

ReportOutbox::ReportOutbox(ObjectStore& store, ReportOutboxOptions options, env::Clock& clock, StorageHealth* storage)
    : store_(store), options_(std::move(options)), clock_(clock), storage_(storage) {
  rng_.seed(options_.seed ? options_.seed : std::random_device()());
  auto names = store_.List(kKind);
  if (!names.ok()) {
    spdlog::error("cannot list the queued update reports: {}", names.status().message());
    return;
  }
  for (const auto& name : *names) {
    queued_.emplace(name, Entry{});
    // A start an earlier process queued (before a hand-over) is not queued again.
    if (name.ends_with(kStartSuffix)) last_start_ = name.substr(0, name.size() - kStartSuffix.size());
  }
  if (!names->empty()) spdlog::info("{} update report(s) queued by an earlier run", names->size());
}

Status ReportOutbox::Enqueue(const UpdateReport& report, const std::string& poll_receipt) {
  CINCINNATI_RETURN_IF_ERROR(ValidateUpdateReport(report));
  CINCINNATI_ASSIGN_OR_RETURN(JsonValue document, ParseJson(EncodeUpdateReport(report)));
  if (!poll_receipt.empty()) kube::SetMember(document, kReceiptKey, JsonValue(poll_receipt));
  const std::string name = FileName(report);
  Status s = store_.Put(kKind, name, document);
  if (storage_ && storage_->Record(StorageArea::kReports, s)) {
    if (s.ok()) {
      spdlog::info("update reports are queued again");
    } else {
      spdlog::error("cannot queue an update report: {}", s.message());
    }
  }
  if (!s.ok()) return s;
  const std::string start = report.attempt + std::string(kStartSuffix);
  bool start_pending = false;
  {
    std::lock_guard lock(mu_);
    queued_.try_emplace(name);
    if (report.result == UpdateResult::kStarted) last_start_ = report.attempt;
    start_pending = report.result != UpdateResult::kStarted && queued_.contains(start);
  }
  // The final report says all its start would: the start goes unsent.
  if (start_pending) {
    if (Status gone = store_.Delete(kKind, start); !gone.ok()) {
      spdlog::warn("cannot delete the Started report {} once its attempt ended (sent after it, harmless): {}", start,
                   gone.message());
    } else {
      std::lock_guard lock(mu_);
      queued_.erase(start);
    }
  }
  return s;
}

bool ReportOutbox::StartQueued(const std::string& attempt) {
  std::lock_guard lock(mu_);
  return last_start_ == attempt;
}

size_t ReportOutbox::SendDue() {
  if (options_.url.empty()) return 0;
  size_t tries = 0;
  std::string after;  // each report at most once a pass
  while (tries < options_.max_per_pass && !options_.stop.stop_requested()) {
    std::string name;
    {
      std::lock_guard lock(mu_);
      const SystemTime now = clock_.Now();
      if (now < endpoint_next_) break;
      for (auto it = queued_.upper_bound(after); it != queued_.end(); ++it) {
        if (it->second.next <= now) {
          name = it->first;
          break;
        }
      }
    }
    if (name.empty()) break;
    after = name;
    ++tries;
    if (SendOne(name) == Outcome::kEndpointFailed) break;
  }
  return tries;
}

ReportOutbox::Outcome ReportOutbox::SendOne(const std::string& name) {
  auto stored = store_.Get(kKind, name);
  if (stored.ok() && !*stored) {  // gone (removed by hand): nothing to send
    std::lock_guard lock(mu_);
    queued_.erase(name);
    return Outcome::kDropped;
  }
  const bool content = !stored.ok() && (stored.status().code() == Status::Code::kInvalidArgument ||
                                        stored.status().code() == Status::Code::kTooLarge);
  if (!stored.ok() && !content) {  // the disk's error, not the report's: later
    spdlog::warn("cannot read the queued update report {}: {}", name, stored.status().message());
    std::lock_guard lock(mu_);
    queued_[name].next = clock_.Now() + options_.first_backoff;
    return Outcome::kReportFailed;
  }
  const std::string receipt = content ? "" : TakeReceipt(**stored);
  Result<UpdateReport> report = content ? Result<UpdateReport>(stored.status()) : DecodeUpdateReport(WriteJson(**stored));
  if (report.ok() && FileName(*report) != name) report = Status::InvalidArgument("the attempt is not the file's name");
  if (!report.ok()) {
    spdlog::warn("the queued update report {} cannot be read ({}): dropped", store_.Location(kKind, name),
                 report.status().message());
    Forget(name, "invalid");
    return Outcome::kDropped;
  }
  const int64_t dated = report->result == UpdateResult::kStarted ? report->started : report->ended;
  if (UnixSeconds(clock_.Now()) - dated > options_.max_age.count()) {
    spdlog::warn("the update report of attempt {} ({} -> {}) was not sent within {} s: dropped", name, report->from,
                 report->to, options_.max_age.count());
    Forget(name, "expired");
    return Outcome::kDropped;
  }
  return Send(name, *report, receipt);
}

ReportOutbox::Outcome ReportOutbox::Send(const std::string& name, const UpdateReport& report, const std::string& poll_receipt) {
  http::RequestOptions request;
  request.method = "POST";
  request.headers = {"Content-Type: application/json", "User-Agent: " + graph_client::GraphUserAgent()};
  // The file's bytes go into a header only when they could be a receipt.
  if (IsHeaderSafeReceipt(poll_receipt)) request.headers.push_back(PollReceiptHeaderLine(poll_receipt));
  request.body = EncodeUpdateReport(report);
  request.timeout = options_.timeout;
  request.ca_path = options_.ca_dir;
  request.max_redirects = 0;  // a 301/302 would turn the POST into a GET
  request.max_body_bytes = kMaxAnswerBytes;
  request.stop = options_.stop;
  const std::string url = options_.url + (options_.url.find('?') == std::string::npos ? "?" : "&") + "id=" + report.cluster_id;
  const http::Result got = http::Request(url, request);
  if (got.error_kind == http::ErrorKind::kCancelled || options_.stop.stop_requested()) return Outcome::kEndpointFailed;
  const SystemTime now = clock_.Now();
  if (got.error.empty() && got.status >= 200 && got.status < 300) {
    ++sent_;
    endpoint_failures_ = 0;
    spdlog::info("update report of attempt {} ({} -> {}, {}) sent", name, report.from, report.to,
                 UpdateResultName(report.result));
    Status deleted = store_.Delete(kKind, name);
    std::lock_guard lock(mu_);
    if (deleted.ok()) {
      queued_.erase(name);
    } else {  // sent again later: the service takes the same attempt once
      spdlog::error("cannot delete the update report {} once sent: {}", name, deleted.message());
      queued_[name].next = now + options_.first_backoff;
    }
    return Outcome::kSent;
  }
  // What says the endpoint (or a proxy before it) cannot take reports now, rather than
  // that this report is wrong: a service without reports yet (404, 405), a proxy asking
  // for credentials (401, 407), a timeout (408), a rate (429), a redirect, a failure.
  // Only the service's refusal of this report (400, 413, 415, 422) drops it.
  const bool refused_here = got.status == 401 || got.status == 404 || got.status == 405 || got.status == 407 || got.status == 408;
  const bool endpoint = !got.error.empty() || got.status < 200 || (got.status >= 300 && got.status < 400) ||
                        got.status == 429 || got.status >= 500 || refused_here ||
                        (got.status == 403 && !UnknownPoller(got.body));  // a proxy's or a firewall's 403
  if (endpoint) {
    ++send_errors_;
    const auto delay = Delay(++endpoint_failures_, RetryAfter(got, now));
    {
      std::lock_guard lock(mu_);
      endpoint_next_ = now + delay;
    }
    spdlog::warn("update reports: {} answered {}; trying again in {} s", url,
                 got.error.empty() ? std::to_string(got.status) : got.error, delay.count());
    return Outcome::kEndpointFailed;
  }
  endpoint_failures_ = 0;  // the service answered
  if (got.status == 403 && UnknownPoller(got.body)) {
    ++send_errors_;
    std::lock_guard lock(mu_);
    Entry& entry = queued_[name];
    const auto delay = Delay(++entry.failures, RetryAfter(got, now));
    entry.next = now + delay;
    spdlog::info("update report of attempt {}: the service has not seen this cluster poll yet; again in {} s", name,
                 delay.count());
    return Outcome::kReportFailed;
  }
  spdlog::warn("update report of attempt {} ({} -> {}) refused by {} with {}: dropped: {}", name, report.from, report.to,
               url, got.status, Abbreviate(got.body, 512));
  Forget(name, "rejected");
  return Outcome::kDropped;
}

std::chrono::seconds ReportOutbox::Delay(int failures, std::optional<std::chrono::seconds> retry_after) {
  // Whatever Retry-After says, not sooner than kMinRetry: a hostile service cannot make
  // the agent post (and save its state) several times a second.
  if (retry_after) return std::clamp(*retry_after, kMinRetry, std::max(kMinRetry, options_.max_backoff));
  std::chrono::seconds whole = options_.max_backoff;
  if (failures <= 30) whole = std::min(whole, options_.first_backoff * (int64_t{1} << std::max(0, failures - 1)));
  // Half fixed, half jitter: never a retry at once, never a fleet in step.
  std::uniform_int_distribution<int64_t> draw(whole.count() / 2, whole.count());
  return std::chrono::seconds(draw(rng_));
}

void ReportOutbox::Forget(const std::string& name, std::string_view dropped_reason) {
  CountDropped(dropped_reason);
  Status deleted = store_.Delete(kKind, name);
  std::lock_guard lock(mu_);
  if (deleted.ok()) {
    queued_.erase(name);
  } else {
    spdlog::error("cannot delete the dropped update report {}: {}", name, deleted.message());
    queued_[name].next = clock_.Now() + options_.max_backoff;
  }
}

void ReportOutbox::CountDropped(std::string_view reason) {
  if (reason == "rejected") ++rejected_;
  if (reason == "expired") ++expired_;
  if (reason == "invalid") ++invalid_;
}

SystemTime ReportOutbox::NextDue() {
  std::lock_guard lock(mu_);
  if (queued_.empty() || options_.url.empty()) return SystemTime::max();
  SystemTime next = SystemTime::max();
  for (const auto& [name, entry] : queued_) next = std::min(next, entry.next);
  return std::max(next, endpoint_next_);
}

ReportOutbox::Stats ReportOutbox::stats() {
  Stats s;
  {
    std::lock_guard lock(mu_);
    s.pending = static_cast<int64_t>(queued_.size());
  }
  s.sent = sent_, s.send_errors = send_errors_, s.rejected = rejected_, s.expired = expired_, s.invalid = invalid_;
  return s;
}

}  // namespace cincinnati::agent
