#include "cli/did_you_mean.h"

#include <algorithm>
#include <iostream>

#include "core/nearest_name.h"

namespace cincinnati::cli {
namespace {

// The subcommand CLI11 was parsing when it stopped: the deepest one it selected.
CLI::App* Deepest(CLI::App& app) {
  CLI::App* current = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (CLI::App* sub : current->get_subcommands()) {
      current = sub;
      deeper = true;
      break;
    }
  }
  return current;
}

}  // namespace

std::optional<std::string> Nearest(const std::string& word, const std::vector<std::string>& candidates) {
  return NearestName(word, candidates);
}

std::vector<std::string> Suggestions(const std::string& word, const std::vector<std::string>& candidates) {
  if (auto nearest = Nearest(word, candidates)) return {*nearest};
  std::vector<std::string> out;
  if (!word.starts_with("--")) return out;
  const std::string name = word.substr(2);
  for (const std::string& c : candidates) {
    const size_t dot = c.rfind('.');
    if (dot != std::string::npos && c.substr(dot + 1) == name) out.push_back(c);
  }
  if (!out.empty()) return out;
  for (const std::string& c : candidates) {
    if (c.size() > 2 && word.starts_with(c + "-")) out.push_back(c);
  }
  return out;
}

namespace {

// " graph render" for `graph render`: the command's words after `cincinnati`.
std::string CommandPath(const CLI::App* command) {
  std::string path;
  for (const CLI::App* c = command; c != nullptr && c->get_parent() != nullptr; c = c->get_parent()) {
    path = " " + c->get_name() + path;
  }
  return path;
}

}  // namespace

std::string DidYouMean(CLI::App& app, const std::vector<std::string>& unexpected) {
  CLI::App* command = Deepest(app);
  std::vector<std::string> flags, subcommands;
  for (const CLI::Option* o : command->get_options()) {
    for (const std::string& name : o->get_lnames()) flags.push_back("--" + name);
  }
  for (const CLI::App* sub : command->get_subcommands({})) subcommands.push_back(sub->get_name());
  std::string out;
  for (const std::string& arg : unexpected) {
    const bool flag = arg.starts_with("--");
    const std::string word = flag ? arg.substr(0, arg.find('=')) : arg;
    const std::vector<std::string> suggestions = Suggestions(word, flag ? flags : subcommands);
    const std::string unknown = "'" + word + "' is unknown" + (command == &app ? "" : " to '" + CommandPath(command).substr(1) + "'");
    if (suggestions.empty()) {
      // A flag like no other is still the first thing to say (before a required flag
      // CLI11 then found missing); a word that is not a flag may be its value.
      if (flag) out += unknown + "\n";
      continue;
    }
    std::string names;
    for (size_t i = 0; i < suggestions.size(); ++i) {
      names += (i == 0 ? "'" : i + 1 == suggestions.size() ? " or '" : ", '") + suggestions[i] + "'";
    }
    out += unknown + "; did you mean " + names + "?\n";
  }
  return out;
}

namespace {

// How to get the command's help: the last line of every usage error.
void PrintHelpHint(const CLI::App* command) {
  const std::string path = CommandPath(command);
  std::cerr << "Run `cincinnati" << path << " --help` for its " << (path.empty() ? "commands" : "flags") << ".\n";
}

}  // namespace

int ReportUsage(const CLI::App& command, const Status& status) {
  std::cerr << "error: " << status.message() << '\n';
  PrintHelpHint(&command);
  return kExitUsage;
}

int ReportParseError(CLI::App& app, const CLI::ParseError& error) {
  if (error.get_exit_code() == 0) return app.exit(error);  // --help, --help-all, --version
  CLI::App* command = Deepest(app);
  const std::string lines = DidYouMean(app, app.remaining(true));
  if (!lines.empty()) {
    for (size_t start = 0; start < lines.size();) {
      const size_t end = lines.find('\n', start);
      std::cerr << "error: " << lines.substr(start, end - start) << '\n';
      start = end == std::string::npos ? lines.size() : end + 1;
    }
  } else {
    std::cerr << "error: " << error.what() << '\n';
  }
  PrintHelpHint(command);
  return kExitUsage;
}

void StateExitStatuses(CLI::App& app) {
  app.footer(kExitStatusFooter);
  for (CLI::App* sub : app.get_subcommands({})) StateExitStatuses(*sub);
}

}  // namespace cincinnati::cli
