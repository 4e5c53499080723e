// The decision logic of one model's adaptive loop: see control/adaptive_controller.h.
#include "control/adaptive_controller.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace inferloop::control {

namespace {

constexpr double kMinCorrection = 0.5;
constexpr double kMaxCorrection = 4;

bool InOpen01(double x) { return std::isfinite(x) && x > 0 && x < 1; }

ControllerConfig Sanitised(ControllerConfig c) {
  const ControllerConfig defaults;
  if (!std::isfinite(c.slo_percentile) || c.slo_percentile <= 0 || c.slo_percentile >= 100) {
    c.slo_percentile = defaults.slo_percentile;
  }
  if (!std::isfinite(c.slo_ms) || c.slo_ms <= 0) c.slo_ms = defaults.slo_ms;
  c.max_batch_size = std::max(c.max_batch_size, 0);
  c.max_instances = std::max(c.max_instances, 1);
  if (c.max_queue_delay.count() <= 0) {
    c.max_queue_delay = std::chrono::microseconds(std::llround(c.slo_ms * 1000 / 4));
  }
  if (!InOpen01(c.downgrade_utilisation)) c.downgrade_utilisation = defaults.downgrade_utilisation;
  if (!InOpen01(c.upgrade_headroom) && c.upgrade_headroom != 1) {
    c.upgrade_headroom = defaults.upgrade_headroom;
  }
  c.upgrade_dwell_windows = std::max(c.upgrade_dwell_windows, 1);
  if (!InOpen01(c.smoothing) && c.smoothing != 1) c.smoothing = defaults.smoothing;
  return c;
}

bool ValidObservation(const Observation& o) {
  return std::isfinite(o.interval_s) && o.interval_s > 0 && o.arrivals >= 0 && o.completed >= 0 &&
         o.batches >= 0 && o.queue_depth >= 0;
}

double Seconds(std::chrono::microseconds us) { return us.count() / 1e6; }

// Order of preference: more precise variant, then smaller batch, then fewer instances.
auto Key(const Knobs& k) { return std::make_tuple(k.variant, k.preferred_batch_size, k.instances); }

}  // namespace

struct AdaptiveController::Candidate {
  Knobs knobs;
  Prediction p;
};

AdaptiveController::AdaptiveController(ControllerConfig config)
    : config_(Sanitised(std::move(config))), model_(config_.variants, config_.slo_percentile) {
  knobs_ = HomeKnobs();
}

Knobs AdaptiveController::HomeKnobs() const {
  Knobs k;
  k.variant = 0;
  if (pinned_ >= 0) {
    k.variant = pinned_;
  } else {
    while (k.variant + 1 < model_.size() && !model_.usable(k.variant)) ++k.variant;
  }
  return k;
}

Knobs AdaptiveController::FastestKnobs() const {
  int best = -1;
  double best_rows_per_ms = 0;
  for (int v = 0; v < model_.size(); ++v) {
    if (!model_.usable(v) || (pinned_ >= 0 && v != pinned_)) continue;
    const int b = model_.BatchSizes(v, config_.max_batch_size).back();
    const double rows_per_ms = b / model_.RunMs(v, b);
    if (best < 0 || rows_per_ms >= best_rows_per_ms) best = v, best_rows_per_ms = rows_per_ms;
  }
  Knobs k;
  k.variant = std::max(best, 0);
  k.preferred_batch_size = model_.BatchSizes(k.variant, config_.max_batch_size).back();
  k.instances = config_.max_instances;
  if (k.preferred_batch_size > 1) k.max_queue_delay = config_.max_queue_delay;
  return k;
}

std::chrono::microseconds AdaptiveController::BatchingDelay(int v, int batch, int instances,
                                                            double rate, double correction) const {
  if (batch <= 1) return std::chrono::microseconds(0);
  const double run_s = correction * model_.RunMs(v, batch) / 1000 *
                       VariantCostModel::InstanceSlowdown(instances);
  const double budget_s = std::max(config_.slo_ms / 1000 - run_s, 0.0);
  double delay_s = std::min(Seconds(config_.max_queue_delay), budget_s);
  if (rate > 0) delay_s = std::min(delay_s, (batch - 1) / rate);
  return std::chrono::microseconds(std::llround(delay_s * 1e6));
}

std::vector<AdaptiveController::Candidate> AdaptiveController::Candidates(double rate,
                                                                          double correction) const {
  std::vector<Candidate> out;
  for (int v = 0; v < model_.size(); ++v) {
    if (!model_.usable(v) || (pinned_ >= 0 && v != pinned_)) continue;
    for (int b : model_.BatchSizes(v, config_.max_batch_size)) {
      for (int i = 1; i <= config_.max_instances; ++i) {
        Candidate c;
        c.knobs = Knobs{v, b, BatchingDelay(v, b, i, rate, correction), i};
        c.p = model_.Predict(v, b, i, Seconds(c.knobs.max_queue_delay), rate, correction);
        out.push_back(c);
      }
    }
  }
  return out;
}

double AdaptiveController::UpdateRate(const Observation& obs) {
  const double newest = obs.arrivals / obs.interval_s;
  rate_rps_ = started_ ? config_.smoothing * newest + (1 - config_.smoothing) * rate_rps_ : newest;
  return std::max(newest, rate_rps_) + obs.queue_depth / obs.interval_s;
}

double AdaptiveController::UpdateCorrection(const Observation& obs) {
  if (obs.batches <= 0 || !std::isfinite(obs.busy_s) || obs.busy_s <= 0) return correction_;
  double rows = obs.completed > 0 ? static_cast<double>(obs.completed) / obs.batches
                                  : knobs_.preferred_batch_size;
  rows = std::max(rows, 1.0);
  const double expected_s = model_.RunMs(knobs_.variant, rows) / 1000 *
                            VariantCostModel::InstanceSlowdown(knobs_.instances);
  if (!std::isfinite(expected_s) || expected_s <= 0) return correction_;
  const double newest =
      std::clamp(obs.busy_s / obs.batches / expected_s, kMinCorrection, kMaxCorrection);
  correction_ = config_.smoothing * newest + (1 - config_.smoothing) * correction_;
  return std::max(newest, correction_);
}

Decision AdaptiveController::Rejected() const {
  Decision d;
  d.knobs = knobs_;
  d.reason = "invalid";
  d.valid = false;
  d.rate_rps = last_rate_;
  d.correction = last_correction_;
  return d;
}

Decision AdaptiveController::Apply(const Knobs& to, const char* reason, double rate,
                                   double correction) {
  Decision d;
  d.changed = to != knobs_;
  knobs_ = to;
  d.knobs = to;
  d.reason = reason;
  d.rate_rps = rate;
  d.correction = correction;
  const Prediction p = model_.Predict(to.variant, to.preferred_batch_size, to.instances,
                                      Seconds(to.max_queue_delay), rate, correction);
  d.predicted_ms = std::isfinite(p.latency_ms) ? p.latency_ms : -1;
  d.slo_unreachable = !(p.latency_ms <= config_.slo_ms) ||
                      p.utilisation > config_.downgrade_utilisation;
  last_rate_ = rate;
  last_correction_ = correction;
  return d;
}

Decision AdaptiveController::Observe(const Observation& obs) {
  if (!ValidObservation(obs) || !model_.any_usable()) return Rejected();
  const double rate = UpdateRate(obs);
  const double correction = UpdateCorrection(obs);
  Decision d;
  if (obs.arrivals == 0 && obs.queue_depth == 0) {
    fit_streak_ = 0;
    d = Apply(HomeKnobs(), "idle", rate, correction);
  } else {
    d = Choose(obs, rate, correction);
  }
  started_ = true;
  d.observed_ms = std::isfinite(obs.latency_ms) ? obs.latency_ms : -1;
  return d;
}

Decision AdaptiveController::Choose(const Observation& obs, double rate, double correction) {
  const std::vector<Candidate> all = Candidates(rate, correction);
  const auto first = [&](auto&& pred) -> const Candidate* {
    for (const Candidate& c : all) {
      if (pred(c)) return &c;
    }
    return nullptr;
  };
  const double slo = config_.slo_ms, util = config_.downgrade_utilisation;
  const double headroom = config_.upgrade_headroom;
  const auto fits = [&](const Candidate& c) {
    return c.p.latency_ms * latency_bias_ <= slo && c.p.utilisation <= util;
  };
  const auto fits_with_headroom = [&](const Candidate& c) {
    return c.p.latency_ms * latency_bias_ <= slo * headroom && c.p.utilisation <= util * headroom;
  };
  const auto unreachable = [&] {
    fit_streak_ = 0;
    return Apply(FastestKnobs(), "slo_unreachable", rate, correction);
  };

  if (!started_) {
    const Candidate* to = first(fits);
    return to ? Apply(to->knobs, "start", rate, correction) : unreachable();
  }
  const Knobs now = knobs_;
  const Prediction p = model_.Predict(now.variant, now.preferred_batch_size, now.instances,
                                      Seconds(now.max_queue_delay), rate, correction);
  const bool observed_over = std::isfinite(obs.latency_ms) && obs.latency_ms > slo;
  if (std::isfinite(obs.latency_ms) && obs.latency_ms > 0 && std::isfinite(p.latency_ms) && p.latency_ms > 0) {
    const double newest = std::clamp(obs.latency_ms / p.latency_ms, 1.0, kMaxCorrection);
    latency_bias_ = std::max(1.0, config_.smoothing * newest + (1 - config_.smoothing) * latency_bias_);
  }
  const bool overload = p.utilisation > util;
  const bool predicted_over = !(p.latency_ms <= slo);
  if (observed_over || overload || predicted_over) {
    fit_streak_ = 0;
    // Already at the fastest setting there is: stay (leaving it takes the dwell windows below),
    // rather than try a setting only the prediction favours and come straight back.
    if (now == FastestKnobs()) return unreachable();
    const Candidate* to = nullptr;
    // Never to a setting with less capacity than the one that is missing the SLO now.
    const auto no_slower = [&](const Candidate& c) { return !observed_over || c.p.utilisation <= p.utilisation; };
    if (overload || predicted_over) {
      to = first([&](const Candidate& c) { return c.knobs.variant >= now.variant && no_slower(c) && fits(c); });
    } else {  // only the observed latency says so: a faster variant, or else a later setting
      to = first([&](const Candidate& c) { return c.knobs.variant > now.variant && fits(c); });
      if (!to) to = first([&](const Candidate& c) { return Key(c.knobs) > Key(now) && no_slower(c) && fits(c); });
    }
    if (!to) return unreachable();
    return Apply(to->knobs, overload ? "overload" : "slo_risk", rate, correction);
  }
  const Candidate* better = first(fits_with_headroom);
  if (better && Key(better->knobs) < Key(now)) {
    if (++fit_streak_ >= config_.upgrade_dwell_windows) {
      fit_streak_ = 0;
      return Apply(better->knobs, "load_fell", rate, correction);
    }
  } else {
    fit_streak_ = 0;
  }
  return Apply(now, "steady", rate, correction);
}

Decision AdaptiveController::Pin(int v) {
  if (!model_.usable(v)) return Rejected();
  pinned_ = v;
  fit_streak_ = 0;
  for (const Candidate& c : Candidates(last_rate_, last_correction_)) {
    if (c.p.latency_ms <= config_.slo_ms && c.p.utilisation <= config_.downgrade_utilisation) {
      return Apply(c.knobs, "pinned", last_rate_, last_correction_);
    }
  }
  return Apply(FastestKnobs(), "pinned", last_rate_, last_correction_);
}

Decision AdaptiveController::Free() {
  pinned_ = -1;
  fit_streak_ = 0;
  return Apply(knobs_, "freed", last_rate_, last_correction_);
}

}  // namespace inferloop::control
