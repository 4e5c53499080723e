// The SVG latency-vs-throughput plot (src/perf/svg_plot.h): every document is parsed as XML by
// a small strict parser below (tag balance, quoted attributes, entities, one root), then checked
// for what a reader needs: each point's label, one line per percentile present, round ticks,
// the bound line, and numbers that are finite and on the canvas.
#include "perf/svg_plot.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace inferloop::perf {
namespace {

// ---- a minimal strict XML parser (enough for well-formedness and for reading the SVG back) ----

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // character data directly inside, entities decoded
  std::vector<std::unique_ptr<Element>> children;
  const Element* parent = nullptr;
};

class XmlParser {
 public:
  explicit XmlParser(const std::string& s) : s_(s) {}

  // The root element, or nullptr with error() saying what is wrong.
  std::unique_ptr<Element> Parse() {
    if (s_.compare(0, 5, "<?xml") == 0) {
      const size_t end = s_.find("?>");
      if (end == std::string::npos) return Fail("unterminated XML declaration");
      pos_ = end + 2;
    }
    SkipSpace();
    if (!Peek('<')) return Fail("no root element");
    auto root = ParseElement(nullptr);
    if (!root) return nullptr;
    SkipSpace();
    if (pos_ != s_.size()) return Fail("content after the root element");
    return root;
  }
  const std::string& error() const { return error_; }

 private:
  std::unique_ptr<Element> Fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at offset " + std::to_string(pos_);
    return nullptr;
  }
  bool Peek(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
  void SkipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  static bool NameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == ':' || c == '.';
  }
  std::string Name() {
    const size_t start = pos_;
    while (pos_ < s_.size() && NameChar(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  // Decodes an entity at pos_ ('&'); false if it is not one of XML's five or a character reference.
  bool Entity(std::string& out) {
    const size_t semi = s_.find(';', pos_);
    if (semi == std::string::npos || semi - pos_ > 10) return false;
    const std::string e = s_.substr(pos_ + 1, semi - pos_ - 1);
    static const std::map<std::string, std::string> kNamed = {
        {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}};
    if (auto it = kNamed.find(e); it != kNamed.end()) {
      out += it->second;
    } else if (e.size() > 1 && e[0] == '#') {
      out += "?";  // a character reference (the plot writes none, but it is legal)
    } else {
      return false;
    }
    pos_ = semi + 1;
    return true;
  }
  std::unique_ptr<Element> ParseElement(const Element* parent) {
    ++pos_;  // '<'
    auto el = std::make_unique<Element>();
    el->parent = parent;
    el->name = Name();
    if (el->name.empty()) return Fail("element without a name");
    for (;;) {
      SkipSpace();
      if (Peek('/')) {
        ++pos_;
        if (!Peek('>')) return Fail("'/' not followed by '>'");
        ++pos_;
        return el;
      }
      if (Peek('>')) {
        ++pos_;
        break;
      }
      const std::string attr = Name();
      if (attr.empty()) return Fail("bad attribute in <" + el->name + ">");
      SkipSpace();
      if (!Peek('=')) return Fail("attribute " + attr + " without '='");
      ++pos_;
      SkipSpace();
      if (!Peek('"') && !Peek('\'')) return Fail("attribute " + attr + " not quoted");
      const char q = s_[pos_++];
      std::string value;
      while (pos_ < s_.size() && s_[pos_] != q) {
        if (s_[pos_] == '<') return Fail("'<' in attribute " + attr);
        if (s_[pos_] == '&') {
          if (!Entity(value)) return Fail("bad entity in attribute " + attr);
        } else {
          value += s_[pos_++];
        }
      }
      if (pos_ >= s_.size()) return Fail("unterminated attribute " + attr);
      ++pos_;
      if (!el->attrs.emplace(attr, value).second) return Fail("duplicate attribute " + attr);
    }
    // Content.
    for (;;) {
      if (pos_ >= s_.size()) return Fail("<" + el->name + "> not closed");
      if (s_.compare(pos_, 4, "<!--") == 0) {
        const size_t end = s_.find("-->", pos_);
        if (end == std::string::npos) return Fail("unterminated comment");
        pos_ = end + 3;
      } else if (s_.compare(pos_, 2, "</") == 0) {
        pos_ += 2;
        const std::string name = Name();
        if (name != el->name) return Fail("</" + name + "> closes <" + el->name + ">");
        SkipSpace();
        if (!Peek('>')) return Fail("bad end tag");
        ++pos_;
        return el;
      } else if (Peek('<')) {
        auto child = ParseElement(el.get());
        if (!child) return nullptr;
        el->children.push_back(std::move(child));
      } else if (Peek('&')) {
        if (!Entity(el->text)) return Fail("bad entity in text");
      } else {
        const unsigned char c = s_[pos_];
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return Fail("control character in text");
        el->text += s_[pos_++];
      }
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string error_;
};

void Collect(const Element& e, const std::string& name, std::vector<const Element*>& out) {
  if (e.name == name) out.push_back(&e);
  for (const auto& c : e.children) Collect(*c, name, out);
}
std::vector<const Element*> All(const Element& root, const std::string& name) {
  std::vector<const Element*> out;
  Collect(root, name, out);
  return out;
}
std::vector<std::string> Texts(const Element& root) {
  std::vector<std::string> out;
  for (const Element* t : All(root, "text")) out.push_back(t->text);
  return out;
}
bool HasText(const Element& root, const std::string& text) {
  for (const std::string& t : Texts(root)) {
    if (t == text) return true;
  }
  return false;
}
std::vector<std::pair<double, double>> PolylinePoints(const Element& polyline) {
  std::vector<std::pair<double, double>> pts;
  std::istringstream in(polyline.attrs.at("points"));
  std::string pair;
  while (in >> pair) {
    const size_t comma = pair.find(',');
    pts.emplace_back(std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1)));
  }
  return pts;
}

// Parses, failing the test on malformed XML; checks what every plot must satisfy.
std::unique_ptr<Element> ParseSvg(const std::string& svg) {
  XmlParser p(svg);
  auto root = p.Parse();
  EXPECT_NE(root, nullptr) << p.error() << "\n" << svg;
  if (!root) return nullptr;
  EXPECT_EQ(root->name, "svg");
  EXPECT_EQ(root->attrs["xmlns"], "http://www.w3.org/2000/svg");
  // Self-contained: no scripts, no links, no external resources.
  EXPECT_TRUE(All(*root, "script").empty());
  EXPECT_EQ(svg.find("href"), std::string::npos);
  EXPECT_EQ(svg.find("url("), std::string::npos);
  EXPECT_EQ(svg.find("@import"), std::string::npos);
  // Every number in a coordinate attribute is finite and on the 960x600 canvas.
  for (const char* tag : {"line", "circle", "rect", "polygon", "polyline", "text"}) {
    for (const Element* e : All(*root, tag)) {
      for (const auto& [k, v] : e->attrs) {
        if (k != "x" && k != "y" && k != "x1" && k != "x2" && k != "y1" && k != "y2" && k != "cx" && k != "cy" &&
            k != "points")
          continue;
        std::string nums = v;
        for (char& c : nums) c = c == ',' ? ' ' : c;
        std::istringstream in(nums);
        double d;
        int n = 0;
        while (in >> d) {
          ++n;
          EXPECT_TRUE(std::isfinite(d)) << tag << " " << k << "=" << v;
          EXPECT_GE(d, 0) << tag << " " << k << "=" << v;
          EXPECT_LE(d, 960) << tag << " " << k << "=" << v;
        }
        EXPECT_TRUE(in.eof()) << tag << " " << k << "=\"" << v << "\" is not numbers";
        EXPECT_GT(n, 0) << tag << " " << k;
      }
    }
  }
  for (const Element* t : All(*root, "text")) {
    EXPECT_EQ(t->text.find("nan"), std::string::npos) << t->text;
    EXPECT_TRUE(t->text.find("inf") == std::string::npos || t->text.find("inferences") != std::string::npos) << t->text;
  }
  return root;
}

// ---- test data ----

PerfResult Point(double load, double tput, double p50_ms, LoadMode mode = LoadMode::kConcurrency) {
  PerfResult r;
  r.mode = mode;
  r.load = load;
  r.throughput_infer_per_s = tput;
  r.throughput_req_per_s = tput;
  r.completed = 1000;
  r.latency_p50_us = p50_ms * 1000;
  r.latency_p90_us = p50_ms * 1300;
  r.latency_p95_us = p50_ms * 1400;
  r.latency_p99_us = p50_ms * 1700;
  r.latency_p999_us = p50_ms * 2200;
  r.latency_avg_us = p50_ms * 1100;
  return r;
}

std::vector<PerfResult> Sweep() {
  return {Point(1, 410, 2.4), Point(2, 790, 2.5), Point(4, 1450, 2.8), Point(8, 2100, 3.8), Point(16, 2300, 6.9),
          Point(32, 2340, 13.6)};
}

// Every polyline (the percentile lines; nothing else in the plot is one).
std::vector<const Element*> Lines(const Element& root) { return All(root, "polyline"); }

// The group a percentile is drawn in (<g class="series-p90">), or nullptr.
const Element* SeriesGroup(const Element& root, const std::string& name) {
  for (const Element* g : All(root, "g")) {
    auto it = g->attrs.find("class");
    if (it != g->attrs.end() && it->second == "series-" + name) return g;
  }
  return nullptr;
}
size_t Markers(const Element& group) {
  return All(group, "circle").size() + All(group, "rect").size() + All(group, "polygon").size();
}
// Points per polyline of a percentile's group (one entry per unbroken stretch of line).
std::vector<size_t> Segments(const Element& group) {
  std::vector<size_t> out;
  for (const Element* l : All(group, "polyline")) out.push_back(PolylinePoints(*l).size());
  return out;
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- tests ----

TEST(SvgPlot, SweepHasEveryLabelLineLegendAxisAndTitle) {
  const std::string svg = RenderPerfPlotSvg(Sweep(), "resnet50 over REST");
  auto root = ParseSvg(svg);
  ASSERT_NE(root, nullptr);
  for (const char* label : {"c=1", "c=2", "c=4", "c=8", "c=16", "c=32"}) EXPECT_TRUE(HasText(*root, label)) << label;
  for (const char* legend : {"p50", "p90", "p99", "p99.9"}) EXPECT_TRUE(HasText(*root, legend)) << legend;
  EXPECT_TRUE(HasText(*root, "resnet50 over REST"));
  EXPECT_TRUE(HasText(*root, "Throughput (inferences/s)"));
  EXPECT_TRUE(HasText(*root, "Latency (ms)"));
  ASSERT_EQ(All(*root, "title").size(), 1u);
  EXPECT_EQ(All(*root, "title")[0]->text, "resnet50 over REST");
  const auto lines = Lines(*root);
  ASSERT_EQ(lines.size(), 4u);
  std::set<std::string> colours;
  for (const Element* l : lines) {
    EXPECT_EQ(PolylinePoints(*l).size(), 6u);
    colours.insert(l->attrs.at("stroke"));
  }
  EXPECT_EQ(colours.size(), 4u) << "one colour per percentile";
  // Higher percentiles are drawn higher (smaller y) at every point.
  for (size_t i = 0; i < 6; ++i) {
    for (size_t k = 1; k < 4; ++k) EXPECT_LT(PolylinePoints(*lines[k])[i].second, PolylinePoints(*lines[k - 1])[i].second);
  }
  // No bound line without a bound.
  EXPECT_EQ(svg.find("stroke-dasharray"), std::string::npos);
}

TEST(SvgPlot, TicksAreRoundNumbersCoveringTheData) {
  // Throughput up to 2340 and p99.9 up to 13.6 * 2.2 = 29.9 ms.
  auto root = ParseSvg(RenderPerfPlotSvg(Sweep(), "t"));
  ASSERT_NE(root, nullptr);
  const auto texts = Texts(*root);
  // x: 0, 500, ..., 2500 (steps of 1, 2, 2.5 or 5 times a power of ten, 4 to 8 of them).
  for (const char* t : {"0", "500", "1000", "1500", "2000", "2500"}) EXPECT_TRUE(HasText(*root, t)) << t;
  EXPECT_FALSE(HasText(*root, "3000"));
  // y: 0, 5, ..., 35 ms.
  for (const char* t : {"5", "10", "15", "20", "25", "30", "35"}) EXPECT_TRUE(HasText(*root, t)) << t;
  EXPECT_FALSE(HasText(*root, "40"));
  // Grid: one line per tick above 0 on each axis.
  int grid = 0;
  for (const Element* l : All(*root, "line")) grid += l->parent && l->parent->attrs.count("stroke") ? 1 : 0;
  EXPECT_EQ(grid, 5 + 7);
}

TEST(SvgPlot, RequestRateLabelsAndLoadOrder) {
  std::vector<PerfResult> pts = {Point(400, 395, 4.0, LoadMode::kRequestRate),
                                 Point(12.5, 12.5, 2.0, LoadMode::kRequestRate),
                                 Point(100, 99, 2.2, LoadMode::kRequestRate)};
  auto root = ParseSvg(RenderPerfPlotSvg(pts, "open loop"));
  ASSERT_NE(root, nullptr);
  for (const char* label : {"r=12.5/s", "r=100/s", "r=400/s"}) EXPECT_TRUE(HasText(*root, label)) << label;
  // Joined in load order, not input order: x increases along the p50 line here.
  const auto p50 = PolylinePoints(*Lines(*root)[0]);
  ASSERT_EQ(p50.size(), 3u);
  EXPECT_LT(p50[0].first, p50[1].first);
  EXPECT_LT(p50[1].first, p50[2].first);
}

TEST(SvgPlot, OnePoint) {
  auto root = ParseSvg(RenderPerfPlotSvg({Point(1, 1234.5, 0.8)}, "one"));
  ASSERT_NE(root, nullptr);
  EXPECT_TRUE(HasText(*root, "c=1"));
  for (const char* name : {"p50", "p90", "p99", "p99.9"}) {
    const Element* g = SeriesGroup(*root, name);
    ASSERT_NE(g, nullptr) << name;
    EXPECT_EQ(Markers(*g), 1u) << name;
    EXPECT_TRUE(Segments(*g).empty()) << name << ": one point is a marker, not a line";
  }
}

TEST(SvgPlot, EqualValuesAndZeroThroughput) {
  std::vector<PerfResult> same = {Point(1, 500, 2), Point(2, 500, 2), Point(4, 500, 2)};
  for (auto& p : same) p.latency_p90_us = p.latency_p99_us = p.latency_p999_us = p.latency_p50_us;
  auto root = ParseSvg(RenderPerfPlotSvg(same, "flat"));
  ASSERT_NE(root, nullptr);
  for (const char* label : {"c=1", "c=2", "c=4"}) EXPECT_TRUE(HasText(*root, label));
  // Throughput 0 (a point that finished requests too slowly to count) still plots at x = 0.
  root = ParseSvg(RenderPerfPlotSvg({Point(1, 0, 2), Point(2, 0, 2)}, "zero"));
  ASSERT_NE(root, nullptr);
  EXPECT_TRUE(HasText(*root, "c=2"));
}

TEST(SvgPlot, LabelsOfPointsOnTopOfEachOtherDoNotOverlap) {
  // Past saturation: the same throughput and nearly the same latency at every load.
  std::vector<PerfResult> pts;
  for (int c : {8, 16, 32, 64, 128}) pts.push_back(Point(c, 1000, 10 + c * 0.001));
  auto root = ParseSvg(RenderPerfPlotSvg(pts, "saturated"));
  ASSERT_NE(root, nullptr);
  std::set<std::string> ys;
  int labels = 0;
  for (const Element* t : All(*root, "text")) {
    if (t->text.rfind("c=", 0) == 0) {
      ++labels;
      ys.insert(t->attrs.at("y"));
    }
  }
  EXPECT_EQ(labels, 5);
  EXPECT_EQ(ys.size(), 5u) << "each label on its own line";
}

TEST(SvgPlot, HugeAndTinyValues) {
  // A trillion inferences/s at a billion ms: ticks with a k/M/G suffix, no long digit strings.
  auto root = ParseSvg(RenderPerfPlotSvg({Point(1, 1e12, 1e9), Point(2, 2e12, 2e9)}, "huge"));
  ASSERT_NE(root, nullptr);
  for (const std::string& t : Texts(*root)) {
    if (std::isdigit(static_cast<unsigned char>(t[0]))) {
      EXPECT_LE(t.size(), 6u) << "tick label " << t;
    }
  }
  EXPECT_TRUE(HasText(*root, "2000G")) << "x ticks in G";
  // Nanoseconds of a millisecond: powers of ten in the tick labels.
  root = ParseSvg(RenderPerfPlotSvg({Point(1, 1e-6, 1e-9)}, "tiny"));
  ASSERT_NE(root, nullptr);
  bool exp_label = false;
  for (const std::string& t : Texts(*root)) exp_label = exp_label || t.find("e-9") != std::string::npos;
  EXPECT_TRUE(exp_label);
  // At the edge of double's range nothing overflows into inf/nan.
  ASSERT_NE(ParseSvg(RenderPerfPlotSvg({Point(1, 1.7e308, 1.7e305)}, "edge")), nullptr);
  ASSERT_NE(ParseSvg(RenderPerfPlotSvg({Point(1, 4.9e-324, 4.9e-321)}, "denormal")), nullptr);
  ASSERT_NE(ParseSvg(RenderPerfPlotSvg({Point(1e15, 10, 1)}, "huge load")), nullptr);
}

TEST(SvgPlot, AbsentPercentilesAreSkippedNotDrawn) {
  auto pts = Sweep();
  for (auto& p : pts) p.latency_p999_us = 0;  // not measured
  pts[2].latency_p90_us = kNaN;
  auto root = ParseSvg(RenderPerfPlotSvg(pts, "no p99.9"));
  ASSERT_NE(root, nullptr);
  EXPECT_FALSE(HasText(*root, "p99.9")) << "no legend entry for a line not drawn";
  EXPECT_EQ(SeriesGroup(*root, "p99.9"), nullptr);
  ASSERT_NE(SeriesGroup(*root, "p90"), nullptr);
  EXPECT_EQ(Segments(*SeriesGroup(*root, "p50")), (std::vector<size_t>{6}));
  EXPECT_EQ(Segments(*SeriesGroup(*root, "p99")), (std::vector<size_t>{6}));
  // p90's line breaks at its NaN (points 0-1 and 3-5), no marker there.
  EXPECT_EQ(Segments(*SeriesGroup(*root, "p90")), (std::vector<size_t>{2, 3}));
  EXPECT_EQ(Markers(*SeriesGroup(*root, "p90")), 5u);
  // A gap of one point at the end leaves a lone marker.
  pts[5].latency_p90_us = kNaN;
  root = ParseSvg(RenderPerfPlotSvg(pts, "gap at the end"));
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(Segments(*SeriesGroup(*root, "p90")), (std::vector<size_t>{2, 2}));
  pts[1].latency_p90_us = kNaN;
  root = ParseSvg(RenderPerfPlotSvg(pts, "lone points"));
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(Segments(*SeriesGroup(*root, "p90")), (std::vector<size_t>{2}));
  EXPECT_EQ(Markers(*SeriesGroup(*root, "p90")), 3u);

  // A point without a successful request, and one with a NaN throughput, are not drawn.
  pts = Sweep();
  pts[1].completed = 0;
  pts[3].throughput_infer_per_s = kNaN;
  pts[4].latency_p50_us = pts[4].latency_p90_us = pts[4].latency_p99_us = pts[4].latency_p999_us = kNaN;
  root = ParseSvg(RenderPerfPlotSvg(pts, "gaps"));
  ASSERT_NE(root, nullptr);
  EXPECT_TRUE(HasText(*root, "c=1"));
  EXPECT_FALSE(HasText(*root, "c=2"));
  EXPECT_FALSE(HasText(*root, "c=8"));
  EXPECT_FALSE(HasText(*root, "c=16"));
  for (const Element* l : Lines(*root)) EXPECT_EQ(PolylinePoints(*l).size(), 3u);
  bool says = false;
  for (const std::string& t : Texts(*root)) says = says || t.find("3 point(s) without") != std::string::npos;
  EXPECT_TRUE(says);

  // Nothing at all to draw: still a valid image, saying so.
  for (const auto& none : {std::vector<PerfResult>{}, std::vector<PerfResult>{PerfResult{}}}) {
    root = ParseSvg(RenderPerfPlotSvg(none, "empty", 10));
    ASSERT_NE(root, nullptr);
    EXPECT_TRUE(Lines(*root).empty());
    EXPECT_TRUE(HasText(*root, "no load point with a successful request: nothing to plot"));
  }
}

TEST(SvgPlot, TextIsEscaped) {
  const std::string title = "<b>\"R&D\" 'model'</b> \xC3\xA9\x01 \xFF end";
  const std::string svg = RenderPerfPlotSvg(Sweep(), title);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  auto root = ParseSvg(svg);
  ASSERT_NE(root, nullptr);
  // Specials round-trip; the control character and the invalid byte become U+FFFD.
  const std::string want = "<b>\"R&D\" 'model'</b> \xC3\xA9\xEF\xBF\xBD \xEF\xBF\xBD end";
  EXPECT_TRUE(HasText(*root, want));
  EXPECT_EQ(All(*root, "title")[0]->text, want);
}

TEST(SvgPlot, LatencyBoundIsADashedLineWithinTheAxis) {
  // A bound above every point: the y axis grows to show it.
  const std::string svg = RenderPerfPlotSvg(Sweep(), "bound", 50);
  auto root = ParseSvg(svg);
  ASSERT_NE(root, nullptr);
  EXPECT_TRUE(HasText(*root, "latency bound 50 ms"));
  EXPECT_TRUE(HasText(*root, "latency bound"));  // legend
  const Element* bound = nullptr;
  for (const Element* l : All(*root, "line")) {
    if (l->attrs.count("stroke-dasharray") && l->attrs.at("x2") != l->attrs.at("x1")) {
      if (!bound || std::stod(l->attrs.at("x2")) - std::stod(l->attrs.at("x1")) >
                        std::stod(bound->attrs.at("x2")) - std::stod(bound->attrs.at("x1")))
        bound = l;
    }
  }
  ASSERT_NE(bound, nullptr);
  EXPECT_EQ(bound->attrs.at("y1"), bound->attrs.at("y2"));
  const double y = std::stod(bound->attrs.at("y1"));
  // Above every marker (higher latency), inside the plot area.
  for (const Element* l : Lines(*root)) {
    for (const auto& [px, py] : PolylinePoints(*l)) EXPECT_LT(y, py);
  }
  EXPECT_TRUE(HasText(*root, "50"));  // a tick reaches the bound
  // A bound of 0, negative or NaN draws nothing.
  for (double b : {0.0, -5.0, kNaN}) EXPECT_EQ(RenderPerfPlotSvg(Sweep(), "b", b).find("stroke-dasharray"), std::string::npos);
}

// A second opinion on well-formedness from a full XML parser (Python's), on the hard cases.
TEST(SvgPlot, PythonsXmlParserReadsEveryPlot) {
  const char* python = "/usr/bin/python3";
  if (::access(python, X_OK) != 0) GTEST_SKIP() << python << " not found";
  const auto dir = std::filesystem::temp_directory_path() / ("svg_plot_py_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto gaps = Sweep();
  gaps[2].latency_p90_us = kNaN;
  gaps[1].completed = 0;
  const std::vector<std::pair<std::vector<PerfResult>, std::string>> cases = {
      {Sweep(), "sweep"},
      {Sweep(), "<b>\"R&D\" 'x'</b> \xC3\xA9\x01\xFF]]> &amp;"},
      {{}, "empty"},
      {{Point(1, 1e12, 1e9)}, "huge"},
      {{Point(1, 1e-6, 1e-9)}, "tiny"},
      {gaps, "gaps"},
  };
  std::string cmd = std::string(python) +
                    " -c 'import sys, xml.etree.ElementTree as E; [E.parse(f) for f in sys.argv[1:]]'";
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = (dir / ("plot" + std::to_string(i) + ".svg")).string();
    ASSERT_TRUE(WritePerfPlotSvg(cases[i].first, cases[i].second, path, i % 2 ? 5.0 : 0.0).ok());
    cmd += " " + path;
  }
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::filesystem::remove_all(dir);
}

TEST(SvgPlot, WritesTheFileOrSaysWhyNot) {
  const auto dir = std::filesystem::temp_directory_path() / ("svg_plot_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "plot.svg").string();
  ASSERT_TRUE(WritePerfPlotSvg(Sweep(), "file", path, 20).ok());
  std::ifstream f(path, std::ios::binary);
  std::stringstream got;
  got << f.rdbuf();
  EXPECT_EQ(got.str(), RenderPerfPlotSvg(Sweep(), "file", 20));

  Status st = WritePerfPlotSvg(Sweep(), "x", (dir / "no_such_dir" / "plot.svg").string());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no_such_dir/plot.svg"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("No such file or directory"), std::string::npos) << st.message();
  st = WritePerfPlotSvg(Sweep(), "x", dir.string());  // a directory
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot write the plot to"), std::string::npos) << st.message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace inferloop::perf
