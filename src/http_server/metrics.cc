#include "http_server/metrics.h"

#include <algorithm>
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

template <typename T>
void Family<T>::RemoveMatching(const std::vector<std::pair<std::string, std::string>>& match) {
  // The position of each matched label among the family's, or no series can match.
  std::vector<std::pair<size_t, const std::string*>> wanted;
  for (const auto& [name, value] : match) {
    auto at = std::find(label_names_.begin(), label_names_.end(), name);
    if (at == label_names_.end()) return;
    wanted.emplace_back(static_cast<size_t>(at - label_names_.begin()), &value);
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(series_, [&](const auto& series) {
    return std::all_of(wanted.begin(), wanted.end(), [&](const auto& w) { return series.first[w.first] == *w.second; });
  });
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

void Registry::Add(std::unique_ptr<Entry> entry) {
  std::lock_guard lock(mu_);
  entries_.push_back(std::move(entry));
}

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help, std::vector<std::string> labels,
                                      WhenEmpty when_empty) {
  auto e = std::make_unique<Entry>(Entry{name, help, MetricType::kCounter, when_empty, {}, {}, {}});
  Family<Counter>& out = *(e->counter = std::make_unique<Family<Counter>>(std::move(labels)));
  Add(std::move(e));
  return out;
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help, std::vector<std::string> labels,
                                  WhenEmpty when_empty) {
  auto e = std::make_unique<Entry>(Entry{name, help, MetricType::kGauge, when_empty, {}, {}, {}});
  Family<Gauge>& out = *(e->gauge = std::make_unique<Family<Gauge>>(std::move(labels)));
  Add(std::move(e));
  return out;
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                                          std::vector<std::string> labels) {
  auto e = std::make_unique<Entry>(Entry{name, help, MetricType::kHistogram, WhenEmpty::kShown, {}, {}, {}});
  Family<Histogram>& out = *(e->histogram = std::make_unique<Family<Histogram>>(std::move(labels), std::move(bounds)));
  Add(std::move(e));
  return out;
}

void Registry::RenderEntry(const std::string& name, const Entry& e, std::string& out) {
  std::string series;
  if (e.counter) {
    e.counter->ForEach([&](const auto& values, const Counter& c) {
      series += fmt::format("{}{} {}\n", name, Labels(e.counter->label_names(), values), FormatValue(c.value()));
    });
  } else if (e.gauge) {
    e.gauge->ForEach([&](const auto& values, const Gauge& g) {
      series += fmt::format("{}{} {}\n", name, Labels(e.gauge->label_names(), values), FormatValue(g.value()));
    });
  } else if (e.histogram) {
    e.histogram->ForEach([&](const auto& values, const Histogram& h) {
      const auto& label_names = e.histogram->label_names();
      uint64_t cumulative = 0;
      for (size_t i = 0; i <= h.bounds().size(); ++i) {
        cumulative += h.bucket_count(i);
        std::string le = i < h.bounds().size() ? FormatValue(h.bounds()[i]) : "+Inf";
        series += fmt::format("{}_bucket{} {}\n", name, Labels(label_names, values, "le=\"" + le + "\""), cumulative);
      }
      series += fmt::format("{}_sum{} {}\n", name, Labels(label_names, values), FormatValue(h.sum()));
      series += fmt::format("{}_count{} {}\n", name, Labels(label_names, values), h.count());
    });
  }
  if (series.empty() && e.when_empty == WhenEmpty::kHidden) return;
  static constexpr const char* kTypes[] = {"counter", "gauge", "histogram"};
  if (!e.help.empty()) out += fmt::format("# HELP {} {}\n", name, e.help);
  out += fmt::format("# TYPE {} {}\n", name, kTypes[static_cast<int>(e.type)]);
  out += series;
}

std::string Registry::Render() const {
  std::vector<const Entry*> entries;
  {
    std::lock_guard lock(mu_);
    for (const auto& e : entries_) entries.push_back(e.get());  // each lives as long as the registry
  }
  if (order_ == Order::kName) {
    std::stable_sort(entries.begin(), entries.end(), [](const Entry* a, const Entry* b) { return a->name < b->name; });
  }
  std::string out;
  for (const Entry* e : entries) RenderEntry(prefix_ + e->name, *e, out);
  return out;
}

std::string RenderAll(const std::vector<const Registry*>& registries) {
  std::string out;
  for (const Registry* r : registries) out += r->Render();
  return out;
}

}  // namespace cincinnati::http_server
