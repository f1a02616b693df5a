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

#include "core/status.h"

namespace cincinnati::cli {

// The closest of `candidates` to `word`, if it is close enough to be a typo.
std::optional<std::string> Nearest(const std::string& word, const std::vector<std::string>& candidates);

// Nearest(), else every flag whose last dotted part is `word`'s name, else the flags
// `word` extends with a dash ("--to" for "--to-version").
std::vector<std::string> Suggestions(const std::string& word, const std::vector<std::string>& candidates);

// "did you mean ...?" lines for the arguments `app` (after a failed parse) did not expect.
std::string DidYouMean(CLI::App& app, const std::vector<std::string>& unexpected);

// The whole CLI's exit statuses, stated in every command's --help.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr const char* kExitStatusFooter =
    "Exit status: 0 on success, 1 when the command failed, 2 for a usage error (an unknown or missing flag, a bad "
    "value).";

// Ends a failed parse of `app`: --help and --version print what they ask and return 0;
// anything else prints our own message first (the mistyped flag and the name it was
// probably meant to be, rather than what CLI11 concluded from it, such as a required
// flag missing because its name was mistyped), then how to get the command's help,
// and returns kExitUsage.
int ReportParseError(CLI::App& app, const CLI::ParseError& error);

// Ends a command given a bad value that only its own code could tell (a time that does
// not parse, an output name of no known format): "error: MESSAGE", how to get the
// command's help, and kExitUsage, as a parse error does.
int ReportUsage(const CLI::App& command, const Status& status);

// Puts kExitStatusFooter on `app` and every subcommand under it.
void StateExitStatuses(CLI::App& app);

}  // namespace cincinnati::cli
