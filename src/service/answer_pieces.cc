#include "service/answer_pieces.h"

#include <cstring>

#include <fmt/format.h>

#include "core/graph_json_layout.h"
#include "core/sha256.h"

namespace cincinnati::server {
namespace {

constexpr uint8_t Bit(int level) { return static_cast<uint8_t>(1u << level); }

std::string Hex(const unsigned char* bytes, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0xf]);
  }
  return out;
}

}  // namespace

// Cuts the widest document into ops, knowing statically, where it can, whether each list
// already has an element (so that fixed runs with their commas become single pieces).
class AnswerPiecesBuilder {
 public:
  enum Known : uint8_t { kNo, kYes, kMaybe };
  using Op = AnswerPieces::Op;

  explicit AnswerPiecesBuilder(AnswerPieces& out) : out_(out) {}

  void Fixed(std::string_view text, uint8_t sets = 0, uint8_t clears = 0) {
    for (int level = 0; level < 3; ++level) {
      if (clears & Bit(level)) known_[level] = kNo;
      if (sets & Bit(level)) known_[level] = kYes;
    }
    if (!ops_.empty() && ops_.back().kind == Op::kPiece && !barrier_) {
      Op& last = ops_.back();
      pieces_[last.piece] += text;
      last.sets = static_cast<uint8_t>((last.sets & ~clears) | sets);
      last.clears = static_cast<uint8_t>((last.clears & ~sets) | clears);
      return;
    }
    barrier_ = false;
    Op op;
    op.kind = Op::kPiece;
    op.piece = AddPiece(std::string(text));
    op.sets = sets;
    op.clears = clears;
    ops_.push_back(op);
  }

  // An element of list `level`; `cond` is AnswerPieces::kAlways or a per-cluster condition.
  void Element(int level, std::string_view text, uint32_t cond) {
    if (cond == AnswerPieces::kAlways && known_[level] != kMaybe) {
      if (known_[level] == kYes) {
        std::string with_comma = ",";
        with_comma += text;
        return Fixed(with_comma, Bit(level));
      }
      return Fixed(text, Bit(level));
    }
    Op op;
    op.kind = Op::kElement;
    op.level = static_cast<uint8_t>(level);
    op.piece = AddPiece(std::string(text));
    op.cond = cond;
    ops_.push_back(op);
    if (cond == AnswerPieces::kAlways) known_[level] = kYes;
    if (known_[level] == kNo) known_[level] = kMaybe;
  }

  // A conditional edge whose references all depend on the cluster: returns the op's index.
  size_t Group(std::string_view head, uint32_t cond, uint32_t cond_end) {
    Op op;
    op.kind = Op::kGroup;
    op.level = 1;
    op.piece = AddPiece(std::string(head));
    op.cond = cond;
    op.cond_end = cond_end;
    ops_.push_back(op);
    if (known_[1] == kNo) known_[1] = kMaybe;
    known_[2] = kNo;
    return ops_.size() - 1;
  }
  // Its tail: a piece of its own, after which a skipped group resumes.
  void EndGroup(size_t group, std::string_view tail) {
    barrier_ = true;
    Fixed(tail);
    barrier_ = true;
    ops_[group].skip = static_cast<uint32_t>(ops_.size());
  }

  // Moves the leading piece into the document's head.
  void Finish() {
    std::string head;
    if (!ops_.empty() && ops_.front().kind == Op::kPiece) {
      head = std::move(pieces_[ops_.front().piece]);
      pieces_[ops_.front().piece].clear();
      out_.head_sets_ = ops_.front().sets;
      ops_.erase(ops_.begin());
      for (Op& op : ops_) {
        if (op.skip) --op.skip;
      }
    }
    out_.comma_ = AddPiece(",");
    out_.ops_ = std::move(ops_);
    out_.document_ = std::make_shared<const http_server::PiecedDocument>(std::move(head), pieces_);
  }

 private:
  uint32_t AddPiece(std::string text) {
    pieces_.push_back(std::move(text));
    return static_cast<uint32_t>(pieces_.size() - 1);
  }

  AnswerPieces& out_;
  std::vector<Op> ops_;
  std::vector<std::string> pieces_;
  Known known_[3] = {kNo, kNo, kNo};
  bool barrier_ = false;
};

std::shared_ptr<const AnswerPieces> AnswerPieces::Build(const policy::PhasedSpan& span) {
  auto pieces = std::make_shared<AnswerPieces>();
  AnswerPieces& out = *pieces;
  out.from_ = span.from;
  out.until_ = span.until;
  out.targets_ = span.targets;
  GraphJsonLayout layout;
  const std::string text = WriteGraphJson(span.widest, {.schema_version = 1}, &layout);
  if (text.size() > kMaxDocument) return nullptr;
  const std::string_view all(text);
  auto cond_of = [&](const policy::PhasedSpan::Rule& rule) {
    if (!rule.per_cluster) return kAlways;
    out.conds_.push_back(Cond{rule.begin, rule.window, rule.target});
    return static_cast<uint32_t>(out.conds_.size() - 1);
  };
  AnswerPiecesBuilder b(out);
  auto text_of = [&](const GraphJsonLayout::Span& at) { return all.substr(at.begin, at.end - at.begin); };
  // What lies before a list's first element is fixed; between two elements lies exactly
  // one comma, which the request puts back where it is needed.
  size_t pos = 0;
  for (size_t i = 0; i < layout.edges.size(); ++i) {
    if (i == 0) b.Fixed(all.substr(0, layout.edges[0].begin));
    b.Element(0, text_of(layout.edges[i]), cond_of(span.edges[i]));
    pos = layout.edges[i].end;
  }
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    const GraphJsonLayout::Group& group = layout.groups[g];
    const std::vector<policy::PhasedSpan::Rule>& rules = span.refs[g];
    if (g == 0) b.Fixed(all.substr(pos, group.whole.begin - pos), 0, Bit(1));
    const std::string_view head = all.substr(group.whole.begin, group.refs.front().begin - group.whole.begin);
    const std::string_view tail = all.substr(group.refs.back().end, group.whole.end - group.refs.back().end);
    bool always = false;
    for (const auto& rule : rules) always |= !rule.per_cluster;
    const uint32_t first = static_cast<uint32_t>(out.conds_.size());
    std::vector<uint32_t> conds;
    for (const auto& rule : rules) conds.push_back(cond_of(rule));
    // A conditional edge some reference of which every cluster sees is always there.
    size_t group_op = SIZE_MAX;
    if (always) {
      b.Element(1, head, kAlways);
      b.Fixed("", 0, Bit(2));
    } else {
      group_op = b.Group(head, first, static_cast<uint32_t>(out.conds_.size()));
    }
    for (size_t r = 0; r < group.refs.size(); ++r) {
      b.Element(2, text_of(group.refs[r]), conds[r]);
    }
    if (group_op != SIZE_MAX) {
      b.EndGroup(group_op, tail);
    } else {
      b.Fixed(tail);
    }
    pos = group.whole.end;
  }
  b.Fixed(all.substr(pos));
  b.Finish();
  // The identity of every answer this span can give: the widest document and its cuts.
  std::string identity = text;
  for (const Op& op : out.ops_) {
    identity += fmt::format("\n{} {} {} {} {} {} {}", static_cast<int>(op.kind), op.level, op.sets, op.clears,
                            op.cond, op.cond_end, out.document_->piece(op.piece).size());
  }
  out.identity_ = Sha256Hex(identity);
  return pieces;
}

AnswerPieces::Selection AnswerPieces::Select(std::string_view id, int64_t now) const {
  Selection s;
  const std::vector<double> u = policy::RolloutPositions(id, targets_);
  std::string seen(conds_.size(), '\0');
  for (size_t c = 0; c < conds_.size(); ++c) {
    const Cond& cond = conds_[c];
    seen[c] = policy::SeesPhasedEdge(now, cond.begin, cond.window, u[cond.target]) ? 1 : 0;
  }
  s.pieces.reserve(2 * ops_.size());
  uint8_t any = head_sets_;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Op& op = ops_[i];
    switch (op.kind) {
      case Op::kPiece:
        s.pieces.push_back(op.piece);
        any = static_cast<uint8_t>((any & ~op.clears) | op.sets);
        break;
      case Op::kElement:
        if (op.cond != kAlways && !seen[op.cond]) break;
        if (any & Bit(op.level)) s.pieces.push_back(comma_);
        s.pieces.push_back(op.piece);
        any |= Bit(op.level);
        break;
      case Op::kGroup: {
        bool visible = false;
        for (uint32_t c = op.cond; c < op.cond_end && !visible; ++c) visible = seen[c];
        if (!visible) {
          i = op.skip - 1;  // past the group's tail
          break;
        }
        if (any & Bit(1)) s.pieces.push_back(comma_);
        s.pieces.push_back(op.piece);
        any = static_cast<uint8_t>((any | Bit(1)) & ~Bit(2));
        break;
      }
    }
  }
  // The answer's bytes follow from the document and what this cluster sees.
  std::string key = identity_;
  key += seen;
  unsigned char digest[32];
  Sha256(key, digest);
  s.etag_hash = Hex(digest, 16);
  return s;
}

size_t AnswerPieces::footprint() const {
  size_t targets = 0;
  for (const std::string& t : targets_) targets += sizeof(t) + t.capacity();
  return sizeof(*this) + document_->footprint() + ops_.capacity() * sizeof(Op) + conds_.capacity() * sizeof(Cond) +
         targets + identity_.capacity();
}

}  // namespace cincinnati::server
