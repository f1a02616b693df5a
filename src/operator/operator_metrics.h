// GaugeTable: the upgrade operator's gauges (the MUO's operator gauges, names
// verbatim), kept in the project's metrics registry (http_server/metrics.h). A family is
// made on its first Set, with the label names of that Set, and has a TYPE line only (no
// help, as the reference). Its samples can be set and removed again: the reference's
// "ephemeral" metrics disappear when a config goes away, and a family without samples
// is not rendered. Families render by name, samples by label values.
// Thread-safe; never throws.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "http_server/metrics.h"

namespace cincinnati::upgrade {

using Labels = std::vector<std::pair<std::string, std::string>>;  // in exposition order

class GaugeTable {
 public:
  GaugeTable() : registry_("", http_server::Registry::Order::kName) {}

  // A family's samples all have the label names of its first Set: a Set with others is
  // dropped (and logged).
  void Set(const std::string& name, const Labels& labels, double value);
  // Removes every sample of `name` whose labels include all of `match` (all samples
  // of `name` when `match` is empty).
  void Remove(const std::string& name, const Labels& match = {});
  // Removes every sample, of any name, with this label value (a deleted config).
  void RemoveWhere(const std::string& label, const std::string& value);
  // nullopt-like: returns false when absent.
  bool Get(const std::string& name, const Labels& labels, double* value) const;
  std::string Render() const;

 private:
  using GaugeFamily = http_server::Family<http_server::Gauge>;
  // The family `name`, made with `labels`' names when new; null when it exists with
  // other label names.
  GaugeFamily* FamilyFor(const std::string& name, const Labels& labels);
  // The family `name` when it exists with `labels`' names.
  const GaugeFamily* Existing(const std::string& name, const Labels& labels) const;

  http_server::Registry registry_;
  mutable std::mutex mu_;
  std::map<std::string, GaugeFamily*> families_;  // under mu_; each lives in registry_
};

}  // namespace cincinnati::upgrade
