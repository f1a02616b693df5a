// PollReceiptBook: the poll receipts (the service's reports/poll_receipt.h) an agent
// holds, by the version it polled at. A graph request sends the one held for its
// version (or an empty header, asking for a first) as Cincinnati-Poll-Receipt, and an
// answer's new one replaces it; the latest two versions are kept, so that the version
// an update starts from still has its receipt when the attempt begins (UpdateRunner
// copies it into the attempt's persisted progress; the report's outbox file keeps it,
// and the report's POST sends it: report_outbox.h). The book itself is in memory only:
// a restarted agent asks for new receipts, and what it must prove of an attempt already
// begun travels with the attempt.
//
// What the service sends back is checked before it is kept (it goes out again as a
// header): at most kMaxHeldReceiptBytes of [0-9A-Za-z._-]. Thread-safe (the retrieval
// loop keeps, the update loop reads). Never throws.
#pragma once

#include <algorithm>
#include <array>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace cincinnati::agent {

inline constexpr std::string_view kPollReceiptHeader = "Cincinnati-Poll-Receipt";
inline constexpr size_t kMaxHeldReceiptBytes = 200;

inline bool IsHeaderSafeReceipt(std::string_view text) {
  return !text.empty() && text.size() <= kMaxHeldReceiptBytes && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '-' || c == '_';
  });
}

// The request header line for libcurl: "Name: value", or "Name;" for an empty value
// (libcurl drops "Name:" with nothing after it).
inline std::string PollReceiptHeaderLine(std::string_view receipt) {
  return std::string(kPollReceiptHeader) + (receipt.empty() ? ";" : ": " + std::string(receipt));
}

class PollReceiptBook {
 public:
  // The receipt held for `version`; "" when none.
  std::string For(const std::string& version) const {
    std::lock_guard lock(mu_);
    for (const auto& [v, receipt] : held_) {
      if (!v.empty() && v == version) return receipt;
    }
    return "";
  }
  // The service's answer to a poll at `version`; ignored unless header-safe.
  void Keep(const std::string& version, const std::string& receipt) {
    if (version.empty() || !IsHeaderSafeReceipt(receipt)) return;
    std::lock_guard lock(mu_);
    if (held_[0].first != version) held_[1] = std::move(held_[0]);  // the latest first
    held_[0] = {version, receipt};
  }

 private:
  mutable std::mutex mu_;
  std::array<std::pair<std::string, std::string>, 2> held_;
};

}  // namespace cincinnati::agent
