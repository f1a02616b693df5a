// ViewCache: a policy engine's answers for one upstream graph, keyed by the client
// parameters the transform chain declares it reads (channel, arch by default) and, when
// a step reads them, the cluster's entitlements.
//
// The chain's leading steps that declare their parameters form a cacheable prefix;
// the rest (per-cluster steps such as phased rollouts) run per request on the cached
// prefix result, and only when one of them applies to it, so a graph without phased
// releases is still served entirely from memory. When the only such step is the phased
// rollout, a kept entry holds every cluster's answer for the current span of time as
// pieces (service/answer_pieces.h), cut again when time leaves the span: a request
// assembles its answer, plain or gzip, in microseconds, whatever its cluster id.
//
// Answers are computed once and served from memory: the versioned JSON body, its
// ETag, and a gzip copy made on first demand. When the chain reads channel and arch,
// Precompute() builds every (channel, arch) pair present in the graph up front (other
// key parameters absent, as in a plain client's request).
// Errors (bad parameters) are not cached. Answers computed on demand are kept within a
// byte budget (`max_bytes`, --views.max_cached_bytes), evicted by CLOCK (clock_cache.h):
// a hit takes a shared lock and marks its entry, only an insert takes the exclusive lock.
// An evicted key asked again runs the chain again; requests that miss on a key another
// request is computing wait for it rather than run the chain too (one run per key at a
// time). There is no count cap: random
// well-formed channel names cost bytes like any other key. Precomputed (channel, arch)
// views are outside the budget: they are bounded by the graph (its channels x arches).
// A view computed on demand whose answer is its channel's precomputed view (a
// channel-target request for a version not in the channel: the view unchanged) is kept
// as another key to the precomputed entry, and costs its bookkeeping alone.
// An entry's cost is estimated when it is kept, for all it may come to hold:
//   512 (bookkeeping) + 2 x key + B (the answer's body) + B/4 (its gzip copy, made on
//   demand) + 1.25 B more when B >= 32 KiB (memfd copies of body and gzip for sendfile)
//   + 4 B when a step runs per request (its graph, about four times its JSON in memory)
//   + 2.5 B when that step is the phased rollout (its answer pieces, cut on demand).
// Counters (hits, misses: the cacheable prefix ran, evictions) go to `counters` when set,
// which outlive the cache (a new graph brings a new cache, the counts go on).
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/graph.h"
#include "core/transform.h"
#include "http_server/http_types.h"
#include "http_server/pieced_document.h"
#include "http_server/metrics.h"
#include "service/answer_pieces.h"
#include "service/clock_cache.h"
#include "service/http_names.h"

namespace cincinnati::server {

class View {
 public:
  explicit View(std::string body);
  // An answer assembled from pieces on first demand, plain or gzip; `etag_hash` (32 hex
  // digits) names its bytes.
  View(std::string etag_hash, std::shared_ptr<const http_server::PiecedDocument> document, std::vector<uint32_t> pieces);
  const std::shared_ptr<const std::string>& body() const;
  // What to send, in at most two parts (`tail` may be null): for an assembled answer
  // the part it shares with every other and its own, so the shared part is not copied.
  struct Parts {
    std::shared_ptr<const std::string> head, tail;
  };
  Parts BodyParts() const;
  Parts GzipParts() const;
  const std::string& etag() const { return etag_; }            // "\"<hash>\""
  const std::string& gzip_etag() const { return gzip_etag_; }  // "\"<hash>-gzip\""
  std::shared_ptr<const std::string> Gzip() const;
  // File copies of large bodies for sendfile (nullptr for small ones and assembled
  // answers, which are sent once), made on demand.
  std::shared_ptr<const FileBody> BodyFile() const;
  std::shared_ptr<const FileBody> GzipFile() const;

 private:
  static constexpr size_t kFileThreshold = 32 * 1024;
  std::shared_ptr<const http_server::PiecedDocument> document_;  // set: assembled
  std::vector<uint32_t> pieces_;
  // The ETag hash as the document's selection key: equal ETags name equal bytes, so the
  // document may remember this selection's CRC (http_server/pieced_document.h).
  std::optional<http_server::PiecedDocument::SelectionKey> selection_;
  mutable std::once_flag body_once_;
  mutable std::shared_ptr<const std::string> body_;
  mutable std::once_flag body_file_once_, gzip_file_once_;
  mutable std::shared_ptr<const FileBody> body_file_, gzip_file_;
  std::string etag_, gzip_etag_;
  mutable std::once_flag gzip_once_;
  mutable std::shared_ptr<const std::string> gzip_;
};

// Runs `chain` on `graph` for `params` and wraps the result as a versioned document.
Result<std::shared_ptr<const View>> ComputeView(const TransformChain& chain, const Graph& graph,
                                                const Parameters& params);

// Where a ViewCache counts its work (any may be null).
struct ViewCacheCounters {
  Counter* hits = nullptr;       // answered from a kept or precomputed view
  Counter* misses = nullptr;     // the cacheable prefix of the chain ran
  Counter* evictions = nullptr;  // kept views dropped for the budget
};

class ViewCache {
 public:
  static constexpr size_t kDefaultMaxBytes = size_t{256} << 20;
  // `generation`: the number of `graph` (signing/graph_generation.h), which signed answers carry.
  ViewCache(const TransformChain& chain, std::shared_ptr<const Graph> graph, size_t max_bytes = kDefaultMaxBytes,
            uint64_t generation = 0, ViewCacheCounters counters = {});
  uint64_t generation() const { return generation_.load(std::memory_order_relaxed); }
  // The same graph, numbered again upstream. A higher number is taken (a graph builder
  // restarted without its state: policy engines behind one address then agree on the
  // larger number); a lower one only when the number held is more than
  // kMaxGenerationLead ahead of `now_ms` (it came from a clock that was ahead, and its
  // source gave it up: signing/graph_generation.h). True when the number changed.
  bool AdoptGeneration(uint64_t generation, int64_t now_ms);

  Result<std::shared_ptr<const View>> Get(const Parameters& params, const ClusterEntitlements& entitlements = {});
  // Builds every (channel, arch) answer into a map that is read without locks. Call
  // before sharing the cache between threads. Returns the number of views built.
  size_t Precompute(const std::string& channels_key, const std::string& arch_key);
  size_t size() const;  // precomputed and kept views
  // The views computed on demand and kept: their estimated cost (see above) and number.
  size_t kept_bytes() const { return views_.bytes(); }
  size_t kept_entries() const { return views_.entries(); }
  uint64_t evictions() const { return views_.evictions(); }
  // Requests now waiting for another's computation of their key.
  size_t waiting() const { return waiting_.load(std::memory_order_relaxed); }
  const Graph& graph() const { return *graph_; }
  // Answers assembled from pieces so far (the others ran the per-request steps).
  uint64_t assembled() const { return assembled_.load(std::memory_order_relaxed); }

 private:
  // The answer of the cacheable prefix, and its graph when later steps must run on it.
  struct Entry {
    std::shared_ptr<const View> view;
    std::shared_ptr<const Graph> graph;  // set only when `personal`
    bool personal = false;
    // When the only per-request step is a phased rollout: every cluster's answer
    // during the current span, as pieces (replaced when time leaves the span).
    const policy::PhasedRollout* phased = nullptr;
    struct Pieces {
      std::atomic<std::shared_ptr<const AnswerPieces>> current;  // read without a lock
      std::mutex cutting;  // one thread cuts the next span's pieces
      std::atomic<bool> uncuttable{false};  // the graph cannot be cut: for good
    };
    std::shared_ptr<Pieces> pieces;
  };
  // The pieces covering `now`, cut when time has left the last span; nullptr when the
  // span cannot be cut or another request is cutting it (the step then runs for the
  // request, and reports any error).
  std::shared_ptr<const AnswerPieces> PiecesAt(const Entry& entry, const Parameters& params, int64_t now) const;
  std::optional<std::string> Key(const Parameters& params, const ClusterEntitlements& entitlements) const;
  // `kept`: the entry will be cached (then it may hold answer pieces).
  Result<std::shared_ptr<const Entry>> ComputeEntry(const TransformContext& request, bool kept) const;
  // What a kept entry for `key` costs against the budget (the estimate above).
  static size_t Cost(const std::string& key, const Entry& entry);
  static size_t Bookkeeping(const std::string& key) { return 512 + 2 * key.size(); }
  static void Count(Counter* counter) {
    if (counter) counter->Increment();
  }
  Result<std::shared_ptr<const Entry>> GetEntry(const Parameters& params, const ClusterEntitlements& entitlements);
  // On a miss: the entry another request kept for `key` while this one waited for it,
  // or null after marking `key` as computed by this request.
  std::shared_ptr<const Entry> AwaitOrClaim(const std::string& key);
  void Release(const std::string& key);
  // Keeps `entry` for `key` (or the precomputed entry of `channel` with its answer);
  // returns what is kept.
  std::shared_ptr<const Entry> Keep(const std::string& key, const std::string& channel,
                                    std::shared_ptr<const Entry> entry);
  // A precomputed entry's channel and ETag: pieces are cut per channel, so two channels'
  // equal answers are not one entry.
  static std::string AnswerKey(const std::string& channel, const Entry& entry) {
    return channel + '\0' + entry.view->etag();
  }

  const TransformChain& chain_;
  std::shared_ptr<const Graph> graph_;
  std::atomic<uint64_t> generation_;
  ViewCacheCounters counters_;
  size_t prefix_ = 0;  // steps [0, prefix_) are cacheable
  std::optional<std::vector<std::string>> key_parameters_;  // nullopt: nothing cacheable
  bool key_entitlements_ = false;  // a cacheable step reads the entitlements
  bool keys_channel_ = false;      // a cacheable step reads the channel
  std::unordered_map<std::string, std::shared_ptr<const Entry>> precomputed_;  // immutable once shared
  std::unordered_map<std::string, std::shared_ptr<const Entry>> precomputed_by_answer_;  // by AnswerKey; likewise
  ClockCache<const Entry> views_;  // computed on demand
  std::mutex computing_mu_;
  std::condition_variable computed_;
  std::unordered_set<std::string> computing_;  // keys whose chain runs now
  std::atomic<size_t> waiting_{0};
  std::atomic<uint64_t> assembled_{0};
};

}  // namespace cincinnati::server
