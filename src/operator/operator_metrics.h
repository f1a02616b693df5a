// GaugeTable: the upgrade operator's gauges (the MUO's operator gauges, names
// verbatim), each a family of labelled values that can be set, and removed again (the
// reference's "ephemeral" metrics disappear when a config goes away). Rendered in the
// Prometheus text format. Thread-safe (one mutex); never throws.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace cincinnati::upgrade {

using Labels = std::vector<std::pair<std::string, std::string>>;  // in exposition order

class GaugeTable {
 public:
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
  mutable std::mutex mu_;
  std::map<std::string, std::map<Labels, double>> families_;
};

}  // namespace cincinnati::upgrade
