// UpdateRetriever: the first half of the CVO's update loop (as openshift/cincinnati's
// docs/design/openshift.md describes it), the CVO's available-updates worker: decides whether to ask
// the update service, asks it, reads the answer, evaluates the risks of conditional
// updates, and yields what ClusterVersion's status shows (availableUpdates,
// conditionalUpdates with their Recommended condition, the RetrievedUpdates condition).
//
// When it asks, and what a failure leaves shown (the CVO's cache policy): on the first
// run; at once when the upstream, channel, arch or current version changed, or 24 h
// after the last success or change (a failure then clears the lists); otherwise once
// the poll interval has passed since the last attempt (a RemoteFailed, ResponseFailed
// or ResponseInvalid failure then keeps the lists retrieved before, shown with
// RetrievedUpdates=False). With an AnswerTrust (answer_trust.h), an answer is checked
// for its signature before it is read. A refused one (SignatureInvalid, ...) never
// supplies lists and follows the same policy: after a change or 24 h the lists go (the
// old channel's updates are not this channel's), else the last answer's stay. Unlike
// other failures, a refusal also keeps them at the first run after a restart (Seed),
// when they answer the same query (ListsOrigin) and are less than 24 h old: an answer
// that cannot be trusted cannot say there is nothing to offer. Between fetches it only
// re-evaluates risks. Conditional updates whose Recommended is True join
// availableUpdates; both lists are newest first. A Recommended condition keeps its
// lastTransitionTime while its status does not change (by image). With a
// PollReceiptBook (an agent that sends update reports), each request carries the
// receipt held for its version and a 200's new receipt is kept (poll_receipt_book.h).
//
// Not thread-safe: one loop owns it. I/O is behind GraphFetcher and the RiskMatcher;
// the clock is injected. Never throws.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "agent/answer_trust.h"
#include "agent/graph_client_names.h"
#include "agent/poll_receipt_book.h"
#include "agent/risks.h"
#include "config_api/cluster_version.h"
#include "env/clock.h"
#include "kube/json_value.h"

namespace cincinnati::agent {

// Conditions and conditional updates as ClusterVersion's status shows them.
using config_api::Condition;
using config_api::ConditionalUpdateStatus;

// What the lists shown answer, kept with them (the agent writes it into the stored
// ClusterVersion's annotations, in the same write as the lists) so that a restarted
// agent knows whether a refused first answer may leave them shown.
struct ListsOrigin {
  std::string query;  // the graph request's URL (upstream, arch, channel, id, version)
  // The last success, to within kListsOriginResolution (moved on no more often, so that
  // a poll that changed nothing writes nothing); earlier, never later, than the truth.
  std::chrono::system_clock::time_point retrieved;

  bool operator==(const ListsOrigin&) const = default;
  void Annotate(JsonValue& annotations) const;
  // nullopt when absent or unreadable (the lists are then taken to answer nothing known).
  static std::optional<ListsOrigin> FromAnnotations(const JsonValue* annotations);
};
inline constexpr std::chrono::hours kListsOriginResolution{1};

struct RetrievedUpdates {
  std::vector<Release> available;
  std::vector<ConditionalUpdateStatus> conditional;
  Condition retrieved;                 // type RetrievedUpdates
  std::optional<Release> current;      // the current node, when the last answer had it
  bool fetched = false;                // this run asked the update service
  bool risks_pending = false;          // some Recommended is Unknown: run again soon (1 s)
  std::optional<ListsOrigin> origin;   // of the lists (nullopt: none, or of nothing known)
};

// The graph request on the wire: GET with Accept and User-Agent, no credentials.
struct GraphAnswer {
  long status = 0;          // 0: no answer (transport error in `error`)
  std::string status_line;  // e.g. "500 Internal Server Error"
  std::string error;
  std::string body;                     // as received, after content decoding (gzip)
  std::optional<std::string> signature;  // the Cincinnati-Signature header, when present
  std::optional<std::string> signature_withheld;  // Cincinnati-Signature-Withheld, when present
  std::optional<std::string> poll_receipt;        // Cincinnati-Poll-Receipt, when present
  bool too_large = false;   // the answer was longer than the fetcher reads (an error too)
};
class GraphFetcher {
 public:
  virtual ~GraphFetcher() = default;
  // `poll_receipt`: sent as the Cincinnati-Poll-Receipt header (poll_receipt_book.h);
  // nullptr: no such header, as the CVO sends none.
  virtual GraphAnswer Fetch(const std::string& url, const std::string* poll_receipt) = 0;
  GraphAnswer Fetch(const std::string& url) { return Fetch(url, nullptr); }
};
// Over HTTP(S) with the http client (redirects followed, CA directory, a timeout, a
// body cap). The CVO waits up to an hour for an answer; a slow or hostile service then
// holds the agent's polls for that long, so the default here is 5 minutes. The body is
// capped at 16 MiB by default (a channel's answer is well under 1 MiB, the whole
// OpenShift graph about 10 MiB): reading an answer takes up to about 13 bytes of
// memory per byte of it (ParseUpdateGraph), so the cap bounds the agent's memory too.
// Once `stop` is requested a fetch in flight ends within about a second.
inline constexpr std::chrono::milliseconds kDefaultFetchTimeout = std::chrono::minutes(5);
inline constexpr size_t kDefaultMaxAnswerBytes = size_t{16} << 20;
class HttpGraphFetcher : public GraphFetcher {
 public:
  explicit HttpGraphFetcher(std::string ca_path = {}, std::chrono::milliseconds timeout = kDefaultFetchTimeout,
                            std::stop_token stop = {}, size_t max_bytes = kDefaultMaxAnswerBytes)
      : ca_path_(std::move(ca_path)), timeout_(timeout), stop_(std::move(stop)), max_bytes_(max_bytes) {}
  using GraphFetcher::Fetch;
  GraphAnswer Fetch(const std::string& url, const std::string* poll_receipt) override;

 private:
  std::string ca_path_;
  std::chrono::milliseconds timeout_;
  std::stop_token stop_;
  size_t max_bytes_;
};

struct RetrieverSettings {
  // The CVO draws the interval once per process from [2 min, 4 min).
  std::chrono::milliseconds poll_interval{std::chrono::minutes(3)};
  std::chrono::milliseconds max_age{std::chrono::hours(24)};
  KeptLimits kept;  // what is kept of an answer (over them: ResponseInvalid)
  AnswerTrust* trust = nullptr;  // outlives the retriever; nullptr: signatures are not checked
  // Outlives the retriever; nullptr: no receipts asked for (an agent that sends no reports).
  PollReceiptBook* receipts = nullptr;
  // A hosted control plane (the CVO's --hypershift): every `_id=""` in a risk's PromQL
  // becomes `_id="<cluster id>"` as each answer is read, so that a Prometheus holding
  // many clusters' series is asked about this one (InjectClusterId).
  bool inject_cluster_id = false;
};

// The CVO's rewrite in its hosted-control-plane mode (pkg/cvo/availableupdates.go,
// injectClusterIdIntoConditionalUpdates): in every PromQL matching rule, each `_id=""`
// becomes `_id="<cluster_id>"`; nothing else is touched.
void InjectClusterId(const std::string& cluster_id, std::vector<graph_client::ConditionalUpdate>& conditional);

class UpdateRetriever {
 public:
  // `clock` (outliving the retriever) times polls and dates conditions.
  UpdateRetriever(GraphFetcher& fetcher, RiskMatcher match, env::Clock& clock, RetrieverSettings settings = {});

  // Seeds the lists and the Recommended conditions from a persisted status, so that
  // their lastTransitionTime survives a restart, and so do the lists when the first
  // answer after it is refused for its signature and `origin` says they answer the same
  // query, less than 24 h ago (any other failure of that first fetch drops them).
  void Seed(const std::vector<Release>& available, const std::vector<ConditionalUpdateStatus>& previous,
            std::optional<ListsOrigin> origin = std::nullopt);

  RetrievedUpdates Run(const GraphRequestInputs& inputs, bool desired_multi = false, bool current_multi = false);

  // When the next run would ask the update service without a change of inputs.
  std::chrono::system_clock::time_point NextFetch() const;

 private:
  struct Lists {
    AvailableUpdates updates;
    bool present = false;
    std::optional<ListsOrigin> origin;
  };
  // Which failures of a fetch leave the lists shown (the rest clear them).
  struct KeepLists {
    bool transient = false;  // RemoteFailed, ResponseFailed, ResponseInvalid
    bool refused = false;    // a signature refusal
  };
  bool ConfigChanged(const GraphRequestInputs& inputs) const;
  bool SeededFor(const GraphRequestInputs& inputs, std::chrono::system_clock::time_point now) const;
  void Fetch(const GraphRequestInputs& inputs, bool desired_multi, bool current_multi, KeepLists keep);
  void SetRetrieved(std::string status, std::string why, const std::string& message);
  void Fail(const RetrievalFailure& failure, bool client_error, bool keep);
  void Took(AvailableUpdates updates, const std::string& query);
  RetrievedUpdates Evaluate();

  GraphFetcher& fetcher_;
  RiskMatcher match_;
  env::Clock& clock_;
  RetrieverSettings settings_;

  std::optional<GraphRequestInputs> last_inputs_;
  std::chrono::system_clock::time_point last_attempt_{};
  std::chrono::system_clock::time_point last_sync_or_change_{};
  Lists lists_;
  Condition retrieved_{"RetrievedUpdates", "False", "", "", ""};
  std::map<std::string, Condition> recommended_by_image_;
  bool fetched_ = false;
};

}  // namespace cincinnati::agent
