#include "control/model_adaptation.h"

#include <algorithm>
#include <cmath>

namespace inferloop::control {

ModelAdaptation::ModelAdaptation(serve::ServedModelVersion* version, serve::AdaptiveObjectives objectives,
                                 std::vector<serve::VariantReport> reports)
    : version_(version), objectives_(std::move(objectives)), reports_(std::move(reports)) {
  for (size_t i = 0; i < reports_.size(); ++i)
    if (reports_[i].usable) usable_.push_back(static_cast<int>(i));
  Knobs start;
  start.preferred_batch_size = 1;
  start.instances = 1;
  if (objectives_.has_slo) {
    ControllerConfig c;
    c.slo_percentile = objectives_.slo_percentile;
    c.slo_ms = objectives_.slo_ms;
    for (int i : usable_) c.variants.push_back({reports_[static_cast<size_t>(i)].name, reports_[static_cast<size_t>(i)].latency_ms});
    c.max_batch_size = version_->config().max_batch_size();
    c.max_instances = std::max(1, version_->instance_capacity());
    c.max_queue_delay = objectives_.max_queue_delay;
    controller_.emplace(std::move(c));
    start = controller_->knobs();
  }
  last_.knobs = start;
  last_.reason = "start";
  std::lock_guard<std::mutex> lock(mu_);
  if (controller_) Apply(start);
}

const std::string& ModelAdaptation::variant_name(int usable_index) const {
  return reports_[static_cast<size_t>(usable_[static_cast<size_t>(usable_index)])].name;
}

void ModelAdaptation::Apply(const Knobs& k) {
  version_->SetVariant(k.variant);
  if (version_->config().max_batch_size() > 0) {
    std::vector<int> preferred;
    if (k.preferred_batch_size > 1) preferred.push_back(k.preferred_batch_size);
    version_->SetBatching(std::move(preferred), k.max_queue_delay, k.instances);
  } else {
    version_->SetBatching({}, std::chrono::microseconds(0), k.instances);
  }
}

void ModelAdaptation::ApplyOrSetVariant(const Knobs& k) {
  if (controller_) {
    Apply(k);
  } else {
    version_->SetVariant(k.variant);  // no controller: the config's batching stays as it is
  }
}

std::optional<Decision> ModelAdaptation::Step(double now_s) {
  serve::LoadWindowSnapshot w = version_->load_window().Take();
  std::lock_guard<std::mutex> lock(mu_);
  Observation o;
  o.now_s = now_s;
  o.interval_s = std::chrono::duration<double>(w.interval).count();
  o.arrivals = w.arrivals;
  o.completed = w.completed;
  o.batches = w.batches;
  o.busy_s = std::chrono::duration<double>(w.busy).count();
  o.latency_ms = w.Percentile(objectives_.slo_percentile);
  o.queue_depth = version_->QueueDepth();
  last_rate_ = o.interval_s > 0 ? static_cast<double>(o.arrivals) / o.interval_s : 0;
  last_observed_ms_ = o.latency_ms;
  if (!controller_) return std::nullopt;
  const bool was_unreachable = last_.slo_unreachable;
  Decision d = controller_->Observe(o);
  if (!d.valid) return std::nullopt;  // an observation the controller refused: nothing changes
  const bool report = d.changed || d.slo_unreachable != was_unreachable;
  if (d.changed) Apply(d.knobs);
  last_ = d;
  if (!report) return std::nullopt;
  return d;
}

std::optional<Decision> ModelAdaptation::TakeApiDecision() {
  std::lock_guard<std::mutex> lock(mu_);
  auto d = std::move(api_decision_);
  api_decision_.reset();
  return d;
}

Status ModelAdaptation::Pin(const std::string& variant) {
  auto it = std::find_if(reports_.begin(), reports_.end(), [&](const serve::VariantReport& r) { return r.name == variant; });
  if (it == reports_.end()) {
    std::string names;
    for (const auto& r : reports_) names += (names.empty() ? "" : ", ") + r.name;
    return Status::InvalidArgument("model '" + version_->name() + "' has no variant '" + variant.substr(0, 32) +
                                   "' (its variants: " + names + ")");
  }
  if (!it->usable)
    return Status::FailedPrecondition("variant '" + variant + "' of model '" + version_->name() +
                                      "' is not usable: " + it->skipped_reason);
  const int report_index = static_cast<int>(it - reports_.begin());
  const int index = static_cast<int>(std::find(usable_.begin(), usable_.end(), report_index) - usable_.begin());
  std::lock_guard<std::mutex> lock(mu_);
  pinned_ = index;
  Decision d;
  if (controller_) {
    d = controller_->Pin(index);
  } else {
    d.knobs = last_.knobs;
    d.knobs.variant = index;
    d.reason = "pinned";
    d.changed = true;
  }
  ApplyOrSetVariant(d.knobs);
  last_ = d;
  api_decision_ = d;
  return Status::Ok();
}

void ModelAdaptation::Free() {
  std::lock_guard<std::mutex> lock(mu_);
  pinned_ = -1;
  Decision d;
  if (controller_) {
    d = controller_->Free();
  } else {
    d.knobs = last_.knobs;
    d.knobs.variant = 0;
    d.reason = "freed";
    d.changed = true;
  }
  ApplyOrSetVariant(d.knobs);
  last_ = d;
  api_decision_ = d;
}

serve::AdaptiveState ModelAdaptation::State() const {
  serve::AdaptiveState s;
  s.model = version_->name();
  s.version = version_->version();
  s.controller = controller_.has_value();
  s.slo_percentile = objectives_.slo_percentile;
  s.slo_ms = objectives_.slo_ms;
  s.max_accuracy_drop = objectives_.max_accuracy_drop;
  s.cpu_share = objectives_.cpu_share;
  s.variants = reports_;
  std::lock_guard<std::mutex> lock(mu_);
  const int v = std::clamp(version_->active_variant(), 0, static_cast<int>(usable_.size()) - 1);
  s.variant = reports_[static_cast<size_t>(usable_[static_cast<size_t>(v)])].name;
  if (pinned_ >= 0) s.pinned = reports_[static_cast<size_t>(usable_[static_cast<size_t>(pinned_)])].name;
  s.reason = last_.reason;
  s.slo_unreachable = last_.slo_unreachable;
  s.preferred_batch_size = version_->config().max_batch_size() > 0 ? last_.knobs.preferred_batch_size : 0;
  s.max_queue_delay_us = last_.knobs.max_queue_delay.count();
  s.instances = last_.knobs.instances;
  s.arrival_rate = last_rate_;
  s.observed_latency_ms = last_observed_ms_;
  return s;
}

}  // namespace inferloop::control
