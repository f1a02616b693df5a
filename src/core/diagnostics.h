// Diagnostics: warnings and notes that a run collects instead of failing, each naming
// where it comes from (a file, a node, a parameter). The caller decides how to log.
#pragma once

#include <string>
#include <vector>

namespace cincinnati {

struct Diagnostic {
  enum class Severity { kInfo, kWarning, kError };
  Severity severity = Severity::kWarning;
  std::string location;  // file, node version or parameter; may be empty
  std::string message;
};

class Diagnostics {
 public:
  void Info(std::string location, std::string message) { Add(Diagnostic::Severity::kInfo, location, message); }
  void Warn(std::string location, std::string message) { Add(Diagnostic::Severity::kWarning, location, message); }
  void Error(std::string location, std::string message) { Add(Diagnostic::Severity::kError, location, message); }
  void Add(Diagnostic::Severity s, std::string location, std::string message) {
    // A message that already starts with its location would print it twice.
    if (!location.empty() && message.starts_with(location + ": ")) message.erase(0, location.size() + 2);
    items_.push_back(Diagnostic{s, std::move(location), std::move(message)});
  }
  const std::vector<Diagnostic>& items() const { return items_; }
  size_t Count(Diagnostic::Severity s) const {
    size_t n = 0;
    for (const auto& d : items_) n += d.severity == s;
    return n;
  }

 private:
  std::vector<Diagnostic> items_;
};

}  // namespace cincinnati
