// Metrics: counters, gauges and histograms, optionally labelled, rendered in the
// Prometheus text exposition format (version 0.0.4). The project's one registry: every
// /metrics body (services, agent, operator) is rendered by it.
//
// A Registry puts its prefix in front of every name (the reference uses
// "cincinnati_gb_" and "cincinnati_pe_") and renders its families in registration order,
// or by name. A family with help text has a HELP line, one without has only its TYPE
// line (as the managed-upgrade operator's gauges). A family with no series yet renders
// its HELP and TYPE lines, unless it is hidden when empty (series that come and go with
// what they describe, such as a cluster's gauges once its config is deleted).
// Series render in the order of their label values.
//
// Updates are lock-free atomics; creating or removing a label combination takes the
// family's lock, adding a family the registry's. Thread-safe; never throws.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace cincinnati::http_server {

// A sample value and a label value as the text exposition format writes them.
std::string FormatValue(double v);
std::string EscapeLabel(const std::string& v);

class Counter {
 public:
  void Increment(double by = 1) { value_.fetch_add(by, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  uint64_t bucket_count(size_t i) const { return counts_[i].load(std::memory_order_relaxed); }  // not cumulative
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1 (the +Inf bucket)
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

enum class MetricType { kCounter, kGauge, kHistogram };

// All series of one metric name, keyed by label values.
template <typename T>
class Family {
 public:
  Family(std::vector<std::string> label_names, std::vector<double> bounds = {})
      : label_names_(std::move(label_names)), bounds_(std::move(bounds)) {}
  // The series with these label values (in label_names() order), made on first use. A
  // reference stays valid until the series is removed (Clear, RemoveMatching).
  T& With(const std::vector<std::string>& label_values);
  T& Get() { return With({}); }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    series_.clear();
  }
  // Removes every series whose labels include each (name, value) of `match`; every
  // series when `match` is empty. A label name the family lacks matches no series.
  void RemoveMatching(const std::vector<std::pair<std::string, std::string>>& match);

  const std::vector<std::string>& label_names() const { return label_names_; }
  bool empty() const {
    std::lock_guard<std::mutex> lock(mu_);
    return series_.empty();
  }
  template <typename Fn>
  void ForEach(Fn fn) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [labels, series] : series_) fn(labels, *series);
  }
  // Calls fn(series) when the series with these label values exists (under the
  // family's lock, so that it cannot be removed meanwhile); says whether it did.
  template <typename Fn>
  bool Find(const std::vector<std::string>& label_values, Fn fn) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto at = series_.find(label_values);
    if (at == series_.end()) return false;
    fn(static_cast<const T&>(*at->second));
    return true;
  }

 private:
  std::vector<std::string> label_names_;
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> series_;
};

// How a family with no series renders: its HELP and TYPE lines, or nothing.
enum class WhenEmpty { kShown, kHidden };

class Registry {
 public:
  enum class Order { kRegistration, kName };  // of the families in Render
  explicit Registry(std::string prefix, Order order = Order::kRegistration) : prefix_(std::move(prefix)), order_(order) {}

  // Each returns a family that lives as long as the registry. Names are unprefixed; an
  // empty `help` renders no HELP line.
  Family<Counter>& AddCounter(const std::string& name, const std::string& help, std::vector<std::string> labels = {},
                              WhenEmpty when_empty = WhenEmpty::kShown);
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help, std::vector<std::string> labels = {},
                          WhenEmpty when_empty = WhenEmpty::kShown);
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                                  std::vector<std::string> labels = {});

  // Text exposition of every family.
  std::string Render() const;

 private:
  struct Entry {
    std::string name, help;
    MetricType type;
    WhenEmpty when_empty = WhenEmpty::kShown;
    std::unique_ptr<Family<Counter>> counter;
    std::unique_ptr<Family<Gauge>> gauge;
    std::unique_ptr<Family<Histogram>> histogram;
  };
  void Add(std::unique_ptr<Entry> entry);
  static void RenderEntry(const std::string& name, const Entry& e, std::string& out);

  std::string prefix_;
  Order order_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;  // under mu_
};

// Renders several registries as one scrape body.
std::string RenderAll(const std::vector<const Registry*>& registries);

}  // namespace cincinnati::http_server
