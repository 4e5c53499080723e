// MetricsRegistry: Prometheus metrics (counters, gauges, histograms with explicit buckets) in
// families with label sets, and their text exposition (format 0.0.4) with process metrics.
//
// Use: register each family once at startup, then ask it for a child per label set and keep
// that handle; updating a handle is a lock-free atomic operation (the hot path). The registry's
// and the families' mutexes are taken only to register, to create or remove a child, and to
// expose.
//
//   MetricsRegistry registry;
//   CounterFamily* requests = registry.AddCounter("inferloop_requests_total", "Requests.",
//                                                 {"model", "version"}).value();
//   Counter c = requests->WithLabels({"resnet", "1"}).value();
//   c.Increment();                       // any thread, lock-free
//   requests->RemoveWhere("model", "resnet");  // when the model unloads
//   std::string text = registry.Exposition();
//
// A removed child's handles stay valid: updates through them are kept but no longer exposed
// (asking for the label set again creates a new child, starting at zero).
// Thread-safety: everything may be called from any thread, concurrently. Families live as long as
// the registry.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::serve {

namespace metrics_internal {
struct CounterCell {
  std::atomic<double> value{0};
};
struct GaugeCell {
  std::atomic<double> value{0};
};
struct HistogramCell {
  explicit HistogramCell(std::shared_ptr<const std::vector<double>> b);
  std::shared_ptr<const std::vector<double>> bounds;  // ascending upper bounds, +Inf implied
  std::unique_ptr<std::atomic<uint64_t>[]> counts;    // per bucket (not cumulative), +Inf last
  std::atomic<double> sum{0};
};
}  // namespace metrics_internal

// A monotonically increasing value.
class Counter {
 public:
  using Cell = metrics_internal::CounterCell;
  Counter();  // a detached counter (counts, exposed nowhere)
  // Adds `v`; negative or NaN values are ignored (a counter never goes down).
  void Increment(double v = 1.0);
  double Value() const;

 private:
  template <typename>
  friend class MetricFamily;
  explicit Counter(std::shared_ptr<metrics_internal::CounterCell> cell) : cell_(std::move(cell)) {}
  std::shared_ptr<metrics_internal::CounterCell> cell_;
};

// A value that goes up and down.
class Gauge {
 public:
  using Cell = metrics_internal::GaugeCell;
  Gauge();  // a detached gauge
  void Set(double v);
  void Add(double v);
  void Increment(double v = 1.0) { Add(v); }
  void Decrement(double v = 1.0) { Add(-v); }
  double Value() const;

 private:
  template <typename>
  friend class MetricFamily;
  explicit Gauge(std::shared_ptr<metrics_internal::GaugeCell> cell) : cell_(std::move(cell)) {}
  std::shared_ptr<metrics_internal::GaugeCell> cell_;
};

// Observations counted into buckets (value <= upper bound), with their sum.
class Histogram {
 public:
  using Cell = metrics_internal::HistogramCell;
  Histogram();  // a detached histogram with no buckets but +Inf
  // NaN is ignored.
  void Observe(double v);
  // Observations so far and their sum (buckets are exposed by the registry).
  uint64_t Count() const;
  double Sum() const;

 private:
  template <typename>
  friend class MetricFamily;
  explicit Histogram(std::shared_ptr<metrics_internal::HistogramCell> cell) : cell_(std::move(cell)) {}
  std::shared_ptr<metrics_internal::HistogramCell> cell_;
};

enum class MetricType { kCounter, kGauge, kHistogram };

// A family: one metric name, its help text and label names, and a child per label set.
template <typename Handle>
class MetricFamily {
 public:
  MetricFamily(std::string name, std::string help, std::vector<std::string> label_names,
               std::shared_ptr<const std::vector<double>> bounds);

  // The child for `values` (one per label name, in order), created at zero the first time.
  // InvalidArgument when the number of values differs from the number of label names.
  Result<Handle> WithLabels(const std::vector<std::string>& values);
  // Removes the child for `values`; false when there was none.
  bool Remove(const std::vector<std::string>& values);
  // Removes every child whose label `label` is `value` (e.g. every series of an unloaded model);
  // returns how many.
  size_t RemoveWhere(std::string_view label, std::string_view value);

  const std::string& name() const { return name_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Appends the family's HELP/TYPE lines and samples to `out`.
  void Expose(std::string* out) const;

 private:
  using Cell = typename Handle::Cell;
  std::string name_, help_;
  std::vector<std::string> label_names_;
  std::shared_ptr<const std::vector<double>> bounds_;  // histograms only
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::shared_ptr<Cell>> children_;  // sorted: stable exposition
};

using CounterFamily = MetricFamily<Counter>;
using GaugeFamily = MetricFamily<Gauge>;
using HistogramFamily = MetricFamily<Histogram>;

// `count` upper bounds start, start*factor, start*factor^2, ... (start > 0, factor > 1).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// The text format's escaping: label values (backslash, double quote, newline) and help text
// (backslash, newline).
std::string EscapeLabelValue(std::string_view v);
std::string EscapeHelp(std::string_view v);
// A sample value as the text format writes it: shortest round-trip decimal, +Inf, -Inf, NaN.
std::string FormatMetricValue(double v);

class MetricsRegistry {
 public:
  struct Options {
    // Adds process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
    // process_start_time_seconds, process_open_fds and process_max_fds (read from /proc/self at
    // exposition).
    bool process_metrics = true;
  };
  MetricsRegistry() : MetricsRegistry(Options{}) {}
  explicit MetricsRegistry(Options options) : options_(options) {}
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Registers a family. InvalidArgument for a name or label name the format does not allow
  // ([a-zA-Z_:][a-zA-Z0-9_:]*; labels [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__", no
  // duplicates, "le" not on histograms), a name already registered or reserved by the process
  // metrics, or histogram bounds that are not finite and strictly ascending. A family with no
  // label names has its single child created (and exposed) at once.
  Result<CounterFamily*> AddCounter(const std::string& name, const std::string& help,
                                    std::vector<std::string> label_names = {});
  Result<GaugeFamily*> AddGauge(const std::string& name, const std::string& help,
                                std::vector<std::string> label_names = {});
  Result<HistogramFamily*> AddHistogram(const std::string& name, const std::string& help,
                                        std::vector<std::string> label_names, std::vector<double> bounds);

  // Every family in registration order, then the process metrics, in text format 0.0.4
  // (Content-Type: text/plain; version=0.0.4; charset=utf-8).
  std::string Exposition() const;

 private:
  Status CheckNew(const std::string& name, const std::vector<std::string>& label_names, bool histogram) const;

  Options options_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<CounterFamily>> counters_;
  std::vector<std::unique_ptr<GaugeFamily>> gauges_;
  std::vector<std::unique_ptr<HistogramFamily>> histograms_;
  // Registration order: (type, index into the vector of that type).
  std::vector<std::pair<MetricType, size_t>> order_;
};

// The process metrics' exposition alone (what MetricsRegistry appends).
std::string ProcessMetricsExposition();

}  // namespace inferloop::serve
