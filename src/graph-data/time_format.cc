#include "graph-data/time_format.h"

#include <charconv>

#include <fmt/format.h>

#include "core/date_time.h"

namespace cincinnati::graphdata {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

unsigned DaysInMonth(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

}  // namespace

Result<int64_t> ParseDuration(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format("invalid duration '{}': {}", text, why));
  };
  if (text.size() < 3 || text[0] != 'P') return bad("expected P[nW][nD][T[nH][nM][nS]]");
  int64_t total = 0;
  bool time_part = false, any = false, any_time = false;
  std::string_view order = "WDHMS";
  size_t last_unit = 0;
  for (size_t i = 1; i < text.size();) {
    if (text[i] == 'T') {
      if (time_part) return bad("'T' twice");
      time_part = true;
      ++i;
      continue;
    }
    size_t start = i;
    while (i < text.size() && IsDigit(text[i])) ++i;
    if (i == start || i == text.size()) return bad("expected a number followed by a unit");
    if (i - start > 9) return bad("number too large");
    int64_t n = 0;  // at most 9 digits: fits
    std::from_chars(text.data() + start, text.data() + i, n);
    char unit = text[i++];
    size_t rank = order.find(unit);
    if (unit == 'Y' || (unit == 'M' && !time_part)) return bad("years and months have no fixed length");
    if (rank == std::string_view::npos) return bad(fmt::format("unknown unit '{}'", unit));
    bool needs_time = unit == 'H' || unit == 'M';
    if (needs_time != time_part && !(unit == 'S')) return bad(fmt::format("'{}' is in the wrong part", unit));
    if (rank + 1 <= last_unit) return bad("units out of order");
    last_unit = rank + 1;
    static constexpr int64_t kSeconds[] = {7 * 86400, 86400, 3600, 60, 1};
    total += n * kSeconds[rank];
    any = true;
    any_time |= time_part;
  }
  if (!any) return bad("no components");
  if (time_part && !any_time) return bad("'T' without hours, minutes or seconds");
  return total;
}

Result<int64_t> ParseDateTime(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format("invalid date-time '{}': {}", text, why));
  };
  // YYYY-MM-DDTHH:MM[:SS[.frac]](Z|+HH:MM|-HH:MM)
  auto num = [&](size_t pos, size_t len, int64_t* out) {
    if (pos + len > text.size()) return false;
    int64_t v = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (!IsDigit(text[i])) return false;
      v = v * 10 + (text[i] - '0');
    }
    *out = v;
    return true;
  };
  int64_t y, mo, d, h, mi, s = 0;
  if (!num(0, 4, &y) || text.size() < 16 || text[4] != '-' || !num(5, 2, &mo) || text[7] != '-' || !num(8, 2, &d) ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || !num(11, 2, &h) || text[13] != ':' ||
      !num(14, 2, &mi)) {
    return bad("expected YYYY-MM-DDTHH:MM[:SS]Z");
  }
  size_t pos = 16;
  if (pos < text.size() && text[pos] == ':') {
    if (!num(pos + 1, 2, &s)) return bad("bad seconds");
    pos += 3;
    if (pos < text.size() && text[pos] == '.') {
      ++pos;
      size_t start = pos;
      while (pos < text.size() && IsDigit(text[pos])) ++pos;
      if (pos == start) return bad("bad fraction");
    }
  }
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, static_cast<unsigned>(mo)) || h > 23 || mi > 59 || s > 60) {
    return bad("out of range");
  }
  int64_t offset = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int64_t oh, om;
    if (!num(pos + 1, 2, &oh) || pos + 3 >= text.size() || text[pos + 3] != ':' || !num(pos + 4, 2, &om)) {
      return bad("bad offset");
    }
    offset = (oh * 3600 + om * 60) * (text[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return bad("a time zone (Z or an offset) is required");
  }
  if (pos != text.size()) return bad("trailing text");
  return DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 + mi * 60 + s -
         offset;
}

std::string FormatDateTime(int64_t t) { return FormatUnixSeconds(t); }

}  // namespace cincinnati::graphdata
