// Metrics: counters, gauges and histograms, optionally labelled, rendered in the
// Prometheus text exposition format (version 0.0.4). A Registry puts its prefix in
// front of every name (the reference uses "cincinnati_gb_" and "cincinnati_pe_").
// Updates are lock-free atomics; creating a new label combination takes a lock.
// Families with no sample yet still render their HELP and TYPE lines.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
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
  T& With(const std::vector<std::string>& label_values);
  T& Get() { return With({}); }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    series_.clear();
  }

  const std::vector<std::string>& label_names() const { return label_names_; }
  template <typename Fn>
  void ForEach(Fn fn) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [labels, series] : series_) fn(labels, *series);
  }

 private:
  std::vector<std::string> label_names_;
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> series_;
};

class Registry {
 public:
  explicit Registry(std::string prefix) : prefix_(std::move(prefix)) {}

  // Each returns a family that lives as long as the registry. Names are unprefixed.
  Family<Counter>& AddCounter(const std::string& name, const std::string& help, std::vector<std::string> labels = {});
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help, std::vector<std::string> labels = {});
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                                  std::vector<std::string> labels = {});

  // Text exposition of every family, in registration order.
  std::string Render() const;

 private:
  struct Entry {
    std::string name, help;
    MetricType type;
    std::unique_ptr<Family<Counter>> counter;
    std::unique_ptr<Family<Gauge>> gauge;
    std::unique_ptr<Family<Histogram>> histogram;
  };
  std::string prefix_;
  std::vector<std::unique_ptr<Entry>> entries_;
};

// Renders several registries as one scrape body.
std::string RenderAll(const std::vector<const Registry*>& registries);

}  // namespace cincinnati::http_server
