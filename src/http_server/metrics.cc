#include "http_server/metrics.h"

#include <cmath>

#include <fmt/format.h>

namespace cincinnati::http_server {
std::string FormatValue(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  return fmt::format("{}", v);
}

std::string EscapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

namespace {

std::string Labels(const std::vector<std::string>& names, const std::vector<std::string>& values,
                   const std::string& extra = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}=\"{}\"", names[i], EscapeLabel(values[i]));
  }
  if (!extra.empty()) out += (out.empty() ? "" : ",") + extra;
  return out.empty() ? "" : "{" + out + "}";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

void Histogram::Observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

template <typename T>
T& Family<T>::With(const std::vector<std::string>& label_values) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = series_[label_values];
  if (!slot) {
    if constexpr (std::is_same_v<T, Histogram>) {
      slot = std::make_unique<Histogram>(bounds_);
    } else {
      slot = std::make_unique<T>();
    }
  }
  return *slot;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help,
                                      std::vector<std::string> labels) {
  auto e = std::make_unique<Entry>(Entry{name, help, MetricType::kCounter, {}, {}, {}});
  e->counter = std::make_unique<Family<Counter>>(std::move(labels));
  entries_.push_back(std::move(e));
  return *entries_.back()->counter;
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help, std::vector<std::string> labels) {
  auto e = std::make_unique<Entry>(Entry{name, help, MetricType::kGauge, {}, {}, {}});
  e->gauge = std::make_unique<Family<Gauge>>(std::move(labels));
  entries_.push_back(std::move(e));
  return *entries_.back()->gauge;
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          std::vector<double> bounds, std::vector<std::string> labels) {
  auto e = std::make_unique<Entry>(Entry{name, help, MetricType::kHistogram, {}, {}, {}});
  e->histogram = std::make_unique<Family<Histogram>>(std::move(labels), std::move(bounds));
  entries_.push_back(std::move(e));
  return *entries_.back()->histogram;
}

std::string Registry::Render() const {
  std::string out;
  for (const auto& e : entries_) {
    std::string name = prefix_ + e->name;
    static constexpr const char* kTypes[] = {"counter", "gauge", "histogram"};
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, e->help, name, kTypes[static_cast<int>(e->type)]);
    if (e->counter) {
      e->counter->ForEach([&](const auto& values, const Counter& c) {
        out += fmt::format("{}{} {}\n", name, Labels(e->counter->label_names(), values), FormatValue(c.value()));
      });
    } else if (e->gauge) {
      e->gauge->ForEach([&](const auto& values, const Gauge& g) {
        out += fmt::format("{}{} {}\n", name, Labels(e->gauge->label_names(), values), FormatValue(g.value()));
      });
    } else {
      e->histogram->ForEach([&](const auto& values, const Histogram& h) {
        const auto& label_names = e->histogram->label_names();
        uint64_t cumulative = 0;
        for (size_t i = 0; i <= h.bounds().size(); ++i) {
          cumulative += h.bucket_count(i);
          std::string le = i < h.bounds().size() ? FormatValue(h.bounds()[i]) : "+Inf";
          out += fmt::format("{}_bucket{} {}\n", name, Labels(label_names, values, "le=\"" + le + "\""), cumulative);
        }
        out += fmt::format("{}_sum{} {}\n", name, Labels(label_names, values), FormatValue(h.sum()));
        out += fmt::format("{}_count{} {}\n", name, Labels(label_names, values), h.count());
      });
    }
  }
  return out;
}

std::string RenderAll(const std::vector<const Registry*>& registries) {
  std::string out;
  for (const Registry* r : registries) out += r->Render();
  return out;
}

}  // namespace cincinnati::http_server
