#include "graph-data/time_format.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace cincinnati::graphdata {
namespace {

TEST(DurationTest, DesignExamplesAndErrors) {
  EXPECT_EQ(ParseDuration("P2D").value(), 2 * 86400);
  EXPECT_EQ(ParseDuration("P14D").value(), 14 * 86400);
  EXPECT_EQ(ParseDuration("PT36H").value(), 36 * 3600);
  EXPECT_EQ(ParseDuration("P1W").value(), 7 * 86400);
  EXPECT_EQ(ParseDuration("P0S").value(), 0);
  EXPECT_EQ(ParseDuration("PT0S").value(), 0);
  EXPECT_EQ(ParseDuration("P1DT12H30M5S").value(), 86400 + 12 * 3600 + 30 * 60 + 5);
  EXPECT_EQ(ParseDuration("PT0H").value(), 0);
  for (const char* bad : {"", "P", "2D", "P2", "PD", "P1M", "P1Y", "P2H", "PT2D", "P1D1W", "PT1H2H", "P-1D", "P1.5D",
                          "P1DT", "P9999999999D"}) {
    auto d = ParseDuration(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_NE(d.status().message().find(std::string("'") + bad + "'"), std::string::npos) << d.status().message();
  }
}

TEST(DateTimeTest, Rfc3339AndTheSeedForm) {
  EXPECT_EQ(ParseDateTime("1970-01-01T00:00:00Z").value(), 0);
  EXPECT_EQ(ParseDateTime("2020-05-12T00:00Z").value(), 1589241600);  // the seed's own form, no seconds
  EXPECT_EQ(ParseDateTime("2020-05-12T00:00:00Z").value(), 1589241600);
  EXPECT_EQ(ParseDateTime("2020-05-12T02:00:00+02:00").value(), 1589241600);
  EXPECT_EQ(ParseDateTime("2020-05-11T19:00:00.250-05:00").value(), 1589241600);
  EXPECT_EQ(ParseDateTime("2024-02-29T12:00:00Z").value(), 1709208000);
  EXPECT_EQ(FormatDateTime(1589241600), "2020-05-12T00:00:00Z");
  EXPECT_EQ(FormatDateTime(1709208000), "2024-02-29T12:00:00Z");
  // Total: the ends of RFC 3339's years, and instants it cannot write.
  EXPECT_EQ(FormatDateTime(-62167219200), "0000-01-01T00:00:00Z");
  EXPECT_EQ(FormatDateTime(-1), "1969-12-31T23:59:59Z");
  EXPECT_EQ(FormatDateTime(253402300799), "9999-12-31T23:59:59Z");
  EXPECT_EQ(FormatDateTime(253402300800), "unix time 253402300800");
  EXPECT_EQ(FormatDateTime(INT64_MIN), "unix time -9223372036854775808");
  EXPECT_EQ(FormatDateTime(INT64_MAX), "unix time 9223372036854775807");
  for (int64_t t = -86400 * 800; t < 86400 * 800; t += 86400 * 7 + 3607) {
    EXPECT_EQ(ParseDateTime(FormatDateTime(t)).value(), t) << t;
  }
  for (const char* bad : {"2020-05-12", "2020-05-12T00:00", "2020-13-01T00:00Z", "2023-02-29T00:00Z",
                          "2020-05-12T24:00Z", "2020-05-12T00:00Zx", "12/05/2020 00:00Z"}) {
    auto t = ParseDateTime(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().message().find(std::string("'") + bad + "'"), std::string::npos);
  }
}

}  // namespace
}  // namespace cincinnati::graphdata
