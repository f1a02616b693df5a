#include "reports/poll_receipt.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <random>

#include "env/file_system.h"
#include "reports/report_intake.h"

namespace cincinnati::server {
namespace {

constexpr std::string_view kTag = "cincinnati poll receipt 1";  // what the MAC is over, first
constexpr std::string_view kVersionPrefix = "1.";               // the text's format
constexpr size_t kMacBytes = 16;
constexpr size_t kMacChars = 22;  // 16 bytes in unpadded base64url
constexpr size_t kBlock = 64;     // SHA-256's
constexpr size_t kMaxVersion = 31;
constexpr int64_t kMaxPolls = 65535;
constexpr int64_t kMaxSeconds = 9999999999;  // year 2286: ten digits at most
constexpr size_t kMaxKeyFileBytes = 64 << 10;

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

// A digest context per thread, reused: a receipt is made on the graph path.
EVP_MD_CTX* Scratch() {
  thread_local MdCtx scratch(EVP_MD_CTX_new());
  return scratch.get();
}

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// A UUID (8-4-4-4-12 hex digits, any case), lower-cased into `out`.
bool LowerUuid(std::string_view id, std::array<char, 36>& out) {
  if (id.size() != 36) return false;
  for (size_t i = 0; i < 36; ++i) {
    const char c = id[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!IsHex(c)) {
      return false;
    }
    out[i] = static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
  }
  return true;
}

bool PlainVersion(std::string_view v) {
  if (v.empty() || v.size() > kMaxVersion) return false;
  return std::all_of(v.begin(), v.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '-';
  });
}

constexpr char kBase64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string Base64Url(const unsigned char* bytes, size_t n) {
  std::string out;
  uint32_t bits = 0;
  int held = 0;
  for (size_t i = 0; i < n; ++i) {
    bits = (bits << 8) | bytes[i];
    held += 8;
    while (held >= 6) out += kBase64Url[(bits >> (held -= 6)) & 63];
  }
  if (held > 0) out += kBase64Url[(bits << (6 - held)) & 63];
  return out;
}

void PutBigEndian(uint64_t v, unsigned char* out) {
  for (int i = 7; i >= 0; --i, v >>= 8) out[i] = static_cast<unsigned char>(v);
}

// A decimal field of the text and its dot: digits only, no leading zero, at most `max`.
bool ReadNumber(std::string_view& text, int64_t max, int64_t& out) {
  const size_t stop = text.find('.');
  if (stop == std::string_view::npos || stop == 0 || stop > 10) return false;
  const std::string_view digits = text.substr(0, stop);
  if (digits.size() > 1 && digits[0] == '0') return false;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || out < 0 || out > max) return false;
  text.remove_prefix(stop + 1);
  return true;
}

}  // namespace

// HMAC's two keyed hashes, each begun over its padded key once: a MAC is then two
// copies and two short updates.
struct PollReceipts::Keyed {
  MdCtx inner, outer;
};

Result<PollReceipts> PollReceipts::FromKey(std::string_view key) {
  if (key.size() < kMinPollReceiptKeyBytes) {
    return Status::InvalidArgument(fmt::format("a poll receipt key has at least {} bytes (this one {})", kMinPollReceiptKeyBytes, key.size()));
  }
  std::array<unsigned char, kBlock> padded{};
  if (key.size() > kBlock) {  // HMAC hashes a long key first
    unsigned int n = 0;
    if (!EVP_Digest(key.data(), key.size(), padded.data(), &n, EVP_sha256(), nullptr)) return Status::Internal("SHA-256 failed");
  } else {
    std::memcpy(padded.data(), key.data(), key.size());
  }
  auto keyed = std::make_shared<Keyed>();
  keyed->inner.reset(EVP_MD_CTX_new());
  keyed->outer.reset(EVP_MD_CTX_new());
  EVP_MD* sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  bool ok = sha256 && keyed->inner && keyed->outer;
  for (auto [ctx, pad] : {std::pair{keyed->inner.get(), 0x36}, std::pair{keyed->outer.get(), 0x5c}}) {
    std::array<unsigned char, kBlock> block;
    for (size_t i = 0; i < kBlock; ++i) block[i] = static_cast<unsigned char>(padded[i] ^ pad);
    ok = ok && EVP_DigestInit_ex(ctx, sha256, nullptr) && EVP_DigestUpdate(ctx, block.data(), block.size());
    OPENSSL_cleanse(block.data(), block.size());
  }
  OPENSSL_cleanse(padded.data(), padded.size());
  EVP_MD_free(sha256);
  if (!ok) return Status::Internal("cannot set up HMAC-SHA256 for poll receipts");
  return PollReceipts(std::move(keyed));
}

Result<PollReceipts> PollReceipts::FromKeyFile(const std::string& path) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string key, env::ReadFile(path, kMaxKeyFileBytes));
  auto receipts = FromKey(key);
  OPENSSL_cleanse(key.data(), key.size());
  if (!receipts.ok()) return receipts.status().WithContext(path);
  return receipts;
}

PollReceipts PollReceipts::Random() {
  std::array<unsigned char, 32> key;
  if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) {
    // No randomness left to the process is no reason to fail a service: a key nobody
    // else has is all a lone replica needs.
    std::random_device random;
    for (unsigned char& b : key) b = static_cast<unsigned char>(random());
  }
  auto receipts = FromKey(std::string_view(reinterpret_cast<const char*>(key.data()), key.size()));
  OPENSSL_cleanse(key.data(), key.size());
  return std::move(receipts).value();
}

std::string PollReceipts::Mac(std::string_view id, std::string_view version, const Fields& f) const {
  // tag, 0, id (36), 0, version, 0, first, last (8 bytes each), polls (2): at most 113 bytes.
  std::array<unsigned char, 128> message{};
  size_t n = 0;
  auto put = [&](std::string_view s) {
    std::memcpy(message.data() + n, s.data(), s.size());
    n += s.size() + 1;  // and a zero: no field runs into the next
  };
  put(kTag);
  put(id);
  put(version);
  PutBigEndian(static_cast<uint64_t>(f.first), &message[n]);
  PutBigEndian(static_cast<uint64_t>(f.last), &message[n + 8]);
  message[n + 16] = static_cast<unsigned char>(f.polls >> 8);
  message[n + 17] = static_cast<unsigned char>(f.polls);
  n += 18;
  EVP_MD_CTX* ctx = Scratch();
  unsigned char inner[EVP_MAX_MD_SIZE], mac[EVP_MAX_MD_SIZE];
  unsigned int inner_size = 0, mac_size = 0;
  const bool ok = ctx && EVP_MD_CTX_copy_ex(ctx, keyed_->inner.get()) && EVP_DigestUpdate(ctx, message.data(), n) &&
                  EVP_DigestFinal_ex(ctx, inner, &inner_size) && EVP_MD_CTX_copy_ex(ctx, keyed_->outer.get()) &&
                  EVP_DigestUpdate(ctx, inner, inner_size) && EVP_DigestFinal_ex(ctx, mac, &mac_size);
  if (!ok || mac_size < kMacBytes) return "";  // never equal to a receipt's MAC
  return Base64Url(mac, kMacBytes);
}

std::string PollReceipts::Write(std::string_view id, std::string_view version, const Fields& f) const {
  const std::string mac = Mac(id, version, f);
  if (mac.empty()) return "";
  return fmt::format("{}{}.{}.{}.{}", kVersionPrefix, f.first, f.last, f.polls, mac);
}

bool PollReceipts::Read(std::string_view text, std::string_view id, std::string_view version, Fields& f) const {
  if (text.size() > kMaxPollReceiptBytes || !text.starts_with(kVersionPrefix)) return false;
  text.remove_prefix(kVersionPrefix.size());
  if (!ReadNumber(text, kMaxSeconds, f.first) || !ReadNumber(text, kMaxSeconds, f.last) ||
      !ReadNumber(text, kMaxPolls, f.polls)) {
    return false;
  }
  if (f.polls < 1 || f.first > f.last || text.size() != kMacChars) return false;
  const std::string expected = Mac(id, version, f);
  return expected.size() == kMacChars && CRYPTO_memcmp(expected.data(), text.data(), kMacChars) == 0;
}

std::string PollReceipts::Next(std::string_view previous, std::string_view id, std::string_view version, int64_t now) const {
  std::array<char, 36> lower;
  if (!LowerUuid(id, lower) || !PlainVersion(version)) return "";
  const std::string_view key(lower.data(), lower.size());
  now = std::clamp<int64_t>(now, 0, kMaxSeconds);
  Fields f;
  if (Read(previous, key, version, f) && f.first <= now + kClockSkew) {
    f.first = std::min(f.first, now);  // a replica's clock a little ahead
    f.last = now;
    f.polls = std::min(f.polls + 1, kMaxPolls);
  } else {
    f = Fields{now, now, 1};
  }
  return Write(key, version, f);
}

bool PollReceipts::Proves(std::string_view receipt, std::string_view id, std::string_view version, int64_t now,
                          int64_t window, int64_t min_age, int min_polls) const {
  std::array<char, 36> lower;
  if (!LowerUuid(id, lower) || !PlainVersion(version)) return false;
  Fields f;
  if (!Read(receipt, std::string_view(lower.data(), lower.size()), version, f)) return false;
  return f.polls >= min_polls && f.first <= now - min_age && f.last >= now - window;
}

}  // namespace cincinnati::server
