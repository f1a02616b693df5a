// Suggestions for a mistyped flag or subcommand: after CLI11 refuses arguments it did
// not expect, the nearest names of the command that was being parsed (edit distance),
// or, for a flag spelled as another command spells it, the flags it stands for: the
// agent's `--port` is the services' `--service.port` and `--status.port`, and
// `--to-version` is `adm upgrade`'s `--to`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cincinnati::cli {

// The closest of `candidates` to `word`, if it is close enough to be a typo.
std::optional<std::string> Nearest(const std::string& word, const std::vector<std::string>& candidates);

// Nearest(), else every flag whose last dotted part is `word`'s name, else the flags
// `word` extends with a dash ("--to" for "--to-version").
std::vector<std::string> Suggestions(const std::string& word, const std::vector<std::string>& candidates);

// "did you mean ...?" lines for the arguments `app` (after a failed parse) did not expect.
std::string DidYouMean(CLI::App& app, const std::vector<std::string>& unexpected);

}  // namespace cincinnati::cli
