#include "core/nearest_name.h"

#include <algorithm>

namespace cincinnati {
namespace {

// Edits to turn `a` into `b`: insertions, deletions, substitutions and swaps of two
// adjacent characters (the optimal string alignment distance), so that "4.31" is one
// edit from "4.13", as a typist would count it.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::optional<std::string> NearestName(const std::string& word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;  // a typo: a few edits at most
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d < best_distance || (c.starts_with(word) && word.size() >= 4 && !best)) {
      best = c;
      best_distance = std::min(d, best_distance);
    }
  }
  return best;
}

}  // namespace cincinnati
