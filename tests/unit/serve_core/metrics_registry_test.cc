#include "serve/metrics_registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <thread>

namespace inferloop::serve {
namespace {

// A sample of the text format, parsed back.
struct ParsedSample {
  std::string name;
  std::map<std::string, std::string> labels;  // unescaped
  std::string value;                          // as written
};
struct Parsed {
  std::map<std::string, std::string> help, type;  // by family name, help unescaped
  std::vector<ParsedSample> samples;
};

// A strict parser of the subset of format 0.0.4 the registry writes; fails the test on anything else.
Parsed Parse(const std::string& text) {
  Parsed p;
  EXPECT_TRUE(text.empty() || text.back() == '\n') << "no final newline";
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      std::string rest = line.substr(7);
      size_t sp = rest.find(' ');
      EXPECT_NE(sp, std::string::npos) << line;
      std::string name = rest.substr(0, sp), body = rest.substr(sp + 1);
      if (line[2] == 'T') {
        p.type[name] = body;
      } else {
        std::string help;
        for (size_t i = 0; i < body.size(); ++i) {
          if (body[i] == '\\' && i + 1 < body.size()) {
            help += body[i + 1] == 'n' ? '\n' : body[i + 1];
            ++i;
          } else {
            help += body[i];
          }
        }
        p.help[name] = help;
      }
      continue;
    }
    ParsedSample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') s.name += line[i++];
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (line.at(i) != '}') {
        std::string key;
        while (line.at(i) != '=') key += line[i++];
        ++i;
        EXPECT_EQ(line.at(i), '"') << line;
        ++i;
        std::string value;
        while (line.at(i) != '"') {
          if (line[i] == '\\') {
            char e = line.at(++i);
            EXPECT_TRUE(e == '\\' || e == '"' || e == 'n') << "bad escape in " << line;
            value += e == 'n' ? '\n' : e;
          } else {
            value += line[i];
          }
          ++i;
        }
        ++i;
        s.labels[key] = value;
        if (line.at(i) == ',') ++i;
      }
      ++i;
    }
    EXPECT_EQ(line.at(i), ' ') << line;
    s.value = line.substr(i + 1);
    EXPECT_EQ(s.value.find(' '), std::string::npos) << line;
    p.samples.push_back(s);
  }
  return p;
}

MetricsRegistry::Options NoProcess() {
  MetricsRegistry::Options o;
  o.process_metrics = false;
  return o;
}

TEST(MetricsRegistry, ExactExpositionOfASmallRegistry) {
  MetricsRegistry r(NoProcess());
  CounterFamily* requests = r.AddCounter("il_requests_total", "Requests received.", {"model", "version"}).value();
  GaugeFamily* inflight = r.AddGauge("il_inflight", "Requests in flight.\nPer server.").value();
  HistogramFamily* latency = r.AddHistogram("il_latency_seconds", "Latency \\ end to end.", {"model"}, {0.005, 0.1, 1}).value();

  Counter b1 = requests->WithLabels({"b", "1"}).value();
  Counter a2 = requests->WithLabels({"a", "2"}).value();
  b1.Increment();
  b1.Increment(2);
  a2.Increment(0.5);
  Gauge g = inflight->WithLabels({}).value();
  g.Set(7);
  g.Decrement(2);
  Histogram h = latency->WithLabels({"a"}).value();
  h.Observe(0.005);  // on a bound: counted in it (le is inclusive)
  h.Observe(0.05);
  h.Observe(3);
  h.Observe(NAN);  // ignored

  const std::string expected =
      "# HELP il_requests_total Requests received.\n"
      "# TYPE il_requests_total counter\n"
      "il_requests_total{model=\"a\",version=\"2\"} 0.5\n"
      "il_requests_total{model=\"b\",version=\"1\"} 3\n"
      "# HELP il_inflight Requests in flight.\\nPer server.\n"
      "# TYPE il_inflight gauge\n"
      "il_inflight 5\n"
      "# HELP il_latency_seconds Latency \\\\ end to end.\n"
      "# TYPE il_latency_seconds histogram\n"
      "il_latency_seconds_bucket{model=\"a\",le=\"0.005\"} 1\n"
      "il_latency_seconds_bucket{model=\"a\",le=\"0.1\"} 2\n"
      "il_latency_seconds_bucket{model=\"a\",le=\"1\"} 2\n"
      "il_latency_seconds_bucket{model=\"a\",le=\"+Inf\"} 3\n"
      "il_latency_seconds_sum{model=\"a\"} 3.055\n"
      "il_latency_seconds_count{model=\"a\"} 3\n";
  const std::string text = r.Exposition();
  EXPECT_EQ(text, expected);

  Parsed p = Parse(text);
  EXPECT_EQ(p.type["il_requests_total"], "counter");
  EXPECT_EQ(p.type["il_inflight"], "gauge");
  EXPECT_EQ(p.type["il_latency_seconds"], "histogram");
  EXPECT_EQ(p.help["il_inflight"], "Requests in flight.\nPer server.");
  EXPECT_EQ(p.help["il_latency_seconds"], "Latency \\ end to end.");
  ASSERT_EQ(p.samples.size(), 9u);
  EXPECT_EQ(p.samples[1].labels, (std::map<std::string, std::string>{{"model", "b"}, {"version", "1"}}));
  EXPECT_EQ(p.samples[6].labels.at("le"), "+Inf");
  EXPECT_EQ(h.Count(), 3u);
  EXPECT_DOUBLE_EQ(h.Sum(), 3.055);
}

TEST(MetricsRegistry, FamiliesWithoutLabelsAreExposedAtZero) {
  MetricsRegistry r(NoProcess());
  ASSERT_TRUE(r.AddCounter("c_total", "C.").ok());
  ASSERT_TRUE(r.AddHistogram("h", "H.", {}, {}).ok());
  EXPECT_EQ(r.Exposition(),
            "# HELP c_total C.\n# TYPE c_total counter\nc_total 0\n"
            "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n");
}

TEST(MetricsRegistry, LabelValuesAreEscapedAndParseBack) {
  MetricsRegistry r(NoProcess());
  GaugeFamily* f = r.AddGauge("g", "G.", {"path"}).value();
  const std::string nasty = "a\"b\\c\nd}e,f=g \xc3\xa9";
  f->WithLabels({nasty}).value().Set(1);
  f->WithLabels({""}).value().Set(2);
  const std::string text = r.Exposition();
  EXPECT_NE(text.find("g{path=\"a\\\"b\\\\c\\nd}e,f=g \xc3\xa9\"} 1\n"), std::string::npos) << text;
  Parsed p = Parse(text);
  ASSERT_EQ(p.samples.size(), 2u);
  EXPECT_EQ(p.samples[0].labels.at("path"), "");
  EXPECT_EQ(p.samples[1].labels.at("path"), nasty);
  EXPECT_EQ(EscapeLabelValue("x\"\\\n"), "x\\\"\\\\\\n");
  EXPECT_EQ(EscapeHelp("q\"\\\n"), "q\"\\\\\\n");
}

TEST(MetricsRegistry, ValuesFormatShortestAndSpecial) {
  EXPECT_EQ(FormatMetricValue(0), "0");
  EXPECT_EQ(FormatMetricValue(42), "42");
  EXPECT_EQ(FormatMetricValue(0.1), "0.1");
  EXPECT_EQ(FormatMetricValue(-2.5), "-2.5");
  EXPECT_EQ(FormatMetricValue(1e21), "1e+21");
  EXPECT_EQ(FormatMetricValue(INFINITY), "+Inf");
  EXPECT_EQ(FormatMetricValue(-INFINITY), "-Inf");
  EXPECT_EQ(FormatMetricValue(NAN), "NaN");
  EXPECT_EQ(std::stod(FormatMetricValue(1.0 / 3)), 1.0 / 3);
}

TEST(MetricsRegistry, ConcurrentUpdatesGiveExactTotals) {
  MetricsRegistry r(NoProcess());
  CounterFamily* c = r.AddCounter("c_total", "C.", {"t"}).value();
  HistogramFamily* h = r.AddHistogram("h", "H.", {}, {1, 2}).value();
  GaugeFamily* g = r.AddGauge("g", "G.").value();
  constexpr int kThreads = 8, kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Children created concurrently too: every thread gets the same shared child.
      Counter shared = c->WithLabels({"shared"}).value();
      Counter own = c->WithLabels({std::to_string(t)}).value();
      Histogram hist = h->WithLabels({}).value();
      Gauge gauge = g->WithLabels({}).value();
      for (int i = 0; i < kPerThread; ++i) {
        shared.Increment();
        own.Increment(2);
        hist.Observe(i % 3);  // 0, 1, 2
        gauge.Increment();
        gauge.Decrement();
        gauge.Increment();
        if (i % 1000 == 0) (void)r.Exposition();  // exposition while updating
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c->WithLabels({"shared"}).value().Value(), kThreads * kPerThread);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(c->WithLabels({std::to_string(t)}).value().Value(), 2 * kPerThread);
  Histogram hist = h->WithLabels({}).value();
  EXPECT_EQ(hist.Count(), static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(g->WithLabels({}).value().Value(), kThreads * kPerThread);
  // Per thread: i%3 over 0..19999 gives 6667 zeros, 6667 ones, 6666 twos.
  Parsed p = Parse(r.Exposition());
  std::map<std::string, std::string> buckets;
  for (const auto& s : p.samples) {
    if (s.name == "h_bucket") buckets[s.labels.at("le")] = s.value;
    if (s.name == "h_sum") {
      EXPECT_EQ(s.value, std::to_string(kThreads * (6667 + 2 * 6666)));
    }
    if (s.name == "h_count") {
      EXPECT_EQ(s.value, std::to_string(kThreads * kPerThread));
    }
  }
  EXPECT_EQ(buckets["1"], std::to_string(kThreads * (6667 + 6667)));
  EXPECT_EQ(buckets["2"], std::to_string(kThreads * kPerThread));
  EXPECT_EQ(buckets["+Inf"], std::to_string(kThreads * kPerThread));
}

TEST(MetricsRegistry, RemovalOfLabelSets) {
  MetricsRegistry r(NoProcess());
  CounterFamily* c = r.AddCounter("c_total", "C.", {"model", "version"}).value();
  Counter m1 = c->WithLabels({"m", "1"}).value();
  c->WithLabels({"m", "2"}).value().Increment();
  c->WithLabels({"other", "1"}).value().Increment(5);
  m1.Increment(3);

  EXPECT_TRUE(c->Remove({"other", "1"}));
  EXPECT_FALSE(c->Remove({"other", "1"}));
  EXPECT_EQ(r.Exposition(),
            "# HELP c_total C.\n# TYPE c_total counter\n"
            "c_total{model=\"m\",version=\"1\"} 3\nc_total{model=\"m\",version=\"2\"} 1\n");
  EXPECT_EQ(c->RemoveWhere("model", "m"), 2u);
  EXPECT_EQ(c->RemoveWhere("nosuchlabel", "m"), 0u);
  EXPECT_EQ(r.Exposition(), "# HELP c_total C.\n# TYPE c_total counter\n");
  // A kept handle still works, exposed nowhere; the label set asked again starts at zero.
  m1.Increment();
  EXPECT_EQ(m1.Value(), 4);
  EXPECT_EQ(c->WithLabels({"m", "1"}).value().Value(), 0);
}

TEST(MetricsRegistry, RegistrationErrors) {
  MetricsRegistry r;
  EXPECT_TRUE(r.AddCounter("ok_total", "x").ok());
  EXPECT_EQ(r.AddGauge("ok_total", "x").status().code(), StatusCode::kInvalidArgument);  // taken
  EXPECT_FALSE(r.AddCounter("1bad", "x").ok());
  EXPECT_FALSE(r.AddCounter("bad-name", "x").ok());
  EXPECT_FALSE(r.AddCounter("", "x").ok());
  EXPECT_TRUE(r.AddCounter("ns:sub_total", "x").ok());
  EXPECT_FALSE(r.AddGauge("g1", "x", {"__reserved"}).ok());
  EXPECT_FALSE(r.AddGauge("g2", "x", {"a:b"}).ok());
  EXPECT_FALSE(r.AddGauge("g3", "x", {"a", "a"}).ok());
  EXPECT_TRUE(r.AddGauge("g4", "x", {"le"}).ok());  // only histograms reserve le
  EXPECT_FALSE(r.AddHistogram("h1", "x", {"le"}, {1}).ok());
  EXPECT_FALSE(r.AddHistogram("h2", "x", {}, {1, 1}).ok());
  EXPECT_FALSE(r.AddHistogram("h3", "x", {}, {2, 1}).ok());
  EXPECT_FALSE(r.AddHistogram("h4", "x", {}, {1, INFINITY}).ok());
  EXPECT_FALSE(r.AddGauge("process_open_fds", "x").ok());
  auto f = r.AddCounter("two_total", "x", {"a", "b"}).value();
  auto child = f->WithLabels({"only one"});
  ASSERT_FALSE(child.ok());
  EXPECT_NE(child.status().message().find("has 2 label(s), got 1"), std::string::npos);
}

TEST(MetricsRegistry, CountersIgnoreNegativeAndNaN) {
  Counter c;  // detached
  c.Increment(2);
  c.Increment(-1);
  c.Increment(NAN);
  EXPECT_EQ(c.Value(), 2);
  Histogram h;
  h.Observe(1);
  EXPECT_EQ(h.Count(), 1u);
}

TEST(MetricsRegistry, ExponentialBuckets) {
  EXPECT_EQ(ExponentialBuckets(0.001, 2, 4), (std::vector<double>{0.001, 0.002, 0.004, 0.008}));
  EXPECT_TRUE(ExponentialBuckets(0, 2, 4).empty());
  EXPECT_TRUE(ExponentialBuckets(1, 1, 4).empty());
}

TEST(MetricsRegistry, ProcessMetricsFromProc) {
  MetricsRegistry r;
  ASSERT_TRUE(r.AddGauge("mine", "Mine.").ok());
  Parsed p = Parse(r.Exposition());
  std::map<std::string, double> v;
  for (const auto& s : p.samples) v[s.name] = std::stod(s.value);
  EXPECT_EQ(p.type["process_cpu_seconds_total"], "counter");
  EXPECT_EQ(p.type["process_resident_memory_bytes"], "gauge");
  ASSERT_TRUE(v.count("process_cpu_seconds_total"));
  EXPECT_GE(v["process_cpu_seconds_total"], 0);
  EXPECT_GT(v["process_resident_memory_bytes"], 1 << 20);  // a running gtest binary holds more than 1 MiB
  EXPECT_GE(v["process_virtual_memory_bytes"], v["process_resident_memory_bytes"]);
  // Started after 2020 and not in the future.
  EXPECT_GT(v["process_start_time_seconds"], 1577836800);
  EXPECT_LE(v["process_start_time_seconds"], static_cast<double>(std::time(nullptr)) + 1);
  EXPECT_GE(v["process_open_fds"], 3);  // stdin, stdout, stderr
  EXPECT_GE(v["process_max_fds"], v["process_open_fds"]);
  EXPECT_EQ(p.samples.front().name, "mine");  // registered families first
}

}  // namespace
}  // namespace inferloop::serve
