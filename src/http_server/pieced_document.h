// PiecedDocument: documents made of one fixed head followed by any sequence of known
// pieces (per-cluster answers: the nodes, then the edges that cluster sees), served plain
// or as gzip, each assembled per request by copying, without compressing anything.
//
// The gzip member is the head deflated once (zlib, level 9, ending at a byte boundary
// with a sync flush) followed by one final dynamic-Huffman block of literals whose code
// is built from the bytes of every piece; each piece's bits are computed once, so a
// request only shifts words together and runs CRC-32 over the pieces it names. The
// tail is coded without matches (about half its size for JSON edge lists, where zlib
// would find a quarter); the head, usually most of a document, is zlib's.
// Inflating the gzip member gives exactly the plain document, for any sequence of ids
// (tests/service/answer_pieces_test.cc and fuzz/pieced_document.cc check it with zlib).
//
// The gzip trailer's CRC-32 covers the whole document, and checksumming the pieces was
// the largest part of a request's own work: it runs on libdeflate's CRC-32 (carry-less
// multiplication; zlib's is 3-5 times slower on these short runs). A caller that can
// name a selection (for answer pieces, the answer's ETag hash: equal keys name equal
// ids) passes its key, and the CRCs of recent selections are remembered in a
// direct-mapped table of kCrcSlots (a slot being written reads as a miss, never as a
// wrong CRC), so a selection asked again is not checksummed again.
//
// Memory: the head and the pieces twice (plain and coded, the coded at most 15 bits a
// byte), plus the head deflated, plus kCrcSlots x 32 bytes. Immutable after construction but
// for that table; thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cincinnati::http_server {

class PiecedDocument {
 public:
  PiecedDocument(std::string head, const std::vector<std::string>& pieces);

  size_t piece_count() const { return spans_.size(); }
  std::string_view piece(uint32_t id) const { return std::string_view(text_).substr(spans_[id].begin, spans_[id].size); }

  // head + pieces[ids[0]] + pieces[ids[1]] + ... Every id must be below piece_count().
  std::string Plain(std::span<const uint32_t> ids) const;
  // The same bytes as one gzip member.
  std::string Gzip(std::span<const uint32_t> ids) const;
  // Each in two parts, so that the part every document shares is sent without a copy:
  // Plain(ids) is *head() + PlainTail(ids), Gzip(ids) is *gzip_head() + GzipTail(ids).
  const std::shared_ptr<const std::string>& head() const { return head_; }
  std::string PlainTail(std::span<const uint32_t> ids) const;
  const std::shared_ptr<const std::string>& gzip_head() const { return gzip_head_; }
  // A selection's name: equal keys must name equal id sequences.
  struct SelectionKey {
    uint64_t high = 0, low = 0;
  };
  std::string GzipTail(std::span<const uint32_t> ids, std::optional<SelectionKey> key = std::nullopt) const;
  static constexpr size_t kCrcSlots = 64;
  // The memory it holds, in bytes.
  size_t footprint() const;

 private:
  struct Span {
    uint32_t begin = 0, size = 0;           // in text_
    uint32_t bits_begin = 0, bit_count = 0;  // in bits_ (64-bit words, least significant bit first)
  };
  std::shared_ptr<const std::string> head_;
  std::shared_ptr<const std::string> gzip_head_;  // the gzip header and the head as raw deflate, not final, byte-aligned
  uint32_t head_crc_ = 0;
  std::string text_;              // every piece's bytes
  std::vector<Span> spans_;
  std::vector<uint64_t> bits_;    // every piece coded with the tail's Huffman code
  std::vector<uint64_t> block_header_;  // the tail block's header
  uint32_t block_header_bits_ = 0;
  uint32_t end_of_block_ = 0, end_of_block_bits_ = 0;  // its code, least significant bit first
  // One remembered CRC, written under a sequence number (odd while being written).
  struct CrcSlot {
    std::atomic<uint64_t> sequence{0};
    std::atomic<uint64_t> high{0}, low{0};
    std::atomic<uint32_t> crc{0};
  };
  uint32_t Crc(std::span<const uint32_t> ids) const;
  std::optional<uint32_t> RememberedCrc(const SelectionKey& key) const;
  void RememberCrc(const SelectionKey& key, uint32_t crc) const;
  std::unique_ptr<CrcSlot[]> crc_slots_ = std::make_unique<CrcSlot[]>(kCrcSlots);
};

}  // namespace cincinnati::http_server
