#include "operator/operator_metrics.h"

#include <fmt/format.h>

#include <algorithm>

#include "http_server/metrics.h"

namespace cincinnati::upgrade {
namespace {

bool Includes(const Labels& labels, const Labels& match) {
  return std::all_of(match.begin(), match.end(),
                     [&](const auto& m) { return std::find(labels.begin(), labels.end(), m) != labels.end(); });
}

}  // namespace

void GaugeTable::Set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  families_[name][labels] = value;
}

void GaugeTable::Remove(const std::string& name, const Labels& match) {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return;
  std::erase_if(it->second, [&](const auto& sample) { return Includes(sample.first, match); });
}

void GaugeTable::RemoveWhere(const std::string& label, const std::string& value) {
  std::lock_guard lock(mu_);
  for (auto& [name, samples] : families_) {
    std::erase_if(samples, [&](const auto& sample) { return Includes(sample.first, {{label, value}}); });
  }
}

bool GaugeTable::Get(const std::string& name, const Labels& labels, double* value) const {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return false;
  auto s = it->second.find(labels);
  if (s == it->second.end()) return false;
  *value = s->second;
  return true;
}

std::string GaugeTable::Render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, samples] : families_) {
    if (samples.empty()) continue;
    out += fmt::format("# TYPE {} gauge\n", name);
    for (const auto& [labels, value] : samples) {
      out += name;
      if (!labels.empty()) {
        out += '{';
        for (size_t i = 0; i < labels.size(); ++i) {
          out += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first, http_server::EscapeLabel(labels[i].second));
        }
        out += '}';
      }
      out += ' ';
      out += http_server::FormatValue(value);
      out += '\n';
    }
  }
  return out;
}

}  // namespace cincinnati::upgrade
