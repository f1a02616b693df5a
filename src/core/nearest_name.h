// NearestName: the name a mistyped one was probably meant to be, for messages that
// say "did you mean ...?" (a flag, a subcommand, a channel, an arch).
//
// Contract: the candidate at the smallest edit distance (insertions, deletions,
// substitutions, swaps of adjacent characters) from `word`, if that distance is small enough to be a typo (at most max(2, |word| / 3)); otherwise a
// candidate that `word` begins (of 4 characters or more), if any. Ties go to the first
// candidate. Total; time and memory |word| x a candidate's length, per candidate.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cincinnati {

std::optional<std::string> NearestName(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace cincinnati
