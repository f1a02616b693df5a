// AnswerPieces: every cluster's answer to one phased channel view during one span of
// time (policy::PhasedSpan), as pieces of JSON, so that an answer is assembled per
// request instead of being computed, written and compressed.
//
// Within a span the nodes, the edges every cluster sees and the edges none sees are the
// same for all; clusters differ only in which per-cluster edges (and conditional-edge
// references) they see, and a cluster's answer is the widest view's document without
// those, in the same order. So the document is cut at each per-cluster edge: fixed runs
// between them are single pieces, and a request computes each target's rollout
// position for its id (one SHA-256 each), decides each per-cluster edge with
// policy::SeesPhasedEdge (the comparison PhasedRollout::ApplyTo makes), and names the
// pieces to join, commas included. A conditional edge whose references are all hidden
// disappears, as in Graph::FilterConditionalEdges.
//
// The bytes are exactly what the policy chain writes for that cluster and instant
// (tests/service/answer_pieces_test.cc compares them over thousands of ids and instants;
// fuzz/policy_chain.cc too). The ETag is a SHA-256 of the span's document and cuts
// and of the per-cluster edges seen: equal ETags mean equal bytes (as for every answer),
// and equal bytes within a span share one. It is not a hash of the bytes (that would
// cost more than assembling them), so at the end of a span every cluster's ETag changes
// once, even where its answer did not, and an answer the step computed instead (the
// cache full, or the next span being cut) carries its body's hash.
// Immutable after Build(); thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http_server/pieced_document.h"
#include "policy/phased_rollout.h"

namespace cincinnati::server {

class AnswerPieces {
 public:
  // The pieces of `span`'s answers (JSON with "version": 1, as ComputeView writes);
  // nullptr for a widest document over kMaxDocument (64 MiB: real channels are below
  // 1 MiB; PiecedDocument counts bits in 32 bits).
  static constexpr size_t kMaxDocument = size_t{64} << 20;
  static std::shared_ptr<const AnswerPieces> Build(const policy::PhasedSpan& span);

  bool Covers(int64_t now) const { return from_ <= now && now < until_; }

  struct Selection {
    std::vector<uint32_t> pieces;  // ids in document()
    std::string etag_hash;         // 32 hex digits
  };
  // Which pieces form the answer of cluster `id` at `now` (within the span).
  Selection Select(std::string_view id, int64_t now) const;
  const std::shared_ptr<const http_server::PiecedDocument>& document() const { return document_; }
  // The memory it holds, in bytes.
  size_t footprint() const;

 private:
  friend class AnswerPiecesBuilder;
  // What a request runs. Lists: 0 the edges, 1 the conditional edges, 2 the references
  // of one conditional edge; a comma goes before every element but a list's first.
  struct Op {
    enum Kind : uint8_t {
      kPiece,    // emit `piece`; then the lists in `clears` have no element yet, those in `sets` have one
      kElement,  // an element of list `level`, emitted when `cond` holds (kAlways: always)
      kGroup,    // a conditional edge's head, emitted when one of conds [cond, cond_end) holds, else go to `skip`
    };
    Kind kind = kPiece;
    uint8_t level = 0;
    uint8_t sets = 0, clears = 0;
    uint32_t piece = 0;
    uint32_t cond = 0, cond_end = 0;
    uint32_t skip = 0;
  };
  static constexpr uint32_t kAlways = UINT32_MAX;
  struct Cond {
    int64_t begin = 0, window = 0;
    uint32_t target = 0;
  };

  std::shared_ptr<const http_server::PiecedDocument> document_;
  std::vector<Op> ops_;
  std::vector<Cond> conds_;
  std::vector<std::string> targets_;
  uint8_t head_sets_ = 0;  // lists whose first element is in the head
  uint32_t comma_ = 0;      // the piece ","
  std::string identity_;    // SHA-256 (hex) of the widest document and where it is cut
  int64_t from_ = 0, until_ = 0;
};

}  // namespace cincinnati::server
