// Formulas: see control/variant_cost_model.h.
#include "control/variant_cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "control/adaptive_controller.h"

namespace inferloop::control {

VariantCostModel::VariantCostModel(const std::vector<VariantCost>& variants, double percentile) {
  for (const VariantCost& v : variants) {
    std::vector<std::pair<int, double>> points;
    for (const auto& [batch, ms] : v.latency_ms) {
      if (batch >= 1 && std::isfinite(ms) && ms > 0) points.emplace_back(batch, ms);
    }
    std::sort(points.begin(), points.end());
    // One point per batch size: the first after sorting (the smaller time) is kept.
    points.erase(std::unique(points.begin(), points.end(),
                             [](const auto& a, const auto& b) { return a.first == b.first; }),
                 points.end());
    tables_.push_back(std::move(points));
  }
  const double q = std::isfinite(percentile) && percentile > 0 && percentile < 100
                       ? percentile / 100
                       : 0.99;
  tail_factor_ = std::log(1 / (1 - q));
}

bool VariantCostModel::any_usable() const {
  for (int v = 0; v < size(); ++v) {
    if (usable(v)) return true;
  }
  return false;
}

std::vector<int> VariantCostModel::BatchSizes(int v, int max_batch_size) const {
  std::vector<int> sizes{1};
  if (max_batch_size <= 1 || !usable(v)) return sizes;
  for (const auto& point : tables_[v]) {
    if (point.first > 1 && point.first <= max_batch_size) sizes.push_back(point.first);
  }
  sizes.push_back(max_batch_size);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

double VariantCostModel::RunMs(int v, double batch) const {
  if (!usable(v)) return std::numeric_limits<double>::infinity();
  const auto& t = tables_[v];
  if (batch <= t.front().first) return t.front().second;
  for (size_t k = 1; k < t.size(); ++k) {
    if (batch <= t[k].first) {
      const double f = (batch - t[k - 1].first) / (t[k].first - t[k - 1].first);
      return t[k - 1].second + f * (t[k].second - t[k - 1].second);
    }
  }
  // Beyond the largest measured batch: the last slope per row, or that point's ms per row.
  const auto& last = t.back();
  double per_row = last.second / last.first;
  if (t.size() >= 2) {
    const auto& prev = t[t.size() - 2];
    const double slope = (last.second - prev.second) / (last.first - prev.first);
    if (slope > 0) per_row = slope;
  }
  return last.second + (batch - last.first) * per_row;
}

double VariantCostModel::InstanceThroughput(int instances) {
  return 1 + kExtraInstanceGain * (std::max(instances, 1) - 1);
}

double VariantCostModel::InstanceSlowdown(int instances) {
  return std::max(instances, 1) / InstanceThroughput(instances);
}

Prediction VariantCostModel::Predict(int v, int batch, int instances, double delay_s,
                                     double rate_rps, double correction) const {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double rate = std::max(rate_rps, 0.0);
  const double delay = batch > 1 ? std::max(delay_s, 0.0) : 0.0;
  double fill = 0, rows = 1;
  if (batch > 1) {
    fill = rate > 0 ? std::min(delay, (batch - 1) / rate) : delay;
    rows = std::min<double>(batch, 1 + rate * delay);
  }
  const double t_s = correction * RunMs(v, rows) / 1000;
  const double m = InstanceThroughput(instances);
  const double service_s = t_s / m;
  Prediction p;
  p.run_ms = 1000 * t_s * InstanceSlowdown(instances);
  p.utilisation = rate * service_s / rows;
  if (!std::isfinite(p.utilisation) || p.utilisation >= 1) {
    p.latency_ms = kInf;
    return p;
  }
  const double rho = p.utilisation;
  const double wait_s = tail_factor_ * rho * service_s / (2 * (1 - rho));
  p.latency_ms = 1000 * (fill + wait_s) + p.run_ms;
  return p;
}

}  // namespace inferloop::control
