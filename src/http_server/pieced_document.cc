#include "http_server/pieced_document.h"

#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <queue>
#include <stdexcept>

namespace cincinnati::http_server {
namespace {

static_assert(std::endian::native == std::endian::little, "bit packing assumes a little-endian host");

// Appends bits to a byte string, least significant bit first (RFC 1951's order).
class BitWriter {
 public:
  explicit BitWriter(std::string& out) : out_(out) {}
  // The low `count` bits of `bits` (every higher bit zero), count <= 64.
  void Put(uint64_t bits, unsigned count) {
    if (count == 0) return;
    acc_ |= bits << n_;
    if (n_ + count >= 64) {
      char bytes[8];
      std::memcpy(bytes, &acc_, 8);
      out_.append(bytes, 8);
      acc_ = n_ ? bits >> (64 - n_) : 0;
      n_ = n_ + count - 64;
    } else {
      n_ += count;
    }
  }
  void PutWords(const uint64_t* words, uint32_t bit_count) {
    for (; bit_count >= 64; bit_count -= 64) Put(*words++, 64);
    if (bit_count) Put(*words, bit_count);
  }
  size_t bits_written() const { return out_.size() * 8 + n_; }
  // Pads with zeros to a byte boundary and writes what is held.
  void Flush() {
    for (; n_ > 0; n_ = n_ > 8 ? n_ - 8 : 0) {
      out_.push_back(static_cast<char>(acc_ & 0xff));
      acc_ >>= 8;
    }
    acc_ = 0;
  }

 private:
  std::string& out_;
  uint64_t acc_ = 0;
  unsigned n_ = 0;  // bits held in acc_, always below 64
};

// Bytes written by a BitWriter, as words, with their bit count.
void AppendAsWords(const std::string& bytes, size_t bit_count, std::vector<uint64_t>& words) {
  for (size_t i = 0; i * 8 < (bit_count + 7) / 8; ++i) {
    uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i * 8, std::min<size_t>(8, bytes.size() - i * 8));
    words.push_back(w);
  }
}

// Huffman code lengths for `freq` (0: unused) of at most `limit` bits, forming a
// complete code: at least two symbols get a code, so that every inflater accepts it.
std::vector<uint8_t> CodeLengths(std::vector<uint64_t> freq, int limit) {
  size_t used = std::count_if(freq.begin(), freq.end(), [](uint64_t f) { return f > 0; });
  for (size_t i = 0; used < 2 && i < freq.size(); ++i) {
    if (freq[i] == 0) freq[i] = 1, ++used;
  }
  for (;;) {
    // Leaves 0..n-1, inner nodes after them; each node's parent.
    const size_t n = freq.size();
    std::vector<size_t> parent(2 * n, SIZE_MAX);
    using Item = std::pair<uint64_t, size_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
    for (size_t i = 0; i < n; ++i) {
      if (freq[i]) heap.push({freq[i], i});
    }
    size_t next = n;
    while (heap.size() > 1) {
      auto [wa, a] = heap.top();
      heap.pop();
      auto [wb, b] = heap.top();
      heap.pop();
      parent[a] = parent[b] = next;
      heap.push({wa + wb, next++});
    }
    std::vector<uint8_t> lengths(n, 0);
    int longest = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!freq[i]) continue;
      int depth = 0;
      for (size_t at = i; parent[at] != SIZE_MAX; at = parent[at]) ++depth;
      lengths[i] = static_cast<uint8_t>(std::min(depth, 255));
      longest = std::max(longest, depth);
    }
    if (longest <= limit) return lengths;
    // Too deep: flatten the weights and build again (all equal gives a balanced tree).
    for (uint64_t& f : freq) {
      if (f) f = (f + 1) / 2;
    }
  }
}

// Canonical codes (RFC 1951, 3.2.2), bit-reversed for least-significant-first writing.
std::vector<uint32_t> ReversedCodes(const std::vector<uint8_t>& lengths) {
  std::array<uint32_t, 17> count{}, next{};
  for (uint8_t l : lengths) {
    if (l) ++count[l];
  }
  uint32_t code = 0;
  for (int bits = 1; bits <= 16; ++bits) {
    code = (code + count[bits - 1]) << 1;
    next[bits] = code;
  }
  std::vector<uint32_t> codes(lengths.size(), 0);
  for (size_t s = 0; s < lengths.size(); ++s) {
    const int l = lengths[s];
    if (!l) continue;
    uint32_t c = next[l]++, reversed = 0;
    for (int i = 0; i < l; ++i) reversed |= ((c >> i) & 1) << (l - 1 - i);
    codes[s] = reversed;
  }
  return codes;
}

// The header of a final dynamic block whose literal/length code has `lengths` (257
// symbols: bytes and end of block) and whose distance code is two unused 1-bit codes.
void WriteBlockHeader(BitWriter& w, const std::vector<uint8_t>& lengths) {
  std::vector<uint8_t> all(lengths);
  all.push_back(1);
  all.push_back(1);
  // Run-length coded: zero runs as 17 (3-10) and 18 (11-138), other lengths as themselves.
  struct Op {
    uint8_t symbol;
    uint8_t extra;
  };
  std::vector<Op> ops;
  for (size_t i = 0; i < all.size();) {
    size_t run = 1;
    while (all[i] == 0 && i + run < all.size() && all[i + run] == 0 && run < 138) ++run;
    if (all[i] == 0 && run >= 11) {
      ops.push_back({18, static_cast<uint8_t>(run - 11)});
    } else if (all[i] == 0 && run >= 3) {
      ops.push_back({17, static_cast<uint8_t>(run - 3)});
    } else {
      run = 1;
      ops.push_back({all[i], 0});
    }
    i += run;
  }
  std::vector<uint64_t> freq(19, 0);
  for (const Op& op : ops) ++freq[op.symbol];
  std::vector<uint8_t> cl = CodeLengths(freq, 7);
  std::vector<uint32_t> cl_codes = ReversedCodes(cl);
  static constexpr uint8_t kOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
  int hclen = 19;
  while (hclen > 4 && cl[kOrder[hclen - 1]] == 0) --hclen;
  w.Put(1, 1);  // BFINAL
  w.Put(2, 2);  // BTYPE: dynamic Huffman
  w.Put(lengths.size() - 257, 5);
  w.Put(2 - 1, 5);
  w.Put(hclen - 4, 4);
  for (int i = 0; i < hclen; ++i) w.Put(cl[kOrder[i]], 3);
  for (const Op& op : ops) {
    w.Put(cl_codes[op.symbol], cl[op.symbol]);
    if (op.symbol == 17) w.Put(op.extra, 3);
    if (op.symbol == 18) w.Put(op.extra, 7);
  }
}

std::string RawDeflateSyncFlushed(const std::string& data) {
  if (data.empty()) return {};
  z_stream zs{};
  if (deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("deflateInit2 failed");
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_SYNC_FLUSH);
  const bool complete = rc == Z_OK && zs.avail_in == 0 && zs.avail_out > 0;
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (!complete) throw std::runtime_error("deflate failed");
  return out;
}

void AppendLittleEndian32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

PiecedDocument::PiecedDocument(std::string head, const std::vector<std::string>& pieces)
    : head_(std::make_shared<const std::string>(std::move(head))) {
  static constexpr char kGzipHeader[10] = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, 3};  // deflate, no name, Unix
  gzip_head_ = std::make_shared<const std::string>(std::string(kGzipHeader, sizeof kGzipHeader) +
                                                   RawDeflateSyncFlushed(*head_));
  head_crc_ = libdeflate_crc32(0, head_->data(), head_->size());
  // One literal code for every piece's bytes, and the end of the block.
  std::vector<uint64_t> freq(257, 0);
  for (const std::string& p : pieces) {
    for (unsigned char c : p) ++freq[c];
  }
  freq[256] = 1;
  const std::vector<uint8_t> lengths = CodeLengths(freq, 15);
  const std::vector<uint32_t> codes = ReversedCodes(lengths);
  end_of_block_ = codes[256];
  end_of_block_bits_ = lengths[256];
  {
    std::string bytes;
    BitWriter w(bytes);
    WriteBlockHeader(w, lengths);
    block_header_bits_ = static_cast<uint32_t>(w.bits_written());
    w.Flush();
    AppendAsWords(bytes, block_header_bits_, block_header_);
  }
  spans_.reserve(pieces.size());
  for (const std::string& p : pieces) {
    Span s;
    s.begin = static_cast<uint32_t>(text_.size());
    s.size = static_cast<uint32_t>(p.size());
    text_ += p;
    std::string bytes;
    BitWriter w(bytes);
    for (unsigned char c : p) w.Put(codes[c], lengths[c]);
    const size_t bits = w.bits_written();
    w.Flush();
    s.bits_begin = static_cast<uint32_t>(bits_.size());
    s.bit_count = static_cast<uint32_t>(bits);
    AppendAsWords(bytes, bits, bits_);
    spans_.push_back(s);
  }
}

std::string PiecedDocument::Plain(std::span<const uint32_t> ids) const { return *head_ + PlainTail(ids); }

std::string PiecedDocument::Gzip(std::span<const uint32_t> ids) const { return *gzip_head_ + GzipTail(ids); }

std::string PiecedDocument::PlainTail(std::span<const uint32_t> ids) const {
  size_t size = 0;
  for (uint32_t id : ids) size += spans_[id].size;
  std::string out;
  out.reserve(size);
  for (uint32_t id : ids) out.append(text_, spans_[id].begin, spans_[id].size);
  return out;
}

uint32_t PiecedDocument::Crc(std::span<const uint32_t> ids) const {
  uint32_t crc = head_crc_;
  for (uint32_t id : ids) crc = libdeflate_crc32(crc, text_.data() + spans_[id].begin, spans_[id].size);
  return crc;
}

std::optional<uint32_t> PiecedDocument::RememberedCrc(const SelectionKey& key) const {
  const CrcSlot& slot = crc_slots_[key.low % kCrcSlots];
  const uint64_t before = slot.sequence.load(std::memory_order_acquire);
  if (before == 0 || (before & 1)) return std::nullopt;
  const uint64_t high = slot.high.load(std::memory_order_relaxed);
  const uint64_t low = slot.low.load(std::memory_order_relaxed);
  const uint32_t crc = slot.crc.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (slot.sequence.load(std::memory_order_relaxed) != before) return std::nullopt;
  if (high != key.high || low != key.low) return std::nullopt;
  return crc;
}

void PiecedDocument::RememberCrc(const SelectionKey& key, uint32_t crc) const {
  CrcSlot& slot = crc_slots_[key.low % kCrcSlots];
  uint64_t sequence = slot.sequence.load(std::memory_order_relaxed);
  // Another thread writing the slot wins; this CRC is simply not remembered.
  if ((sequence & 1) || !slot.sequence.compare_exchange_strong(sequence, sequence + 1, std::memory_order_acquire)) {
    return;
  }
  std::atomic_thread_fence(std::memory_order_release);
  slot.high.store(key.high, std::memory_order_relaxed);
  slot.low.store(key.low, std::memory_order_relaxed);
  slot.crc.store(crc, std::memory_order_relaxed);
  slot.sequence.store(sequence + 2, std::memory_order_release);
}

std::string PiecedDocument::GzipTail(std::span<const uint32_t> ids, std::optional<SelectionKey> key) const {
  size_t bits = block_header_bits_ + end_of_block_bits_;
  uint64_t size = head_->size();
  for (uint32_t id : ids) {
    bits += spans_[id].bit_count;
    size += spans_[id].size;
  }
  std::optional<uint32_t> crc = key ? RememberedCrc(*key) : std::nullopt;
  if (!crc) {
    crc = Crc(ids);
    if (key) RememberCrc(*key, *crc);
  }
  std::string out;
  out.reserve(bits / 8 + 16);
  BitWriter w(out);
  w.PutWords(block_header_.data(), block_header_bits_);
  for (uint32_t id : ids) w.PutWords(bits_.data() + spans_[id].bits_begin, spans_[id].bit_count);
  w.Put(end_of_block_, end_of_block_bits_);
  w.Flush();
  AppendLittleEndian32(out, *crc);
  AppendLittleEndian32(out, static_cast<uint32_t>(size));
  return out;
}

size_t PiecedDocument::footprint() const {
  return sizeof(*this) + head_->capacity() + gzip_head_->capacity() + text_.capacity() +
         spans_.capacity() * sizeof(Span) + (bits_.capacity() + block_header_.capacity()) * sizeof(uint64_t) +
         kCrcSlots * sizeof(CrcSlot);
}

}  // namespace cincinnati::http_server
