// An agent's update report on the wire (core/update_report.h): what decodes, what is
// refused and why, and that a report survives encoding.
#include <gtest/gtest.h>

#include <string>

#include "core/update_report.h"

namespace cincinnati {
namespace {

constexpr char kFailed[] =
    R"({"clusterID":"0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60","attempt":"9f86d081884c7d65","from":"4.13.1","to":"4.13.2",)"
    R"("arch":"amd64","channel":"stable-4.13","result":"Failed","component":"network","reason":"ClusterOperatorDegraded",)"
    R"("started":"2026-01-03T03:41:12Z","ended":"2026-01-03T04:01:40Z"})";

// kFailed with `key`'s value (a JSON text) replaced.
std::string With(const std::string& key, const std::string& value) {
  std::string doc = kFailed;
  const size_t at = doc.find("\"" + key + "\":");
  const size_t start = at + key.size() + 3;
  size_t end = doc.find('"', start + 1) + 1;
  return doc.replace(start, end - start, value);
}

std::string Refusal(const std::string& doc) {
  auto r = DecodeUpdateReport(doc);
  return r.ok() ? "decoded" : r.status().message();
}

TEST(UpdateReportTest, AReportDecodesAndEncodesToTheSameDocument) {
  auto r = DecodeUpdateReport(kFailed);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->cluster_id, "0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60");
  EXPECT_EQ(r->from, "4.13.1");
  EXPECT_EQ(r->to, "4.13.2");
  EXPECT_EQ(r->result, UpdateResult::kFailed);
  EXPECT_EQ(r->component, "network");
  EXPECT_EQ(r->started, 1767411672);
  EXPECT_EQ(r->ended - r->started, 20 * 60 + 28);
  EXPECT_EQ(EncodeUpdateReport(*r), kFailed);
}

TEST(UpdateReportTest, TheClusterIdIsLowerCasedSoThatCaseCannotCountTwice) {
  auto r = DecodeUpdateReport(With("clusterID", R"("0B4F6B0E-6F62-4A3C-9F3E-1D2C3B4A5F60")"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->cluster_id, "0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60");
}

TEST(UpdateReportTest, EveryFieldIsCheckedAndTheRefusalNamesIt) {
  EXPECT_EQ(Refusal(With("clusterID", R"("not-a-uuid")")), "update report: 'clusterID' must be a UUID");
  EXPECT_EQ(Refusal(With("attempt", R"("")")), "update report: 'attempt' must be 1 to 64 hexadecimal digits");
  EXPECT_EQ(Refusal(With("attempt", R"("xyz")")), "update report: 'attempt' must be lower-case hexadecimal digits");
  EXPECT_EQ(Refusal(With("from", R"("4.13")")), "update report: 'from' is not a SemVer version: 4.13");
  EXPECT_EQ(Refusal(With("to", R"(" 4.13.2")")), "update report: 'to' must not contain blanks");
  EXPECT_EQ(Refusal(With("to", R"("4.13.1")")), "update report: 'from' and 'to' are the same version");
  EXPECT_EQ(Refusal(With("from", R"("4.13.1+x")")), "update report: 'from' must be a version without build metadata");
  EXPECT_EQ(Refusal(With("arch", R"("AMD64")")), "update report: 'arch' must be 1 to 16 characters of [a-z0-9._-]");
  EXPECT_EQ(Refusal(With("channel", R"("stable 4.13")")),
            "update report: 'channel' must be empty or up to 63 characters of [a-z0-9._-]");
  EXPECT_EQ(Refusal(With("result", R"("Succeeded")")), "update report: 'result' must be 'Completed', 'Failed' or 'Started'");
  EXPECT_EQ(Refusal(With("component", R"("Network!")")), "update report: 'component' must be empty or a DNS-1123 subdomain");
  EXPECT_EQ(Refusal(With("reason", R"("")")), "update report: a 'Failed' report needs a 'reason'");
  EXPECT_EQ(Refusal(With("reason", R"("degraded")")),
            "update report: 'reason' must be empty or CamelCase of up to 64 letters and digits");
  EXPECT_EQ(Refusal(With("started", R"("2026-02-30T00:00:00Z")")), "update report: '2026-02-30T00:00:00Z' is not a valid date-time");
  EXPECT_EQ(Refusal(With("started", R"("2026-01-03T03:41:12+01:00")")),
            "update report: '2026-01-03T03:41:12+01:00' is not a date-time of the form 2026-01-03T04:05:06Z");
  EXPECT_EQ(Refusal(With("ended", R"("2026-01-03T03:41:11Z")")), "update report: 'started' is after 'ended'");
  EXPECT_EQ(Refusal(With("started", "12")), "update report: 'started' must be a string");
}

TEST(UpdateReportTest, TheDocumentHasExactlyItsKeysOnceAndABoundedSize) {
  std::string doc = kFailed;
  EXPECT_EQ(Refusal(doc.substr(0, doc.size() - 1) + R"(,"extra":"x"})"), "update report: unknown key 'extra'");
  EXPECT_EQ(Refusal(doc.substr(0, doc.size() - 1) + R"(,"arch":"arm64"})"), "update report: 'arch' is given twice");
  EXPECT_EQ(Refusal(R"({"clusterID":"0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60"})"), "update report: 'attempt' is missing");
  EXPECT_EQ(Refusal("[]"), "update report: must be a JSON object");
  EXPECT_EQ(Refusal("{").rfind("update report: invalid JSON: ", 0), 0u) << Refusal("{");
  auto big = DecodeUpdateReport(std::string(kMaxUpdateReportBytes + 1, ' '));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Status::Code::kTooLarge);
  EXPECT_TRUE(DecodeUpdateReport(std::string(kMaxUpdateReportBytes - doc.size(), ' ') + doc).ok());
}

TEST(UpdateReportTest, TimesAreUtcSecondsOfTheGregorianCalendar) {
  EXPECT_EQ(*ParseUtcSeconds("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*ParseUtcSeconds("2000-03-01T00:00:00Z") - *ParseUtcSeconds("2000-02-28T00:00:00Z"), 2 * 86400);  // 2000 is leap
  EXPECT_FALSE(ParseUtcSeconds("2100-02-29T00:00:00Z").ok());  // 2100 is not
  EXPECT_EQ(*ParseUtcSeconds("9999-12-31T23:59:59Z"), 253402300799);
  EXPECT_FALSE(ParseUtcSeconds("1969-12-31T23:59:59Z").ok());
  EXPECT_FALSE(ParseUtcSeconds("2026-01-03T24:00:00Z").ok());
}

}  // namespace
}  // namespace cincinnati
