#include "service/view_cache.h"

#include <algorithm>
#include <set>

#include "core/answer_signature.h"
#include "core/graph_json.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "http_server/gzip.h"
#include "service/http_names.h"

namespace cincinnati::server {
namespace {

// Instants a real clock gives (far from where int64 and double disagree).
constexpr int64_t kSaneInstant = int64_t{1} << 50;

// 32 hex digits as a selection key; none for anything else.
std::optional<http_server::PiecedDocument::SelectionKey> SelectionOf(std::string_view hash) {
  if (hash.size() != 32) return std::nullopt;
  uint64_t halves[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    const char c = hash[i];
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    halves[i / 16] = (halves[i / 16] << 4) | static_cast<uint64_t>(digit);
  }
  return http_server::PiecedDocument::SelectionKey{halves[0], halves[1]};
}

}  // namespace

View::View(std::string body) : body_(std::make_shared<const std::string>(std::move(body))) {
  std::string hash = Sha256Hex(*body_).substr(0, 32);
  etag_ = "\"" + hash + "\"";
  gzip_etag_ = "\"" + hash + "-gzip\"";
}

View::View(std::string etag_hash, std::shared_ptr<const http_server::PiecedDocument> document,
           std::vector<uint32_t> pieces)
    : document_(std::move(document)),
      pieces_(std::move(pieces)),
      selection_(SelectionOf(etag_hash)),
      etag_("\"" + etag_hash + "\""),
      gzip_etag_("\"" + etag_hash + "-gzip\"") {}

const std::shared_ptr<const std::string>& View::body() const {
  if (document_) {
    std::call_once(body_once_, [this] { body_ = std::make_shared<const std::string>(document_->Plain(pieces_)); });
  }
  return body_;
}

View::Parts View::BodyParts() const {
  if (!document_) return {body_, nullptr};
  return {document_->head(), std::make_shared<const std::string>(document_->PlainTail(pieces_))};
}

View::Parts View::GzipParts() const {
  if (!document_) return {Gzip(), nullptr};
  return {document_->gzip_head(), std::make_shared<const std::string>(document_->GzipTail(pieces_, selection_))};
}

std::shared_ptr<const std::string> View::Gzip() const {
  std::call_once(gzip_once_, [this] {
    gzip_ = std::make_shared<const std::string>(document_ ? document_->Gzip(pieces_) : GzipCompress(*body()));
  });
  return gzip_;
}

std::shared_ptr<const FileBody> View::BodyFile() const {
  if (document_ || body_->size() < kFileThreshold) return nullptr;
  std::call_once(body_file_once_, [this] { body_file_ = FileBody::From(*body_); });
  return body_file_;
}

std::shared_ptr<const FileBody> View::GzipFile() const {
  if (document_) return nullptr;
  std::shared_ptr<const std::string> gz = Gzip();
  if (gz->size() < kFileThreshold) return nullptr;
  std::call_once(gzip_file_once_, [this, gz] { gzip_file_ = FileBody::From(*gz); });
  return gzip_file_;
}

Result<std::shared_ptr<const View>> ComputeView(const TransformChain& chain, const Graph& graph,
                                                const Parameters& params) {
  TransformContext context;
  context.parameters = params;
  CINCINNATI_ASSIGN_OR_RETURN(Graph view, RunChainOn(chain, graph, context));
  return std::make_shared<const View>(WriteGraphJson(view, {.schema_version = 1}));
}

ViewCache::ViewCache(const TransformChain& chain, std::shared_ptr<const Graph> graph, size_t max_bytes,
                     uint64_t generation, ViewCacheCounters counters)
    : chain_(chain), graph_(std::move(graph)), generation_(generation), counters_(counters), views_(max_bytes) {
  std::set<std::string> keys;
  for (; prefix_ < chain_.size(); ++prefix_) {
    auto used = chain_[prefix_]->cache_key_parameters();
    if (!used) break;
    keys.insert(used->begin(), used->end());
    key_entitlements_ |= chain_[prefix_]->reads_entitlements();
  }
  if (prefix_ > 0 || chain_.empty()) key_parameters_ = std::vector<std::string>(keys.begin(), keys.end());
  keys_channel_ = keys.count("channel") > 0;
}

std::optional<std::string> ViewCache::Key(const Parameters& params, const ClusterEntitlements& entitlements) const {
  if (!key_parameters_) return std::nullopt;
  std::string key;
  if (key_entitlements_) {
    for (const std::string& name : entitlements.hotfixes) (key += name) += ',';
    key += '\0';
  }
  for (const std::string& name : *key_parameters_) {
    auto it = params.find(name);
    if (it == params.end()) {
      key += '\x01';  // absent differs from empty
    } else {
      key += '\x02';
      key += it->second;
    }
    key += '\0';
  }
  return key;
}

Result<std::shared_ptr<const ViewCache::Entry>> ViewCache::ComputeEntry(const TransformContext& request,
                                                                        bool kept) const {
  TransformContext context;
  context.parameters = request.parameters;
  context.entitlements = request.entitlements;
  CINCINNATI_ASSIGN_OR_RETURN(Graph prefix, RunStepsOn(chain_, 0, prefix_, *graph_, context));
  auto entry = std::make_shared<Entry>();
  for (size_t i = prefix_; i < chain_.size(); ++i) entry->personal |= chain_[i]->AppliesTo(prefix);
  entry->view = std::make_shared<const View>(WriteGraphJson(prefix, {.schema_version = 1}));
  if (entry->personal) {
    entry->graph = std::make_shared<const Graph>(std::move(prefix));
    // Pieces pay off over many requests: an entry that is not kept runs the step. They
    // are cut for the entry's channel, so the channel must be part of its key.
    if (kept && keys_channel_ && prefix_ + 1 == chain_.size()) {
      entry->phased = dynamic_cast<const policy::PhasedRollout*>(chain_[prefix_].get());
      if (entry->phased) entry->pieces = std::make_shared<Entry::Pieces>();
    }
  }
  return std::shared_ptr<const Entry>(std::move(entry));
}

size_t ViewCache::Cost(const std::string& key, const Entry& entry) {
  const size_t body = entry.view->body()->size();
  size_t cost = Bookkeeping(key) + body + body / 4;
  if (body >= 32 * 1024) cost += body + body / 4;
  if (entry.personal) cost += 4 * body;
  if (entry.pieces) cost += body * 5 / 2;
  return cost;
}

Result<std::shared_ptr<const ViewCache::Entry>> ViewCache::GetEntry(const Parameters& params,
                                                                    const ClusterEntitlements& entitlements) {
  std::optional<std::string> key = Key(params, entitlements);
  if (key) {
    if (auto it = precomputed_.find(*key); it != precomputed_.end()) {
      Count(counters_.hits);
      return it->second;
    }
    if (std::shared_ptr<const Entry> kept = views_.Find(*key)) {
      Count(counters_.hits);
      return kept;
    }
    if (std::shared_ptr<const Entry> kept = AwaitOrClaim(*key)) {
      Count(counters_.hits);
      return kept;
    }
  }
  TransformContext request;  // only on a miss: the hit path copies nothing
  request.parameters = params;
  request.entitlements = entitlements;
  Count(counters_.misses);
  if (!key) return ComputeEntry(request, false);
  // Whatever happens (an error result, an exception), the waiters are let go.
  struct Claim {
    ViewCache* cache;
    const std::string& key;
    ~Claim() { cache->Release(key); }
  } claim{this, *key};
  CINCINNATI_ASSIGN_OR_RETURN(std::shared_ptr<const Entry> entry, ComputeEntry(request, true));
  auto channel = params.find("channel");
  return Keep(*key, channel == params.end() ? std::string() : channel->second, std::move(entry));
}

std::shared_ptr<const ViewCache::Entry> ViewCache::AwaitOrClaim(const std::string& key) {
  std::unique_lock lock(computing_mu_);
  if (computing_.count(key)) {
    waiting_.fetch_add(1, std::memory_order_relaxed);
    computed_.wait(lock, [&] { return computing_.count(key) == 0; });
    waiting_.fetch_sub(1, std::memory_order_relaxed);
  }
  // Also when nobody was computing: one may have finished since the first look.
  if (std::shared_ptr<const Entry> kept = views_.Find(key)) return kept;
  computing_.insert(key);
  return nullptr;
}

void ViewCache::Release(const std::string& key) {
  {
    std::lock_guard lock(computing_mu_);
    computing_.erase(key);
  }
  computed_.notify_all();
}

std::shared_ptr<const ViewCache::Entry> ViewCache::Keep(const std::string& key, const std::string& channel,
                                                       std::shared_ptr<const Entry> entry) {
  size_t cost = 0;
  auto same = precomputed_by_answer_.find(AnswerKey(channel, *entry));
  if (same != precomputed_by_answer_.end()) {
    // A channel-target view for a version not in the channel is the channel's view:
    // kept as a second key to the precomputed entry (its pieces too: they were cut for
    // the same channel).
    entry = same->second;
    cost = Bookkeeping(key);
  } else {
    cost = Cost(key, *entry);
  }
  size_t evicted = 0;
  entry = views_.Insert(key, std::move(entry), cost, &evicted);
  if (counters_.evictions && evicted > 0) counters_.evictions->Increment(static_cast<double>(evicted));
  return entry;
}

bool ViewCache::AdoptGeneration(uint64_t generation, int64_t now_ms) {
  const uint64_t lead_ms = kMaxGenerationLead * 1000;
  uint64_t current = generation_.load();
  while (generation != current) {
    const bool ahead = now_ms > 0 && current > static_cast<uint64_t>(now_ms) + lead_ms;
    if (generation < current && !ahead) return false;
    if (generation_.compare_exchange_weak(current, generation)) return true;
  }
  return false;
}

Result<std::shared_ptr<const View>> ViewCache::Get(const Parameters& params, const ClusterEntitlements& entitlements) {
  auto context = [&] {
    TransformContext c;
    c.parameters = params;
    c.entitlements = entitlements;
    return c;
  };
  if (!key_parameters_) {
    TransformContext c = context();
    CINCINNATI_ASSIGN_OR_RETURN(Graph view, RunChainOn(chain_, *graph_, c));
    return std::make_shared<const View>(WriteGraphJson(view, {.schema_version = 1}));
  }
  CINCINNATI_ASSIGN_OR_RETURN(std::shared_ptr<const Entry> entry, GetEntry(params, entitlements));
  if (!entry->personal) return entry->view;
  if (entry->phased) {
    const int64_t now = entry->phased->Now();
    if (std::shared_ptr<const AnswerPieces> pieces = PiecesAt(*entry, params, now)) {
      auto id = params.find("id");
      AnswerPieces::Selection s = pieces->Select(id == params.end() ? std::string_view() : id->second, now);
      assembled_.fetch_add(1, std::memory_order_relaxed);
      return std::make_shared<const View>(std::move(s.etag_hash), pieces->document(), std::move(s.pieces));
    }
  }
  TransformContext personal_context = context();
  CINCINNATI_ASSIGN_OR_RETURN(Graph personal,
                              RunStepsOn(chain_, prefix_, chain_.size(), *entry->graph, personal_context));
  return std::make_shared<const View>(WriteGraphJson(personal, {.schema_version = 1}));
}

std::shared_ptr<const AnswerPieces> ViewCache::PiecesAt(const Entry& entry, const Parameters& params,
                                                        int64_t now) const {
  std::shared_ptr<const AnswerPieces> current = entry.pieces->current.load(std::memory_order_acquire);
  if (current && current->Covers(now)) return current;
  if (entry.pieces->uncuttable.load(std::memory_order_relaxed)) return nullptr;
  // While one request cuts the next span's pieces, the others run the step: no request
  // waits for another's work.
  std::unique_lock<std::mutex> lock(entry.pieces->cutting, std::try_to_lock);
  if (!lock.owns_lock()) return nullptr;
  current = entry.pieces->current.load(std::memory_order_acquire);
  if (current && current->Covers(now)) return current;
  auto span = entry.phased->SpanAt(*entry.graph, params, now);
  if (span.ok()) current = AnswerPieces::Build(*span);
  if (!span.ok() || !current) {
    // The graph's doing (a key that does not decode, a document too large), not the
    // instant's, unless the clock itself is absurd.
    if (now > -kSaneInstant && now < kSaneInstant) entry.pieces->uncuttable.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  entry.pieces->current.store(current, std::memory_order_release);
  return current;
}

size_t ViewCache::Precompute(const std::string& channels_key, const std::string& arch_key) {
  // Every request naming only a channel and an arch (the common case) is answered
  // from here; requests with further key parameters (version, hotfixes) on demand.
  if (!key_parameters_) return 0;
  const auto& keys = *key_parameters_;
  if (std::find(keys.begin(), keys.end(), "arch") == keys.end() ||
      std::find(keys.begin(), keys.end(), "channel") == keys.end()) {
    return 0;
  }
  std::set<std::string> channels, arches;
  for (const Node& n : graph_->nodes()) {
    if (!n.concrete) continue;
    if (auto it = n.metadata.find(channels_key); it != n.metadata.end()) {
      for (std::string_view c : Split(it->second, ',')) channels.emplace(TrimWhitespace(c));
    }
    if (auto it = n.metadata.find(arch_key); it != n.metadata.end()) {
      for (std::string_view a : Split(it->second, ',')) arches.emplace(TrimWhitespace(a));
    }
  }
  for (const std::string& channel : channels) {
    for (const std::string& arch : arches) {
      TransformContext request;
      request.parameters = {{"channel", channel}, {"arch", arch}};
      auto entry = ComputeEntry(request, true);
      if (!entry.ok()) continue;
      precomputed_by_answer_.emplace(AnswerKey(channel, **entry), *entry);
      precomputed_.emplace(*Key(request.parameters, request.entitlements), std::move(entry).value());
    }
  }
  return precomputed_.size();
}

size_t ViewCache::size() const { return precomputed_.size() + views_.entries(); }

}  // namespace cincinnati::server
