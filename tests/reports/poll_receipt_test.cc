// PollReceipts (reports/poll_receipt.h): receipts continue only for their own id and
// version under their own key, prove exactly what the sightings would, and no bytes
// given as a receipt (forged, cut, padded, garbage) pass or crash.
#include "reports/poll_receipt.h"

#include <gtest/gtest.h>
#include <openssl/hmac.h>

#include <cctype>
#include <random>
#include <string>

#include "test_util.h"

namespace cincinnati::server {
namespace {

constexpr char kId[] = "0f1e2d3c-4b5a-4697-8876-a5b4c3d2e1f0";
constexpr char kOtherId[] = "0f1e2d3c-4b5a-4697-8876-a5b4c3d2e1f1";
constexpr int64_t kT0 = 1767225600;  // 2026-01-01T00:00:00Z
constexpr int64_t kDay = 86400, kHalfHour = 1800;

PollReceipts Keyed(char fill) { return *PollReceipts::FromKey(std::string(32, fill)); }

// `polls` polls at `version`, `gap` seconds apart from `first`.
std::string Polled(const PollReceipts& r, int polls, int64_t first, int64_t gap, const char* version = "4.13.1",
                   const char* id = kId) {
  std::string receipt;
  for (int i = 0; i < polls; ++i) receipt = r.Next(receipt, id, version, first + i * gap);
  return receipt;
}

bool Proves(const PollReceipts& r, const std::string& receipt, int64_t now, const char* version = "4.13.1",
            const char* id = kId) {
  return r.Proves(receipt, id, version, now, kDay, kHalfHour, 3);
}

TEST(PollReceiptTest, AReceiptContinuesAndProvesWhatThePollsWere) {
  const PollReceipts r = Keyed('k');
  const std::string first = r.Next("", kId, "4.13.1", kT0);
  EXPECT_EQ(first.substr(0, 25), "1.1767225600.1767225600.1") << first;
  EXPECT_LE(first.size(), kMaxPollReceiptBytes);
  for (char c : first) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') << first;
  const std::string third = Polled(r, 3, kT0, 180);
  EXPECT_EQ(third.substr(0, 25), "1.1767225600.1767225960.3") << "first kept, last now, polls counted: " << third;
  // Three polls, the first half an hour ago, the last within the day.
  EXPECT_FALSE(Proves(r, third, kT0 + kHalfHour - 1)) << "younger than min_age";
  EXPECT_TRUE(Proves(r, third, kT0 + kHalfHour));
  EXPECT_TRUE(Proves(r, third, kT0 + 360 + kDay)) << "the last poll a day ago";
  EXPECT_FALSE(Proves(r, third, kT0 + 361 + kDay)) << "the last poll more than a day ago";
  const std::string two = Polled(r, 2, kT0, 180);
  EXPECT_FALSE(Proves(r, two, kT0 + kHalfHour)) << "two polls are not three";
  EXPECT_TRUE(r.Proves(two, kId, "4.13.1", kT0 + kHalfHour, kDay, kHalfHour, 2));
  // The id in any case is the same cluster.
  std::string upper = kId;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_TRUE(Proves(r, third, kT0 + kHalfHour, "4.13.1", upper.c_str()));
  EXPECT_EQ(r.Next(third, upper, "4.13.1", kT0 + 540).substr(0, 25), "1.1767225600.1767226140.4");
}

TEST(PollReceiptTest, ItIsValidOnlyForItsIdAndVersionAndAnythingElseStartsOver) {
  const PollReceipts r = Keyed('k');
  const std::string at_4131 = Polled(r, 5, kT0, 180);
  ASSERT_TRUE(Proves(r, at_4131, kT0 + kHalfHour));
  EXPECT_FALSE(Proves(r, at_4131, kT0 + kHalfHour, "4.13.2")) << "another version";
  EXPECT_FALSE(Proves(r, at_4131, kT0 + kHalfHour, "4.13.1", kOtherId)) << "another cluster";
  const int64_t later = kT0 + 3600;
  const std::string prefix = "1." + std::to_string(later) + "." + std::to_string(later) + ".1.";
  EXPECT_EQ(r.Next(at_4131, kId, "4.13.2", later).substr(0, prefix.size()), prefix) << "another version starts over";
  EXPECT_EQ(r.Next(at_4131, kOtherId, "4.13.1", later).substr(0, prefix.size()), prefix) << "another id starts over";
  for (const std::string& garbage : {std::string(), std::string("x"), std::string("1.2.3.4.5"), std::string(300, '1'),
                                    std::string("\0\r\n", 3), at_4131 + "A", at_4131.substr(0, at_4131.size() - 1)}) {
    EXPECT_EQ(r.Next(garbage, kId, "4.13.1", later).substr(0, prefix.size()), prefix) << garbage;
    EXPECT_FALSE(Proves(r, garbage, later)) << garbage;
  }
  // No receipt for what the sightings do not keep either.
  EXPECT_EQ(r.Next("", "not-a-uuid", "4.13.1", kT0), "");
  EXPECT_EQ(r.Next("", kId, "4.13.1+build", kT0), "");
  EXPECT_EQ(r.Next("", kId, std::string(32, '1'), kT0), "");
  EXPECT_NE(r.Next("", kId, std::string(31, '1'), kT0), "");
  EXPECT_FALSE(r.Proves(at_4131, "not-a-uuid", "4.13.1", later, kDay, 0, 1));
}

TEST(PollReceiptTest, ForgedFieldsAndAFutureFirstDoNotPass) {
  const PollReceipts r = Keyed('k');
  const std::string real = Polled(r, 3, kT0, 180);
  const std::string mac = real.substr(real.rfind('.') + 1);
  ASSERT_EQ(mac.size(), 22u);
  // The same MAC under other fields: older, more polls, a leading zero, a sign.
  for (const std::string& forged :
       {"1.1767220000.1767225960.3." + mac, "1.1767225600.1767225960.9." + mac, "1.01767225600.1767225960.3." + mac,
        "1.1767225600.1767225960.03." + mac, "1.+1767225600.1767225960.3." + mac, "2.1767225600.1767225960.3." + mac,
        "1.1767225600.1767225960.3.." + mac, "1.1767225600.1767225960.3." + mac + "=",
        "1.1767225960.1767225600.3." + mac}) {
    EXPECT_FALSE(Proves(r, forged, kT0 + kHalfHour)) << forged;
    EXPECT_FALSE(r.Proves(forged, kId, "4.13.1", kT0 + kHalfHour, kDay, 0, 1)) << forged;
  }
  // One flipped MAC character.
  std::string flipped = real;
  flipped.back() = flipped.back() == 'A' ? 'B' : 'A';
  EXPECT_FALSE(Proves(r, flipped, kT0 + kHalfHour));
  // A receipt whose first poll lies ahead of the clock by more than the skew starts over
  // (a replica's clock far ahead, or a receipt kept across a clock set back).
  const std::string ahead = r.Next("", kId, "4.13.1", kT0 + 301);
  EXPECT_EQ(r.Next(ahead, kId, "4.13.1", kT0).substr(0, 25), "1.1767225600.1767225600.1");
  const std::string slightly = r.Next("", kId, "4.13.1", kT0 + 300);
  EXPECT_EQ(r.Next(slightly, kId, "4.13.1", kT0).substr(0, 25), "1.1767225600.1767225600.2")
      << "within the skew it continues, first no later than last";
  // Polls stop counting at 65,535.
  std::string many = "1.1767225600.1767225600.65535.";
  EXPECT_FALSE(Proves(r, many + mac, kT0 + kHalfHour));
}

TEST(PollReceiptTest, ReplicasWithOneKeyAgreeAndOtherKeysDoNot) {
  const PollReceipts a = Keyed('k'), b = Keyed('k'), other = Keyed('j');
  // Polls answered by a, then b, then a, as a round-robin balancer spreads them.
  std::string receipt = a.Next("", kId, "4.13.1", kT0);
  receipt = b.Next(receipt, kId, "4.13.1", kT0 + 180);
  receipt = a.Next(receipt, kId, "4.13.1", kT0 + 360);
  EXPECT_EQ(receipt.substr(0, 25), "1.1767225600.1767225960.3");
  EXPECT_TRUE(Proves(b, receipt, kT0 + kHalfHour));
  EXPECT_FALSE(Proves(other, receipt, kT0 + kHalfHour));
  EXPECT_EQ(other.Next(receipt, kId, "4.13.1", kT0 + 540).substr(0, 25), "1.1767226140.1767226140.1");
  EXPECT_FALSE(Proves(PollReceipts::Random(), receipt, kT0 + kHalfHour));
  // The MAC is HMAC-SHA256 as OpenSSL computes it, for short keys and long ones.
  for (const std::string& key : {std::string(32, 'k'), std::string(100, 'z')}) {
    const PollReceipts r = *PollReceipts::FromKey(key);
    const std::string made = r.Next("", kId, "4.13.1", kT0);
    std::string message = "cincinnati poll receipt 1";
    message += '\0';
    message += kId;
    message += '\0';
    message += "4.13.1";
    message += '\0';
    for (int64_t v : {kT0, kT0}) {
      for (int i = 7; i >= 0; --i) message += static_cast<char>((v >> (8 * i)) & 0xff);
    }
    message += std::string("\0\1", 2);
    unsigned char mac[32];
    unsigned int n = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
         message.size(), mac, &n);
    static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string expected;
    for (int i = 0; i < 128; i += 6) {
      int bits = 0;
      for (int j = 0; j < 6; ++j) {
        const int at = i + j;
        bits = (bits << 1) | (at < 128 ? (mac[at / 8] >> (7 - at % 8)) & 1 : 0);
      }
      expected += kAlphabet[bits];
    }
    EXPECT_EQ(made.substr(made.rfind('.') + 1), expected) << key.size();
  }
}

TEST(PollReceiptTest, KeysAreAtLeast32BytesAndAFileIsReadAsItsBytes) {
  EXPECT_FALSE(PollReceipts::FromKey(std::string(31, 'k')).ok());
  testing::TempDir dir;
  testing::WriteFile(dir / "short.key", std::string(31, 'k'));
  testing::WriteFile(dir / "k.key", std::string(32, 'k'));
  testing::WriteFile(dir / "k-newline.key", std::string(32, 'k') + "\n");
  EXPECT_FALSE(PollReceipts::FromKeyFile((dir / "short.key").string()).ok());
  EXPECT_FALSE(PollReceipts::FromKeyFile((dir / "missing.key").string()).ok());
  auto file = PollReceipts::FromKeyFile((dir / "k.key").string());
  auto newline = PollReceipts::FromKeyFile((dir / "k-newline.key").string());
  ASSERT_TRUE(file.ok()) << file.status().message();
  ASSERT_TRUE(newline.ok());
  const std::string receipt = Polled(Keyed('k'), 3, kT0, 180);
  EXPECT_TRUE(Proves(*file, receipt, kT0 + kHalfHour));
  EXPECT_FALSE(Proves(*newline, receipt, kT0 + kHalfHour)) << "every byte is the key's";
}

// Whatever bytes come as a receipt: no crash, no proof, a fresh receipt.
TEST(PollReceiptTest, RandomBytesNeverProveAnything) {
  const PollReceipts r = Keyed('k');
  const std::string real = Polled(r, 3, kT0, 180);
  std::mt19937_64 random(5);
  for (int i = 0; i < 20000; ++i) {
    std::string bytes = real;
    if (i % 2) {
      bytes.resize(random() % 220);
      for (char& c : bytes) c = static_cast<char>(random());
    } else {
      bytes[random() % bytes.size()] = static_cast<char>(random());
      if (bytes == real) continue;
    }
    ASSERT_FALSE(r.Proves(bytes, kId, "4.13.1", kT0 + kHalfHour, kDay, 0, 1)) << bytes;
    const std::string next = r.Next(bytes, kId, "4.13.1", kT0 + 540);
    ASSERT_EQ(next.substr(0, 25), "1.1767226140.1767226140.1") << bytes;
  }
}

}  // namespace
}  // namespace cincinnati::server
