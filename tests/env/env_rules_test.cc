// The environment layer's rule, checked on the source: outside src/env, no code starts,
// signals or waits for processes, takes file locks, reads files past env::FileSystem, or
// asks the operating system through std::filesystem (path arithmetic is fine). Each
// finding names file:line and what to use instead; the allow-list below names every
// exception and why. Comments and string literals are not code and are not checked.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace cincinnati {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = fs::path(CINCINNATI_TEST_SOURCE_DIR "/../src").lexically_normal();

struct Rule {
  const char* name;
  const char* pattern;  // ECMAScript, on one line of code
  const char* instead;
};

const std::vector<Rule>& Rules() {
  static const std::vector<Rule> rules = {
      {"process", R"((^|[^\w.>])(fork|vfork|execv|execve|execvp|execvpe|execl|execlp|execle|fexecve|waitpid|wait3|wait4|waitid|killpg|setsid|setpgid|popen|system)\s*\()",
       "env::Process (src/env/process.h)"},
      {"process", R"(\bposix_spawn\w*)", "env::Process (src/env/process.h)"},
      {"process", R"((^|[^\w.>])kill\s*\()", "env::Process::Signal/SignalGroup or env::SignalSelf"},
      {"cpus", R"(\bhardware_concurrency\s*\()", "env::UsableCpus (src/env/cpus.h): the CPUs this process may use"},
      {"lock", R"((^|[^\w.>])(flock|lockf)\s*\()", "env::FileLock (src/env/file_system.h)"},
      {"lock", R"(\bfcntl\s*\(.*F_(SETLK|SETLKW|GETLK|OFD_))", "env::FileLock (src/env/file_system.h)"},
      {"read", R"(\b(std::)?(i|)fstream\b)", "env::FileSystem::ReadFile / ReadStream"},
      {"read", R"((^|[^\w.>])(fopen|fdopen|freopen|openat|creat)\s*\()", "env::FileSystem"},
      {"read", R"(::(open|read|pread)\s*\()", "env::FileSystem"},
      {"read", R"(padded_string::load\b)", "env::FileSystem::ReadFile, then a padded_string"},
      {"filesystem",
       R"(\b(std::filesystem|fs)::(exists|remove|remove_all|create_directory|create_directories|directory_iterator|recursive_directory_iterator|directory_entry|file_size|status|symlink_status|last_write_time|rename|is_directory|is_regular_file|is_symlink|is_empty|is_fifo|is_socket|is_other|is_block_file|is_character_file|copy|copy_file|copy_symlink|canonical|weakly_canonical|absolute|relative|proximate|space|temp_directory_path|current_path|read_symlink|create_symlink|create_directory_symlink|create_hard_link|hard_link_count|permissions|resize_file|equivalent)\b)",
       "env::FileSystem (Stat, ListDirectory, ListTree, CreateDirectories, RemoveFile, RemoveTree, ...)"},
      {"filesystem", R"(::(stat|lstat|access|statvfs|statfs|readlink|unlink|rmdir|mkdir|mkdtemp|mkstemp|realpath|truncate|rename)\s*\()",
       "env::FileSystem (Stat, IsExecutable, RemoveFile, CreateUniqueDirectory, ...) or env::SelfExecutablePath"},
  };
  return rules;
}

// Exceptions, each with its reason: (file under src/, rule name).
struct Allowed {
  const char* file;
  const char* rule;
  const char* reason;
};

const std::vector<Allowed> kAllowed = {
};

// The code of a C++ file with comments and string and character literals blanked out,
// newlines kept (so that line numbers still hold).
std::string CodeOnly(const std::string& text) {
  std::string out = text;
  size_t i = 0;
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < out.size(); ++k) {
      if (out[k] != '\n') out[k] = ' ';
    }
  };
  while (i < text.size()) {
    if (text.compare(i, 2, "//") == 0) {
      const size_t end = text.find('\n', i);
      blank(i, end == std::string::npos ? text.size() : end);
      i = end == std::string::npos ? text.size() : end;
    } else if (text.compare(i, 2, "/*") == 0) {
      const size_t end = text.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? text.size() : end + 2;
      blank(i, stop);
      i = stop;
    } else if (text[i] == 'R' && i + 1 < text.size() && text[i + 1] == '"' &&
               (i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_'))) {
      const size_t open = text.find('(', i + 2);
      if (open == std::string::npos) break;
      const std::string close = ")" + text.substr(i + 2, open - i - 2) + "\"";
      const size_t end = text.find(close, open);
      const size_t stop = end == std::string::npos ? text.size() : end + close.size();
      blank(i + 2, stop - 1);
      i = stop;
    } else if (text[i] == '"' || (text[i] == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(text[i - 1]))))) {
      // A quote, unless it is a digit separator (1'000'000).
      const char quote = text[i];
      size_t k = i + 1;
      while (k < text.size() && text[k] != quote && text[k] != '\n') k += text[k] == '\\' ? 2 : 1;
      blank(i + 1, k);
      i = k + 1;
    } else {
      ++i;
    }
  }
  return out;
}

struct Finding {
  std::string file, rule, line_text, instead;
  size_t line;
};

// Every finding of the rules in the code `text` of `file`.
std::vector<Finding> Scan(const std::string& file, const std::string& text) {
  std::vector<std::pair<const Rule*, std::regex>> compiled;
  for (const Rule& rule : Rules()) compiled.emplace_back(&rule, std::regex(rule.pattern));
  std::vector<Finding> out;
  std::istringstream code(CodeOnly(text)), original(text);
  std::string line, original_line;
  for (size_t number = 1; std::getline(code, line) && std::getline(original, original_line); ++number) {
    if (line.rfind("#include", line.find_first_not_of(' ')) == line.find_first_not_of(' ')) continue;
    // std::regex is slow: only lines with a word some rule looks for are matched.
    static const char* const kHints[] = {"fork", "exec", "wait", "kill", "setsid", "setpgid", "popen", "system",
                                         "spawn", "lock", "fcntl", "fstream", "open", "creat", "read", "load", "fs::", "filesystem::",
                                         "stat", "access", "link", "dir", "mk", "realpath", "truncate", "rename"};
    bool hinted = false;
    for (const char* hint : kHints) hinted = hinted || line.find(hint) != std::string::npos;
    if (!hinted) continue;
    for (const auto& [rule, re] : compiled) {
      if (std::regex_search(line, re)) out.push_back({file, rule->name, original_line, rule->instead, number});
    }
  }
  return out;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(EnvRulesTest, NoProcessLockRawReadOrFilesystemCallOutsideTheEnvironmentLayer) {
  ASSERT_TRUE(fs::is_directory(kSource / "env")) << kSource;
  size_t files = 0;
  std::set<std::pair<std::string, std::string>> used;  // allow-list entries that matched
  std::vector<std::string> failures;
  for (const auto& entry : fs::recursive_directory_iterator(kSource)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
    const std::string file = entry.path().lexically_relative(kSource).generic_string();
    if (file.rfind("env/", 0) == 0) continue;
    ++files;
    for (const Finding& f : Scan(file, ReadAll(entry.path()))) {
      bool allowed = false;
      for (const Allowed& a : kAllowed) {
        if (f.file == a.file && f.rule == a.rule) allowed = true, used.insert({a.file, a.rule});
      }
      if (!allowed) {
        failures.push_back("src/" + f.file + ":" + std::to_string(f.line) + ": " + f.rule + " call outside src/env (use " +
                           f.instead + "): " + f.line_text);
      }
    }
  }
  EXPECT_GT(files, 100u) << "src/ was not found whole at " << kSource;
  for (const std::string& failure : failures) ADD_FAILURE() << failure;
  for (const Allowed& a : kAllowed) {
    EXPECT_TRUE(used.count({a.file, a.rule})) << "src/" << a.file << " (" << a.rule
                                               << ") is allowed but breaks no rule any more: remove it from the allow-list";
  }
}

// The scanner itself: what it must find, and what it must leave alone.
TEST(EnvRulesTest, TheScannerFindsCallsAndIgnoresCommentsStringsAndPaths) {
  const std::string code =
      "pid_t p = ::fork();\n"                                // 1 process
      "::kill(-pid, SIGKILL);\n"                             // 2 process
      "std::ifstream in(path);\n"                            // 3 read
      "std::error_code ec; fs::remove_all(dir, ec);\n"      // 4 filesystem
      "if (::flock(fd, LOCK_EX) != 0) {}\n"                  // 5 lock
      "// fork() and waitpid() in a comment\n"               // 6 nothing
      "log(\"kill(1) std::ifstream fs::exists(\");\n"       // 7 nothing
      "fs::path p = fs::path(dir) / \"x\";\n"                // 8 nothing: path arithmetic
      "process->Signal(SIGTERM); timer.kill(); x.wait();\n"  // 9 nothing: members
      "static const RE2 re(R\"(fork\\(\\))\");\n"            // 10 nothing: a raw string
      "int n = 1'000; posix_spawn(&pid, p, 0, 0, a, e);\n";  // 11 process
  std::map<size_t, std::string> found;
  for (const Finding& f : Scan("x.cc", code)) found[f.line] = f.rule;
  const std::map<size_t, std::string> expected = {
      {1, "process"}, {2, "process"}, {3, "read"}, {4, "filesystem"}, {5, "lock"}, {11, "process"}};
  EXPECT_EQ(found, expected);
}

}  // namespace
}  // namespace cincinnati
