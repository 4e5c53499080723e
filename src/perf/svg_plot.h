// The latency-vs-throughput plot of `inferloop perf --plot FILE.svg`: one self-contained SVG
// image (no scripts, no external fonts or files) a person can open in a browser.
//
// x: achieved throughput (inferences/s), y: client latency (ms). One line with markers per
// percentile (p50, p90, p99, and p99.9 when measured), points joined in load order (ascending
// concurrency or request rate), each point labelled with its load ("c=8" for a concurrency,
// "r=250/s" for a request rate). Axes start at 0 with round-number ticks, a grid, a legend, the
// title and units. latency_bound_ms > 0 adds a horizontal dashed line at the bound.
//
// Not drawn: points with no successful request (completed == 0), and percentile values that are
// absent (NaN, infinite, or <= 0, e.g. p99.9 when the tool did not measure it): the line of a
// percentile breaks where its value is absent. A percentile with no drawn point has no line and
// no legend entry. With nothing to draw the image says so.
#pragma once

#include <string>
#include <vector>

#include "inferloop/status.h"
#include "perf/perf_result.h"

namespace inferloop::perf {

// The SVG document as text (UTF-8, XML 1.0; every text from the caller is escaped).
std::string RenderPerfPlotSvg(const std::vector<PerfResult>& points, const std::string& title,
                              double latency_bound_ms = 0);

// Renders and writes to `path` (created or truncated). Error: the path cannot be written
// (message names the path and the reason).
Status WritePerfPlotSvg(const std::vector<PerfResult>& points, const std::string& title, const std::string& path,
                        double latency_bound_ms = 0);

}  // namespace inferloop::perf
