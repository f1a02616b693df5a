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
using kube::FindMember;
using kube::TextOf;
using kube::SetMember;

namespace reason = retrieval_reason;

std::string Rfc3339(std::chrono::system_clock::time_point t) {
  return graphdata::FormatDateTime(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
}

// The RetrievedUpdates message is kept in the state; what it quotes of an answer is not
// allowed to make it large.
constexpr size_t kMaxRetrievedMessageBytes = 4096;

constexpr std::string_view kListsQueryAnnotation = "agent.cincinnati.openshift.io/updates-query";
constexpr std::string_view kListsRetrievedAnnotation = "agent.cincinnati.openshift.io/updates-retrieved";

bool KeepsListsOnFailure(std::string_view why) {
  return why == reason::kRemoteFailed || why == reason::kResponseFailed || why == reason::kResponseInvalid;
}

bool NewerFirst(const Release& a, const Release& b) {
  auto va = Version::Parse(a.version), vb = Version::Parse(b.version);
  if (!va.ok() || !vb.ok()) return a.version > b.version;
  return *vb < *va;
}

}  // namespace

GraphAnswer HttpGraphFetcher::Fetch(const std::string& url, const std::string* poll_receipt) {
  http::RequestOptions options;
  options.headers = {"Accept: " + std::string(kGraphAccept), "User-Agent: " + GraphUserAgent()};
  // What the book holds is header-safe (poll_receipt_book.h); "" asks for a first one.
  if (poll_receipt) options.headers.push_back(PollReceiptHeaderLine(*poll_receipt));
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
  if (const std::string* withheld = result.Header(kSignatureWithheldHeader)) answer.signature_withheld = *withheld;
  if (const std::string* receipt = result.Header(kPollReceiptHeader)) answer.poll_receipt = *receipt;
  return answer;
}

UpdateRetriever::UpdateRetriever(GraphFetcher& fetcher, RiskMatcher match, env::Clock& clock, RetrieverSettings settings)
    : fetcher_(fetcher), match_(std::move(match)), clock_(clock), settings_(settings) {}

void ListsOrigin::Annotate(JsonValue& annotations) const {
  SetMember(annotations, std::string(kListsQueryAnnotation), JsonValue(query));
  SetMember(annotations, std::string(kListsRetrievedAnnotation), JsonValue(Rfc3339(retrieved)));
}

std::optional<ListsOrigin> ListsOrigin::FromAnnotations(const JsonValue* annotations) {
  const JsonValue* query = annotations ? FindMember(*annotations, kListsQueryAnnotation) : nullptr;
  const JsonValue* retrieved = annotations ? FindMember(*annotations, kListsRetrievedAnnotation) : nullptr;
  if (!query || !query->is_string() || !retrieved || !retrieved->is_string()) return std::nullopt;
  auto seconds = graphdata::ParseDateTime(TextOf(*retrieved));
  if (!seconds.ok()) return std::nullopt;
  return ListsOrigin{TextOf(*query), std::chrono::system_clock::time_point(std::chrono::seconds(*seconds))};
}

void UpdateRetriever::Seed(const std::vector<Release>& available, const std::vector<ConditionalUpdateStatus>& previous,
                           std::optional<ListsOrigin> origin) {
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
  lists_.origin = std::move(origin);
}

bool UpdateRetriever::ConfigChanged(const GraphRequestInputs& in) const {
  const GraphRequestInputs& last = *last_inputs_;
  return in.upstream != last.upstream || in.channel != last.channel || in.arch != last.arch ||
         in.version != last.version || in.cluster_id != last.cluster_id;
}

// Whether the seeded lists answer the query `inputs` make, retrieved less than 24 h ago.
bool UpdateRetriever::SeededFor(const GraphRequestInputs& inputs, std::chrono::system_clock::time_point now) const {
  if (!lists_.origin) return false;
  const GraphRequest request = PrepareGraphRequest(inputs);
  // A retrieval time ahead of the clock (a clock set back since) is as good as unknown.
  return request.ok() && request.url == lists_.origin->query && lists_.origin->retrieved <= now &&
         now - lists_.origin->retrieved <= settings_.max_age;
}

std::chrono::system_clock::time_point UpdateRetriever::NextFetch() const {
  if (!last_inputs_) return {};
  return std::min(last_attempt_ + settings_.poll_interval, last_sync_or_change_ + settings_.max_age);
}

RetrievedUpdates UpdateRetriever::Run(const GraphRequestInputs& inputs, bool desired_multi, bool current_multi) {
  const auto now = clock_.Now();
  fetched_ = false;
  if (!last_inputs_) {
    // The first run: a restart is no change of query, and the 24 h count from the
    // lists' own retrieval, when it is known.
    const bool seeded = SeededFor(inputs, now);
    last_sync_or_change_ = seeded ? lists_.origin->retrieved : now;
    last_inputs_ = inputs;
    Fetch(inputs, desired_multi, current_multi, {.transient = false, .refused = seeded});
  } else if (ConfigChanged(inputs)) {
    last_sync_or_change_ = now;
    last_inputs_ = inputs;
    Fetch(inputs, desired_multi, current_multi, {});
  } else if (now - last_sync_or_change_ > settings_.max_age) {
    Fetch(inputs, desired_multi, current_multi, {});
  } else if (now - last_attempt_ >= settings_.poll_interval) {
    Fetch(inputs, desired_multi, current_multi, {.transient = true, .refused = true});
  }
  return Evaluate();
}

void UpdateRetriever::SetRetrieved(std::string status, std::string why, const std::string& message) {
  if (retrieved_.status != status || retrieved_.last_transition_time.empty()) {
    retrieved_.last_transition_time = Rfc3339(last_attempt_);  // the fetch's start
  }
  retrieved_.status = std::move(status);
  retrieved_.reason = std::move(why);
  retrieved_.message = Abbreviate(message, kMaxRetrievedMessageBytes);  // it may quote the answer
}

// Failures of the request itself read "Unable to retrieve available updates: ...";
// the local checks have their own sentences. `keep`: the lists stay shown.
void UpdateRetriever::Fail(const RetrievalFailure& failure, bool client_error, bool keep) {
  SetRetrieved("False", failure.reason,
               client_error ? "Unable to retrieve available updates: " + failure.message : failure.message);
  if (!keep) lists_ = {};
}

void UpdateRetriever::Fetch(const GraphRequestInputs& inputs, bool desired_multi, bool current_multi, KeepLists keep) {
  const auto now = clock_.Now();
  last_attempt_ = now;
  fetched_ = true;
  auto fail = [&](const RetrievalFailure& failure) {
    Fail(failure, true, keep.transient && KeepsListsOnFailure(failure.reason));
  };
  GraphRequest request = PrepareGraphRequest(inputs);
  if (!request.ok()) return Fail(request.failure, request.failure.reason == reason::kInvalidRequest, false);
  const std::optional<std::string> receipt =
      settings_.receipts ? std::make_optional(settings_.receipts->For(inputs.version)) : std::nullopt;
  GraphAnswer answer = fetcher_.Fetch(request.url, receipt ? &*receipt : nullptr);
  // An answer longer than the agent reads is the answer's fault, like one it cannot read.
  if (answer.too_large) return fail({std::string(reason::kResponseInvalid), answer.error});
  if (answer.status == 0) return fail({std::string(reason::kRemoteFailed), answer.error});
  if (answer.status != 200) {
    return fail({std::string(reason::kResponseFailed), "unexpected HTTP status: " + answer.status_line});
  }
  // The service counted this poll whatever the body says: its receipt says so.
  if (settings_.receipts && answer.poll_receipt) settings_.receipts->Keep(inputs.version, *answer.poll_receipt);
  // The signature is checked on the bytes as received, before anything reads them. A
  // refused answer supplies no lists (update_retriever.h).
  AnswerTrust::Outcome trusted;
  if (settings_.trust) {
    // The query as sent (PrepareGraphRequest): the version in its canonical form.
    const std::string version = request.version.ToString();
    trusted = settings_.trust->Check(answer.signature ? &*answer.signature : nullptr, answer.body,
                                     {inputs.channel, inputs.arch, version, inputs.cluster_id}, inputs.upstream,
                                     std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count(),
                                     answer.signature_withheld ? &*answer.signature_withheld : nullptr);
    if (trusted.refusal) return Fail(*trusted.refusal, true, keep.refused);
  }
  auto graph = ParseUpdateGraph(answer.body);
  if (!graph.ok()) return fail({std::string(reason::kResponseInvalid), graph.status().message()});
  UpdatesOrFailure updates = ComputeAvailableUpdates(*graph, {request.version, desired_multi, current_multi}, inputs.channel,
                                                    settings_.kept);
  if (!updates.ok()) return fail(updates.failure);
  if (settings_.inject_cluster_id) InjectClusterId(inputs.cluster_id, updates.updates.conditional);
  if (settings_.trust) settings_.trust->Taken(trusted);  // durable before the lists are shown
  Took(std::move(updates.updates), request.url);
}

void InjectClusterId(const std::string& cluster_id, std::vector<graph_client::ConditionalUpdate>& conditional) {
  static constexpr std::string_view kEmpty = "_id=\"\"";
  const std::string with_id = "_id=\"" + cluster_id + "\"";
  for (auto& update : conditional) {
    for (auto& risk : update.risks) {
      for (auto& rule : risk.matching_rules) {
        if (rule.type != "PromQL" || !rule.promql) continue;
        std::string& promql = *rule.promql;
        for (size_t at = promql.find(kEmpty); at != std::string::npos; at = promql.find(kEmpty, at + with_id.size())) {
          promql.replace(at, kEmpty.size(), with_id);
        }
      }
    }
  }
}

// An answer's lists replace the shown ones.
void UpdateRetriever::Took(AvailableUpdates updates, const std::string& query) {
  const auto now = last_attempt_;  // the fetch's start
  std::optional<ListsOrigin> origin = std::move(lists_.origin);
  if (!origin || origin->query != query || now - origin->retrieved >= kListsOriginResolution) {
    origin = ListsOrigin{query, std::chrono::time_point_cast<std::chrono::seconds>(now)};
  }
  lists_ = {std::move(updates), true, std::move(origin)};
  last_sync_or_change_ = now;
  SetRetrieved("True", "", "");
}

RetrievedUpdates UpdateRetriever::Evaluate() {
  const auto now = clock_.Now();
  RetrievedUpdates out;
  out.retrieved = retrieved_;
  out.fetched = fetched_;
  out.origin = lists_.origin;
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
