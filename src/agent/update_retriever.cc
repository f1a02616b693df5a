#include "agent/update_retriever.h"

#include <boost/beast/http/status.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/strings.h"
#include "graph-data/time_format.h"
#include "http/client.h"

namespace cincinnati::agent {
namespace {

namespace reason = retrieval_reason;

std::string Rfc3339(std::chrono::system_clock::time_point t) {
  return graphdata::FormatDateTime(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
}

// The RetrievedUpdates message is kept in the state; what it quotes of an answer is not
// allowed to make it large.
constexpr size_t kMaxRetrievedMessageBytes = 4096;

bool KeepsListsOnFailure(std::string_view why) {
  return why == reason::kRemoteFailed || why == reason::kResponseFailed || why == reason::kResponseInvalid;
}

bool NewerFirst(const Release& a, const Release& b) {
  auto va = Version::Parse(a.version), vb = Version::Parse(b.version);
  if (!va.ok() || !vb.ok()) return a.version > b.version;
  return *vb < *va;
}

}  // namespace

GraphAnswer HttpGraphFetcher::Fetch(const std::string& url) {
  http::RequestOptions options;
  options.headers = {"Accept: " + std::string(kGraphAccept), "User-Agent: " + GraphUserAgent()};
  options.timeout = timeout_;
  options.ca_path = ca_path_;
  options.max_redirects = 10;  // Go's default
  options.stop = stop_;
  options.max_body_bytes = max_bytes_;
  options.max_body_name = "the agent's answer limit (--upstream.max_answer_bytes)";
  http::Result result = http::Request(url, options);
  GraphAnswer answer;
  if (!result.error.empty()) {
    answer.error = result.error;
    answer.too_large = result.error_kind == http::ErrorKind::kBodyTooLarge;
    return answer;
  }
  answer.status = result.status;
  auto phrase = boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(result.status));
  answer.status_line = phrase.empty() || phrase == "<unknown-status>"
                           ? std::to_string(result.status)
                           : fmt::format("{} {}", result.status, std::string_view(phrase.data(), phrase.size()));
  answer.body = std::move(result.body);
  if (const std::string* signature = result.Header(kSignatureHeader)) answer.signature = *signature;
  return answer;
}

UpdateRetriever::UpdateRetriever(GraphFetcher& fetcher, RiskMatcher match, env::Clock& clock, RetrieverSettings settings)
    : fetcher_(fetcher), match_(std::move(match)), clock_(clock), settings_(settings) {}

void UpdateRetriever::Seed(const std::vector<Release>& available, const std::vector<ConditionalUpdateStatus>& previous) {
  std::set<std::string> conditional_images;
  for (const auto& update : previous) {
    conditional_images.insert(update.release.image);
    lists_.updates.conditional.push_back({update.release, update.risks});
    for (const auto& condition : update.conditions) {
      if (condition.type == "Recommended") recommended_by_image_[update.release.image] = condition;
    }
  }
  // availableUpdates also lists the conditional updates that were recommended (Evaluate).
  for (const auto& release : available) {
    if (!conditional_images.count(release.image)) lists_.updates.recommended.push_back(release);
  }
  lists_.present = !available.empty() || !previous.empty();
}

bool UpdateRetriever::ConfigChanged(const GraphRequestInputs& in) const {
  const GraphRequestInputs& last = *last_inputs_;
  return in.upstream != last.upstream || in.channel != last.channel || in.arch != last.arch ||
         in.version != last.version || in.cluster_id != last.cluster_id;
}

std::chrono::system_clock::time_point UpdateRetriever::NextFetch() const {
  if (!last_inputs_) return {};
  return std::min(last_attempt_ + settings_.poll_interval, last_sync_or_change_ + settings_.max_age);
}

RetrievedUpdates UpdateRetriever::Run(const GraphRequestInputs& inputs, bool desired_multi, bool current_multi) {
  const auto now = clock_.Now();
  fetched_ = false;
  if (!last_inputs_ || ConfigChanged(inputs)) {
    last_sync_or_change_ = now;
    last_inputs_ = inputs;
    Fetch(inputs, desired_multi, current_multi, /*keep_on_failure=*/false);
  } else if (now - last_sync_or_change_ > settings_.max_age) {
    Fetch(inputs, desired_multi, current_multi, false);
  } else if (now - last_attempt_ >= settings_.poll_interval) {
    Fetch(inputs, desired_multi, current_multi, true);
  }
  return Evaluate();
}

void UpdateRetriever::Fetch(const GraphRequestInputs& inputs, bool desired_multi, bool current_multi,
                            bool keep_on_failure) {
  const auto now = clock_.Now();
  last_attempt_ = now;
  fetched_ = true;
  auto set_retrieved = [&](std::string status, std::string why, std::string message) {
    if (retrieved_.status != status || retrieved_.last_transition_time.empty()) {
      retrieved_.last_transition_time = Rfc3339(now);
    }
    retrieved_.status = std::move(status);
    retrieved_.reason = std::move(why);
    retrieved_.message = Abbreviate(message, kMaxRetrievedMessageBytes);  // it may quote the answer
  };
  auto fail = [&](const RetrievalFailure& failure, bool client_error) {
    // Failures of the request itself read "Unable to retrieve available updates: ...";
    // the local checks have their own sentences.
    set_retrieved("False", failure.reason,
                  client_error ? "Unable to retrieve available updates: " + failure.message : failure.message);
    if (!(keep_on_failure && KeepsListsOnFailure(failure.reason))) lists_ = {};
  };

  GraphRequest request = PrepareGraphRequest(inputs);
  if (!request.ok()) {
    bool client_error = request.failure.reason == reason::kInvalidRequest;
    return fail(request.failure, client_error);
  }
  GraphAnswer answer = fetcher_.Fetch(request.url);
  // An answer longer than the agent reads is the answer's fault, like one it cannot read.
  if (answer.too_large) return fail({std::string(reason::kResponseInvalid), answer.error}, true);
  if (answer.status == 0) return fail({std::string(reason::kRemoteFailed), answer.error}, true);
  if (answer.status != 200) {
    return fail({std::string(reason::kResponseFailed), "unexpected HTTP status: " + answer.status_line}, true);
  }
  // The signature is checked on the bytes as received, before anything reads them. A
  // refused answer changes nothing but the condition (update_retriever.h).
  AnswerTrust::Outcome trusted;
  if (settings_.trust) {
    // The query as sent (PrepareGraphRequest): the version in its canonical form.
    const std::string version = request.version.ToString();
    trusted = settings_.trust->Check(answer.signature ? &*answer.signature : nullptr, answer.body,
                                     {inputs.channel, inputs.arch, version, inputs.cluster_id}, inputs.upstream,
                                     std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count());
    if (trusted.refusal) {
      return set_retrieved("False", trusted.refusal->reason, "Unable to retrieve available updates: " + trusted.refusal->message);
    }
  }
  auto graph = ParseUpdateGraph(answer.body);
  if (!graph.ok()) return fail({std::string(reason::kResponseInvalid), graph.status().message()}, true);
  UpdatesOrFailure updates = ComputeAvailableUpdates(*graph, {request.version, desired_multi, current_multi}, inputs.channel,
                                                    settings_.kept);
  if (!updates.ok()) return fail(updates.failure, true);
  if (settings_.trust) settings_.trust->Taken(trusted);  // durable before the lists are shown
  lists_.updates = std::move(updates.updates);
  lists_.present = true;
  last_sync_or_change_ = now;
  set_retrieved("True", "", "");
}

RetrievedUpdates UpdateRetriever::Evaluate() {
  const auto now = clock_.Now();
  RetrievedUpdates out;
  out.retrieved = retrieved_;
  out.fetched = fetched_;
  if (!lists_.present) return out;
  out.current = lists_.updates.current;
  out.available = lists_.updates.recommended;

  std::map<std::string, Condition> conditions;
  for (const auto& update : lists_.updates.conditional) {
    RecommendedCondition verdict = EvaluateRecommended(update.risks, match_);
    Condition condition{"Recommended", verdict.status, verdict.reason, verdict.message, Rfc3339(now)};
    auto previous = recommended_by_image_.find(update.release.image);
    if (previous != recommended_by_image_.end() && previous->second.status == condition.status) {
      condition.last_transition_time = previous->second.last_transition_time;
    }
    conditions[update.release.image] = condition;
    if (condition.status == "True") {
      bool listed = std::any_of(out.available.begin(), out.available.end(),
                                [&](const Release& r) { return r.image == update.release.image; });
      if (!listed) out.available.push_back(update.release);
    }
    if (condition.status == "Unknown") out.risks_pending = true;
    out.conditional.push_back({update.release, update.risks, {std::move(condition)}});
  }
  recommended_by_image_ = std::move(conditions);
  std::stable_sort(out.available.begin(), out.available.end(), NewerFirst);
  return out;
}

}  // namespace cincinnati::agent
