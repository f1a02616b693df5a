#include "operator/operator_metrics.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace cincinnati::upgrade {
namespace {

bool SameNames(const std::vector<std::string>& names, const Labels& labels) {
  return std::equal(names.begin(), names.end(), labels.begin(), labels.end(),
                    [](const std::string& name, const auto& label) { return name == label.first; });
}

std::vector<std::string> ValuesOf(const Labels& labels) {
  std::vector<std::string> values;
  values.reserve(labels.size());
  for (const auto& [name, value] : labels) values.push_back(value);
  return values;
}

}  // namespace

GaugeTable::GaugeFamily* GaugeTable::FamilyFor(const std::string& name, const Labels& labels) {
  std::lock_guard lock(mu_);
  auto [at, added] = families_.try_emplace(name, nullptr);
  if (added) {
    std::vector<std::string> names;
    for (const auto& label : labels) names.push_back(label.first);
    at->second = &registry_.AddGauge(name, "", std::move(names), http_server::WhenEmpty::kHidden);
  }
  if (!SameNames(at->second->label_names(), labels)) {
    spdlog::error("gauge {}: a sample with other label names than its family's is dropped", name);
    return nullptr;
  }
  return at->second;
}

const GaugeTable::GaugeFamily* GaugeTable::Existing(const std::string& name, const Labels& labels) const {
  std::lock_guard lock(mu_);
  auto at = families_.find(name);
  if (at == families_.end() || !SameNames(at->second->label_names(), labels)) return nullptr;
  return at->second;
}

void GaugeTable::Set(const std::string& name, const Labels& labels, double value) {
  if (GaugeFamily* family = FamilyFor(name, labels)) family->With(ValuesOf(labels)).Set(value);
}

void GaugeTable::Remove(const std::string& name, const Labels& match) {
  std::lock_guard lock(mu_);
  if (auto at = families_.find(name); at != families_.end()) at->second->RemoveMatching(match);
}

void GaugeTable::RemoveWhere(const std::string& label, const std::string& value) {
  std::lock_guard lock(mu_);
  for (auto& [name, family] : families_) family->RemoveMatching({{label, value}});
}

bool GaugeTable::Get(const std::string& name, const Labels& labels, double* value) const {
  const GaugeFamily* family = Existing(name, labels);
  return family && family->Find(ValuesOf(labels), [&](const http_server::Gauge& g) { *value = g.value(); });
}

std::string GaugeTable::Render() const { return registry_.Render(); }

}  // namespace cincinnati::upgrade
