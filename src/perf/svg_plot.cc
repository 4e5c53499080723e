#include "perf/svg_plot.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/utf8.h"

namespace inferloop::perf {
namespace {

// Canvas and plot area, in SVG user units (pixels at 100%).
constexpr double kWidth = 960;
constexpr double kHeight = 600;
constexpr double kPlotLeft = 96;
constexpr double kPlotRight = 760;  // the legend sits to the right of this
constexpr double kPlotTop = 78;
constexpr double kPlotBottom = 520;
constexpr const char* kFont = "DejaVu Sans, Helvetica, Arial, sans-serif";
// A white outline under text, so labels stay readable where they cross a line or the grid.
constexpr const char* kHalo = " stroke=\"white\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\"";

enum class Marker { kCircle, kSquare, kTriangle, kDiamond };

struct Series {
  const char* name;
  double PerfResult::*field;  // microseconds
  const char* color;
  Marker marker;
};

// Colour-blind-safe (Okabe-Ito) colours, and a different marker shape per line.
const Series kSeries[] = {
    {"p50", &PerfResult::latency_p50_us, "#0072B2", Marker::kCircle},
    {"p90", &PerfResult::latency_p90_us, "#009E73", Marker::kSquare},
    {"p99", &PerfResult::latency_p99_us, "#E69F00", Marker::kTriangle},
    {"p99.9", &PerfResult::latency_p999_us, "#D55E00", Marker::kDiamond},
};

std::string Printf(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// A coordinate: one decimal is finer than a screen pixel.
std::string Num(double v) { return Printf("%.1f", v); }

// Text and attribute content: the five XML specials as entities; bytes that are not valid UTF-8
// and characters XML 1.0 forbids (controls other than tab/newline, U+FFFE, U+FFFF) become U+FFFD.
std::string XmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 16);
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    uint32_t cp = 0;
    size_t len = 0;
    uint32_t min = 0;
    if (c < 0x80) {
      cp = c, len = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F, len = 2, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F, len = 3, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07, len = 4, min = 0x10000;
    }
    bool valid = len > 0 && i + len <= n;
    for (size_t k = 1; valid && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) valid = false;
      else cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (valid && len > 1) {
      valid = cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) && cp != 0xFFFE && cp != 0xFFFF;
    }
    if (valid && cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') valid = false;
    if (!valid) {
      AppendUtf8(out, 0xFFFD);
      i += 1;  // resynchronise on the next byte
      continue;
    }
    switch (cp) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out.append(s, i, len);
    }
    i += len;
  }
  return out;
}

// A linear axis from 0 to `hi` in `count` steps of `step`, step being 1, 2, 2.5 or 5 times a
// power of ten, so tick labels are round numbers.
struct Axis {
  double hi = 1;
  double step = 0.2;
  int count = 5;
  double Frac(double v) const { return hi > 0 ? v / hi : 0; }
};

// `headroom` > 1 leaves space above the highest value (for the labels over the top markers).
// Values below 1e-300 (nothing real) give 0..1, as zero does.
Axis NiceAxis(double max_value, double headroom) {
  Axis a;
  if (!(max_value >= 1e-300) || !std::isfinite(max_value)) return a;
  double target = max_value * headroom;
  if (!std::isfinite(target)) target = max_value;
  // Of the round steps near target/6, the one giving closest to 6 intervals (4 to 8).
  const double base = std::floor(std::log10(target / 6));
  double best_step = 0, best_count = 0;
  for (double e = base - 1; e <= base + 1; ++e) {
    for (double f : {1.0, 2.0, 2.5, 5.0}) {
      const double step = f * std::pow(10.0, e);
      const double count = std::ceil(target / step * (1 - 1e-12));
      if (!(step > 0) || count < 4 || count > 8) continue;
      if (best_step == 0 || std::fabs(count - 6) < std::fabs(best_count - 6)) best_step = step, best_count = count;
    }
  }
  const double hi = best_count * best_step;
  if (best_step == 0 || !std::isfinite(hi)) {  // at the edge of double's range
    a.hi = max_value, a.step = max_value / 4, a.count = 4;
    return a;
  }
  a.hi = hi, a.step = best_step, a.count = static_cast<int>(best_count);
  return a;
}

// Smallest number of decimals (up to 12) that writes x exactly enough: 2.5 -> 1, 0.25 -> 2.
int DecimalsFor(double x) {
  for (int d = 0; d < 12; ++d) {
    const double scaled = x * std::pow(10.0, d);
    if (std::fabs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, std::fabs(scaled))) return d;
  }
  return 12;
}

// A tick label: plain ("0", "12.5", "0.25"), with a k/M/G/T suffix from 10,000 on ("25k",
// "1.5M"), and with a power of ten for the very small or very large ("2.5e-7").
std::string TickLabel(double v, const Axis& a) {
  if (v == 0) return "0";
  if (a.hi < 1e-3 || a.hi >= 1e16) {
    const int e = static_cast<int>(std::floor(std::log10(a.hi)));
    const double unit = std::pow(10.0, e);
    const int d = std::min(DecimalsFor(a.step / unit), 6);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*fe%d", d, v / unit, e);
    return buf;
  }
  static const struct {
    double unit;
    const char* suffix;
  } kSi[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  double unit = 1;
  const char* suffix = "";
  if (a.hi >= 1e4) {
    for (const auto& s : kSi) {
      if (a.hi >= 10 * s.unit || s.unit == 1e3) {
        unit = s.unit, suffix = s.suffix;
        break;
      }
    }
  }
  const int d = std::min(DecimalsFor(a.step / unit), 6);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f%s", d, v / unit, suffix);
  return buf;
}

// "12", "2.5", "1e+06" for a load value.
std::string Compact(double v) {
  if (v == std::round(v) && std::fabs(v) < 1e9) return Printf("%.0f", v);
  return Printf("%.4g", v);
}

std::string PointLabel(const PerfResult& r) {
  return r.mode == LoadMode::kConcurrency ? "c=" + Compact(r.load) : "r=" + Compact(r.load) + "/s";
}

bool Present(double v) { return std::isfinite(v) && v > 0; }

// The latency of series `s` at point `r` in ms, or NaN when it is not drawn.
double LatencyMs(const PerfResult& r, const Series& s) {
  const double us = r.*(s.field);
  return Present(us) ? us / 1000.0 : std::nan("");
}

void MarkerSvg(std::ostringstream& o, Marker m, double x, double y, const char* color) {
  const std::string style = std::string(" fill=\"") + color + "\" stroke=\"white\" stroke-width=\"1.2\"/>\n";
  switch (m) {
    case Marker::kCircle:
      o << "<circle cx=\"" << Num(x) << "\" cy=\"" << Num(y) << "\" r=\"4.5\"" << style;
      break;
    case Marker::kSquare:
      o << "<rect x=\"" << Num(x - 4) << "\" y=\"" << Num(y - 4) << "\" width=\"8\" height=\"8\"" << style;
      break;
    case Marker::kTriangle:
      o << "<polygon points=\"" << Num(x) << ',' << Num(y - 5.5) << ' ' << Num(x - 5) << ',' << Num(y + 4) << ' '
        << Num(x + 5) << ',' << Num(y + 4) << "\"" << style;
      break;
    case Marker::kDiamond:
      o << "<polygon points=\"" << Num(x) << ',' << Num(y - 5.5) << ' ' << Num(x + 5) << ',' << Num(y) << ' ' << Num(x)
        << ',' << Num(y + 5.5) << ' ' << Num(x - 5) << ',' << Num(y) << "\"" << style;
      break;
  }
}

void Text(std::ostringstream& o, double x, double y, const std::string& text, const std::string& attrs) {
  o << "<text x=\"" << Num(x) << "\" y=\"" << Num(y) << "\" " << attrs << ">" << XmlEscape(text) << "</text>\n";
}

// "batch 8 · closed loop (concurrency) · 6 points", from what the points have in common.
std::string Subtitle(const std::vector<const PerfResult*>& drawn, size_t skipped) {
  std::string s;
  bool same_batch = true, same_mode = true;
  for (const PerfResult* r : drawn) {
    same_batch = same_batch && r->batch_size == drawn[0]->batch_size;
    same_mode = same_mode && r->mode == drawn[0]->mode;
  }
  s += same_batch ? "batch size " + std::to_string(drawn[0]->batch_size) : std::string("mixed batch sizes");
  if (same_mode) {
    s += drawn[0]->mode == LoadMode::kConcurrency ? " \xC2\xB7 closed loop, points labelled with the concurrency (c=)"
                                                  : " \xC2\xB7 open loop, points labelled with the request rate (r=)";
  }
  s += " \xC2\xB7 client-side latency";
  if (skipped > 0) s += " \xC2\xB7 " + std::to_string(skipped) + " point(s) without a successful request not drawn";
  return s;
}

// The points that can be drawn (a successful request, a throughput, a latency), in load order.
std::vector<const PerfResult*> DrawablePoints(const std::vector<PerfResult>& points) {
  std::vector<const PerfResult*> drawn;
  for (const PerfResult& r : points) {
    if (r.completed == 0 || !std::isfinite(r.throughput_infer_per_s) || r.throughput_infer_per_s < 0) continue;
    bool any = false;
    for (const Series& s : kSeries) any = any || Present(r.*(s.field));
    if (any) drawn.push_back(&r);
  }
  std::stable_sort(drawn.begin(), drawn.end(), [](const PerfResult* a, const PerfResult* b) {
    return a->mode != b->mode ? a->mode < b->mode : a->load < b->load;
  });
  return drawn;
}

// The highest latency of any series at point `r` in ms (0 when none is drawn).
double TopLatencyMs(const PerfResult& r) {
  double top = 0;
  for (const Series& s : kSeries) {
    const double y = LatencyMs(r, s);
    if (std::isfinite(y)) top = std::max(top, y);
  }
  return top;
}

// The axes, and where a value lands on the canvas.
struct PlotScale {
  Axis x, y;
  double X(double v) const { return kPlotLeft + x.Frac(v) * (kPlotRight - kPlotLeft); }
  double Y(double v) const { return kPlotBottom - y.Frac(v) * (kPlotBottom - kPlotTop); }
};

// Axes from 0 to past the highest throughput and latency (and the latency bound, if any).
PlotScale ScaleFor(const std::vector<const PerfResult*>& drawn, double bound_ms) {
  double max_x = 0, max_y = bound_ms;
  for (const PerfResult* r : drawn) {
    max_x = std::max(max_x, r->throughput_infer_per_s);
    max_y = std::max(max_y, TopLatencyMs(*r));
  }
  return {NiceAxis(max_x, 1.0), NiceAxis(max_y, 1.08)};
}

// The XML declaration, the <svg> element's start, a white background and the title.
void WriteHeader(std::ostringstream& o, const std::string& title) {
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
    << "\" viewBox=\"0 0 " << kWidth << ' ' << kHeight << "\" font-family=\"" << kFont << "\">\n"
    << "<title>" << XmlEscape(title) << "</title>\n"
    << "<rect x=\"0\" y=\"0\" width=\"" << kWidth << "\" height=\"" << kHeight << "\" fill=\"white\"/>\n";
  Text(o, kPlotLeft, 34, title, "font-size=\"20\" font-weight=\"bold\" fill=\"#222\"");
}

// An empty plot area that says there is nothing to plot.
void WriteNothingToPlot(std::ostringstream& o) {
  const double pw = kPlotRight - kPlotLeft, ph = kPlotBottom - kPlotTop;
  o << "<rect x=\"" << Num(kPlotLeft) << "\" y=\"" << Num(kPlotTop) << "\" width=\"" << Num(pw) << "\" height=\""
    << Num(ph) << "\" fill=\"#fafafa\" stroke=\"#999\"/>\n";
  Text(o, kPlotLeft + pw / 2, kPlotTop + ph / 2, "no load point with a successful request: nothing to plot",
       "font-size=\"16\" fill=\"#555\" text-anchor=\"middle\"");
}

// Grid, tick labels, the axes (left and bottom) and their titles.
void WriteGridAndAxes(std::ostringstream& o, const PlotScale& sc) {
  const double pw = kPlotRight - kPlotLeft, ph = kPlotBottom - kPlotTop;
  o << "<g stroke=\"#e3e3e3\" stroke-width=\"1\">\n";
  for (int i = 1; i <= sc.x.count; ++i) {
    const double x = sc.X(i * sc.x.step);
    o << "<line x1=\"" << Num(x) << "\" y1=\"" << Num(kPlotTop) << "\" x2=\"" << Num(x) << "\" y2=\""
      << Num(kPlotBottom) << "\"/>\n";
  }
  for (int i = 1; i <= sc.y.count; ++i) {
    const double y = sc.Y(i * sc.y.step);
    o << "<line x1=\"" << Num(kPlotLeft) << "\" y1=\"" << Num(y) << "\" x2=\"" << Num(kPlotRight) << "\" y2=\""
      << Num(y) << "\"/>\n";
  }
  o << "</g>\n<g font-size=\"12\" fill=\"#444\">\n";
  for (int i = 0; i <= sc.x.count; ++i) {
    Text(o, sc.X(i * sc.x.step), kPlotBottom + 18, TickLabel(i * sc.x.step, sc.x), "text-anchor=\"middle\"");
  }
  for (int i = 0; i <= sc.y.count; ++i) {
    Text(o, kPlotLeft - 8, sc.Y(i * sc.y.step) + 4, TickLabel(i * sc.y.step, sc.y), "text-anchor=\"end\"");
  }
  o << "</g>\n";
  o << "<path d=\"M" << Num(kPlotLeft) << ',' << Num(kPlotTop) << " V" << Num(kPlotBottom) << " H" << Num(kPlotRight)
    << "\" fill=\"none\" stroke=\"#333\" stroke-width=\"1.2\"/>\n";
  Text(o, kPlotLeft + pw / 2, kPlotBottom + 48, "Throughput (inferences/s)",
       "font-size=\"14\" fill=\"#222\" text-anchor=\"middle\"");
  o << "<text transform=\"translate(" << Num(kPlotLeft - 62) << ',' << Num(kPlotTop + ph / 2)
    << ") rotate(-90)\" font-size=\"14\" fill=\"#222\" text-anchor=\"middle\">Latency (ms)</text>\n";
}

// The dashed line at the latency bound, labelled.
void WriteLatencyBound(std::ostringstream& o, const PlotScale& sc, double bound_ms) {
  const double y = sc.Y(bound_ms);
  o << "<line x1=\"" << Num(kPlotLeft) << "\" y1=\"" << Num(y) << "\" x2=\"" << Num(kPlotRight) << "\" y2=\""
    << Num(y) << "\" stroke=\"#C00000\" stroke-width=\"1.5\" stroke-dasharray=\"7 5\"/>\n";
  // At the left end, where latencies are lowest and the lines least likely to cross it.
  Text(o, kPlotLeft + 6, y - 6, "latency bound " + Compact(bound_ms) + " ms",
       std::string("font-size=\"12\" fill=\"#C00000\"") + kHalo);
}

// One line with markers per percentile that has at least one value; the line breaks where a
// point lacks that percentile (a gap, not a bridge that would invent values). Returns the series
// drawn, for the legend.
std::vector<const Series*> WriteSeriesLines(std::ostringstream& o, const PlotScale& sc,
                                            const std::vector<const PerfResult*>& drawn) {
  std::vector<const Series*> legend;
  for (const Series& s : kSeries) {
    std::vector<std::string> segments(1);
    std::ostringstream marks;
    for (const PerfResult* r : drawn) {
      const double y = LatencyMs(*r, s);
      if (!std::isfinite(y)) {
        if (!segments.back().empty()) segments.emplace_back();
        continue;
      }
      std::string& seg = segments.back();
      seg += (seg.empty() ? "" : " ") + Num(sc.X(r->throughput_infer_per_s)) + "," + Num(sc.Y(y));
      MarkerSvg(marks, s.marker, sc.X(r->throughput_infer_per_s), sc.Y(y), s.color);
    }
    if (marks.str().empty()) continue;
    legend.push_back(&s);
    o << "<g class=\"series-" << s.name << "\">\n";
    for (const std::string& seg : segments) {
      if (seg.find(' ') == std::string::npos) continue;  // one point: its marker alone
      o << "<polyline points=\"" << seg << "\" fill=\"none\" stroke=\"" << s.color
        << "\" stroke-width=\"2\" stroke-linejoin=\"round\"/>\n";
    }
    o << marks.str() << "</g>\n";
  }
  return legend;
}

// Each point's load, up and to the left of its highest marker: the curves rise to the right,
// so that side is the free one. A label that would cover one already placed (points close
// together, e.g. past saturation) moves up a line at a time, within the plot.
void WritePointLabels(std::ostringstream& o, const PlotScale& sc, const std::vector<const PerfResult*>& drawn) {
  o << "<g font-size=\"11\" fill=\"#333\" text-anchor=\"end\"" << kHalo << ">\n";
  struct Box {
    double x0, y0, x1, y1;
  };
  std::vector<Box> placed;
  for (const PerfResult* r : drawn) {
    const double top = TopLatencyMs(*r);
    const std::string label = PointLabel(*r);
    const double width = 6.5 * static_cast<double>(label.size());  // about, at 11 px
    const double x = std::max(sc.X(r->throughput_infer_per_s) - 6, kPlotLeft + 4 + width);
    const double y0 = std::max(sc.Y(top) - 7, kPlotTop + 10);
    auto box_at = [&](double y) { return Box{x - width, y - 10, x, y + 2}; };
    auto free = [&](const Box& b) {
      for (const Box& p : placed) {
        if (b.x0 < p.x1 && p.x0 < b.x1 && b.y0 < p.y1 && p.y0 < b.y1) return false;
      }
      return true;
    };
    double y = y0;
    while (!free(box_at(y)) && y - 12 >= kPlotTop + 10) y -= 12;
    if (!free(box_at(y))) y = y0;  // no room above: overlap rather than leave the plot
    placed.push_back(box_at(y));
    Text(o, x, y, label, "");
  }
  o << "</g>\n";
}

// The legend, right of the plot: the drawn series, and the latency bound when there is one.
void WriteLegend(std::ostringstream& o, const std::vector<const Series*>& legend, bool has_bound) {
  const double lx = kPlotRight + 24;
  double ly = kPlotTop + 8;
  o << "<g font-size=\"13\" fill=\"#222\">\n";
  Text(o, lx, ly, "latency percentile", "font-weight=\"bold\"");
  for (const Series* s : legend) {
    ly += 24;
    o << "<line x1=\"" << Num(lx) << "\" y1=\"" << Num(ly - 4) << "\" x2=\"" << Num(lx + 28) << "\" y2=\""
      << Num(ly - 4) << "\" stroke=\"" << s->color << "\" stroke-width=\"2\"/>\n";
    MarkerSvg(o, s->marker, lx + 14, ly - 4, s->color);
    Text(o, lx + 38, ly, s->name, "");
  }
  if (has_bound) {
    ly += 24;
    o << "<line x1=\"" << Num(lx) << "\" y1=\"" << Num(ly - 4) << "\" x2=\"" << Num(lx + 28) << "\" y2=\""
      << Num(ly - 4) << "\" stroke=\"#C00000\" stroke-width=\"1.5\" stroke-dasharray=\"7 5\"/>\n";
    Text(o, lx + 38, ly, "latency bound", "");
  }
  o << "</g>\n";
}

}  // namespace

std::string RenderPerfPlotSvg(const std::vector<PerfResult>& points, const std::string& title,
                              double latency_bound_ms) {
  const bool has_bound = std::isfinite(latency_bound_ms) && latency_bound_ms > 0;
  const std::vector<const PerfResult*> drawn = DrawablePoints(points);
  std::ostringstream o;
  WriteHeader(o, title);
  if (drawn.empty()) {
    WriteNothingToPlot(o);
    o << "</svg>\n";
    return o.str();
  }
  Text(o, kPlotLeft, 56, Subtitle(drawn, points.size() - drawn.size()), "font-size=\"13\" fill=\"#555\"");
  const PlotScale sc = ScaleFor(drawn, has_bound ? latency_bound_ms : 0);
  WriteGridAndAxes(o, sc);
  if (has_bound) WriteLatencyBound(o, sc, latency_bound_ms);
  const std::vector<const Series*> legend = WriteSeriesLines(o, sc, drawn);
  WritePointLabels(o, sc, drawn);
  WriteLegend(o, legend, has_bound);
  o << "</svg>\n";
  return o.str();
}

Status WritePerfPlotSvg(const std::vector<PerfResult>& points, const std::string& title, const std::string& path,
                        double latency_bound_ms) {
  const std::string svg = RenderPerfPlotSvg(points, title, latency_bound_ms);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f.is_open()) {
    return Status::InvalidArgument("cannot write the plot to '" + path + "': " + std::strerror(errno));
  }
  f.write(svg.data(), static_cast<std::streamsize>(svg.size()));
  f.close();
  if (f.fail()) return Status::InvalidArgument("cannot write the plot to '" + path + "': write failed");
  return Status::Ok();
}

}  // namespace inferloop::perf
