#include "serve/metrics_registry.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "base/c_locale_number.h"
#include "base/status_macros.h"

namespace inferloop::serve {

namespace metrics_internal {
HistogramCell::HistogramCell(std::shared_ptr<const std::vector<double>> b)
    : bounds(std::move(b)), counts(std::make_unique<std::atomic<uint64_t>[]>(bounds->size() + 1)) {}
}  // namespace metrics_internal

namespace {

void AtomicAdd(std::atomic<double>& a, double v) { a.fetch_add(v, std::memory_order_relaxed); }

bool IsMetricName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool IsLabelName(std::string_view s) {
  if (s.empty() || s.substr(0, 2) == "__") return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// {a="x",b="y"} with `extra` (already formatted, e.g. le="0.5") last; "" when there is no label.
std::string LabelBlock(const std::vector<std::string>& names, const std::vector<std::string>& values,
                       const std::string& extra = "") {
  if (names.empty() && extra.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    out += names[i];
    out += "=\"";
    out += EscapeLabelValue(values[i]);
    out += '"';
  }
  if (!extra.empty()) {
    if (!names.empty()) out += ',';
    out += extra;
  }
  out += '}';
  return out;
}

void Header(std::string* out, const std::string& name, const std::string& help, const char* type) {
  *out += "# HELP " + name + " " + EscapeHelp(help) + "\n";
  *out += "# TYPE " + name + " " + type + "\n";
}

void Sample(std::string* out, const std::string& name, const std::string& labels, double value) {
  *out += name;
  *out += labels;
  *out += ' ';
  *out += FormatMetricValue(value);
  *out += '\n';
}

// The fields of /proc/self/stat after the command name (field 3, "state", is index 0).
std::vector<std::string> ProcStatFields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  size_t close = line.rfind(')');  // the command name may hold spaces and parentheses
  std::vector<std::string> fields;
  if (close == std::string::npos) return fields;
  std::istringstream rest(line.substr(close + 1));
  std::string f;
  while (rest >> f) fields.push_back(f);
  return fields;
}

double BootTimeSeconds() {
  std::ifstream in("/proc/stat");
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime") {
      in >> value;
      return value;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

}  // namespace

// --- handles ---

Counter::Counter() : cell_(std::make_shared<Cell>()) {}
void Counter::Increment(double v) {
  if (!(v >= 0)) return;  // negative or NaN
  AtomicAdd(cell_->value, v);
}
double Counter::Value() const { return cell_->value.load(std::memory_order_relaxed); }

Gauge::Gauge() : cell_(std::make_shared<Cell>()) {}
void Gauge::Set(double v) { cell_->value.store(v, std::memory_order_relaxed); }
void Gauge::Add(double v) { AtomicAdd(cell_->value, v); }
double Gauge::Value() const { return cell_->value.load(std::memory_order_relaxed); }

Histogram::Histogram() : cell_(std::make_shared<Cell>(std::make_shared<const std::vector<double>>())) {}
void Histogram::Observe(double v) {
  if (std::isnan(v)) return;
  const std::vector<double>& b = *cell_->bounds;
  size_t i = static_cast<size_t>(std::lower_bound(b.begin(), b.end(), v) - b.begin());  // first bound >= v
  cell_->counts[i].fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(cell_->sum, v);
}
uint64_t Histogram::Count() const {
  uint64_t n = 0;
  for (size_t i = 0; i <= cell_->bounds->size(); ++i) n += cell_->counts[i].load(std::memory_order_relaxed);
  return n;
}
double Histogram::Sum() const { return cell_->sum.load(std::memory_order_relaxed); }

// --- families ---

template <typename Handle>
MetricFamily<Handle>::MetricFamily(std::string name, std::string help, std::vector<std::string> label_names,
                                   std::shared_ptr<const std::vector<double>> bounds)
    : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)), bounds_(std::move(bounds)) {}

template <typename Handle>
Result<Handle> MetricFamily<Handle>::WithLabels(const std::vector<std::string>& values) {
  if (values.size() != label_names_.size()) {
    return Status::InvalidArgument("metric " + name_ + " has " + std::to_string(label_names_.size()) +
                                   " label(s), got " + std::to_string(values.size()) + " value(s)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Cell>& cell = children_[values];
  if (!cell) {
    if constexpr (std::is_same_v<Handle, Histogram>) {
      cell = std::make_shared<Cell>(bounds_);
    } else {
      cell = std::make_shared<Cell>();
    }
  }
  return Handle(cell);
}

template <typename Handle>
bool MetricFamily<Handle>::Remove(const std::vector<std::string>& values) {
  std::lock_guard<std::mutex> lock(mu_);
  return children_.erase(values) > 0;
}

template <typename Handle>
size_t MetricFamily<Handle>::RemoveWhere(std::string_view label, std::string_view value) {
  auto it = std::find(label_names_.begin(), label_names_.end(), label);
  if (it == label_names_.end()) return 0;
  const size_t index = static_cast<size_t>(it - label_names_.begin());
  std::lock_guard<std::mutex> lock(mu_);
  return std::erase_if(children_, [&](const auto& child) { return child.first[index] == value; });
}

template <typename Handle>
void MetricFamily<Handle>::Expose(std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if constexpr (std::is_same_v<Handle, Counter>) {
    Header(out, name_, help_, "counter");
    for (const auto& [values, cell] : children_) {
      Sample(out, name_, LabelBlock(label_names_, values), cell->value.load(std::memory_order_relaxed));
    }
  } else if constexpr (std::is_same_v<Handle, Gauge>) {
    Header(out, name_, help_, "gauge");
    for (const auto& [values, cell] : children_) {
      Sample(out, name_, LabelBlock(label_names_, values), cell->value.load(std::memory_order_relaxed));
    }
  } else {
    Header(out, name_, help_, "histogram");
    const std::vector<double>& bounds = *bounds_;
    for (const auto& [values, cell] : children_) {
      // Cumulative counts; _count is the +Inf bucket, so the two always agree.
      uint64_t cumulative = 0;
      for (size_t i = 0; i <= bounds.size(); ++i) {
        cumulative += cell->counts[i].load(std::memory_order_relaxed);
        std::string le = "le=\"" + (i < bounds.size() ? FormatMetricValue(bounds[i]) : std::string("+Inf")) + "\"";
        Sample(out, name_ + "_bucket", LabelBlock(label_names_, values, le), static_cast<double>(cumulative));
      }
      std::string labels = LabelBlock(label_names_, values);
      Sample(out, name_ + "_sum", labels, cell->sum.load(std::memory_order_relaxed));
      Sample(out, name_ + "_count", labels, static_cast<double>(cumulative));
    }
  }
}

template class MetricFamily<Counter>;
template class MetricFamily<Gauge>;
template class MetricFamily<Histogram>;

// --- formatting ---

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  if (!(start > 0) || !(factor > 1)) return out;
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) out.push_back(v);
  return out;
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string EscapeHelp(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string FormatMetricValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

// --- registry ---

namespace {
const std::set<std::string>& ProcessMetricNames() {
  static const std::set<std::string> kNames = {"process_cpu_seconds_total", "process_resident_memory_bytes",
                                               "process_virtual_memory_bytes", "process_start_time_seconds",
                                               "process_open_fds", "process_max_fds"};
  return kNames;
}
}  // namespace

Status MetricsRegistry::CheckNew(const std::string& name, const std::vector<std::string>& label_names,
                                 bool histogram) const {
  if (!IsMetricName(name)) return Status::InvalidArgument("invalid metric name '" + name + "'");
  std::set<std::string> seen;
  for (const std::string& l : label_names) {
    if (!IsLabelName(l)) return Status::InvalidArgument("invalid label name '" + l + "' of metric " + name);
    if (histogram && l == "le") return Status::InvalidArgument("histogram " + name + " cannot have a label 'le'");
    if (!seen.insert(l).second) return Status::InvalidArgument("duplicate label '" + l + "' of metric " + name);
  }
  if (options_.process_metrics && ProcessMetricNames().count(name)) {
    return Status::InvalidArgument("metric name " + name + " is reserved for the process metrics");
  }
  auto taken = [&](const auto& families) {
    return std::any_of(families.begin(), families.end(), [&](const auto& f) { return f->name() == name; });
  };
  if (taken(counters_) || taken(gauges_) || taken(histograms_)) {
    return Status::InvalidArgument("metric " + name + " is already registered");
  }
  return Status::Ok();
}

Result<CounterFamily*> MetricsRegistry::AddCounter(const std::string& name, const std::string& help,
                                                   std::vector<std::string> label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  IL_RETURN_IF_ERROR(CheckNew(name, label_names, false));
  counters_.push_back(std::make_unique<CounterFamily>(name, help, std::move(label_names), nullptr));
  order_.emplace_back(MetricType::kCounter, counters_.size() - 1);
  CounterFamily* family = counters_.back().get();
  if (family->label_names().empty()) (void)family->WithLabels({});
  return family;
}

Result<GaugeFamily*> MetricsRegistry::AddGauge(const std::string& name, const std::string& help,
                                               std::vector<std::string> label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  IL_RETURN_IF_ERROR(CheckNew(name, label_names, false));
  gauges_.push_back(std::make_unique<GaugeFamily>(name, help, std::move(label_names), nullptr));
  order_.emplace_back(MetricType::kGauge, gauges_.size() - 1);
  GaugeFamily* family = gauges_.back().get();
  if (family->label_names().empty()) (void)family->WithLabels({});
  return family;
}

Result<HistogramFamily*> MetricsRegistry::AddHistogram(const std::string& name, const std::string& help,
                                                       std::vector<std::string> label_names,
                                                       std::vector<double> bounds) {
  std::lock_guard<std::mutex> lock(mu_);
  IL_RETURN_IF_ERROR(CheckNew(name, label_names, true));
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1]))) {
      return Status::InvalidArgument("histogram " + name + ": bucket bounds must be finite and strictly ascending");
    }
  }
  auto shared_bounds = std::make_shared<const std::vector<double>>(std::move(bounds));
  histograms_.push_back(std::make_unique<HistogramFamily>(name, help, std::move(label_names), shared_bounds));
  order_.emplace_back(MetricType::kHistogram, histograms_.size() - 1);
  HistogramFamily* family = histograms_.back().get();
  if (family->label_names().empty()) (void)family->WithLabels({});
  return family;
}

std::string MetricsRegistry::Exposition() const {
  std::string out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [type, index] : order_) {
      switch (type) {
        case MetricType::kCounter: counters_[index]->Expose(&out); break;
        case MetricType::kGauge: gauges_[index]->Expose(&out); break;
        case MetricType::kHistogram: histograms_[index]->Expose(&out); break;
      }
    }
  }
  if (options_.process_metrics) out += ProcessMetricsExposition();
  return out;
}

std::string ProcessMetricsExposition() {
  std::string out;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  std::vector<std::string> f = ProcStatFields();
  // Fields (man 5 proc), numbered from 1: utime 14, stime 15, starttime 22, vsize 23, rss 24;
  // here index = number - 3.
  auto field = [&](size_t number) -> double {
    size_t i = number - 3;
    return i < f.size() ? StrtodC(f[i].c_str(), nullptr) : 0.0;
  };
  if (f.size() >= 22 && ticks > 0) {
    Header(&out, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter");
    Sample(&out, "process_cpu_seconds_total", "", (field(14) + field(15)) / ticks);
    Header(&out, "process_resident_memory_bytes", "Resident memory size in bytes.", "gauge");
    Sample(&out, "process_resident_memory_bytes", "", field(24) * page);
    Header(&out, "process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge");
    Sample(&out, "process_virtual_memory_bytes", "", field(23));
    Header(&out, "process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge");
    Sample(&out, "process_start_time_seconds", "", BootTimeSeconds() + field(22) / ticks);
  }
  if (DIR* dir = opendir("/proc/self/fd")) {
    double fds = 0;
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') ++fds;
    }
    closedir(dir);
    Header(&out, "process_open_fds", "Number of open file descriptors.", "gauge");
    Sample(&out, "process_open_fds", "", fds - 1);  // not counting the descriptor of the listing itself
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    Header(&out, "process_max_fds", "Maximum number of open file descriptors.", "gauge");
    Sample(&out, "process_max_fds", "", limit.rlim_cur == RLIM_INFINITY ? INFINITY : static_cast<double>(limit.rlim_cur));
  }
  return out;
}

}  // namespace inferloop::serve
