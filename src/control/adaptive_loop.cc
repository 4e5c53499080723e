#include "control/adaptive_loop.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "base/c_locale_number.h"
#include "base/status_macros.h"
#include "control/model_adaptation.h"

namespace inferloop::control {

using Clock = std::chrono::steady_clock;

struct AdaptiveLoop::Entry {
  std::weak_ptr<serve::ServedModelVersion> version;
  ModelAdaptation* adaptation = nullptr;  // owned by the version; valid while `version` locks
  std::string model, version_label;
  std::vector<std::string> variant_names;  // usable, in the version's order
  std::chrono::milliseconds window{2000};
  Clock::time_point next_step;
  std::set<std::string> reasons;  // decision reasons counted (their series go with the version)
};

namespace {

std::string Num(double v) {
  return FormatGeneralC(v, 4);
}

}  // namespace

AdaptiveLoop::AdaptiveLoop(Options options) : options_(options) {
  if (options_.metrics) {
    auto& m = *options_.metrics;
    const std::vector<std::string> mv = {"model", "version"};
    if (auto f = m.AddGauge("inferloop_adaptive_variant", "1 for the precision variant a model runs now, 0 for its others",
                            {"model", "version", "variant"});
        f.ok())
      variant_gauge_ = *f;
    if (auto f = m.AddCounter("inferloop_adaptive_decisions_total",
                              "Decisions of the adaptive controller that changed a knob, by reason",
                              {"model", "version", "reason"});
        f.ok())
      decisions_ = *f;
    if (auto f = m.AddGauge("inferloop_adaptive_slo_unreachable",
                            "1 while no usable variant and batching meets the model's latency SLO at its load", mv);
        f.ok())
      unreachable_ = *f;
    if (auto f = m.AddGauge("inferloop_adaptive_batch_size", "Preferred batch size the controller set", mv); f.ok())
      batch_size_ = *f;
    if (auto f = m.AddGauge("inferloop_adaptive_queue_delay_seconds", "Batching delay the controller set", mv); f.ok())
      delay_ = *f;
    if (auto f = m.AddGauge("inferloop_adaptive_instances", "Instances the controller runs", mv); f.ok())
      instances_ = *f;
  }
  thread_ = std::thread([this] { Run(); });
}

AdaptiveLoop::~AdaptiveLoop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Status AdaptiveLoop::Attach(const std::shared_ptr<serve::ServedModelVersion>& version,
                            const VariantPreparation& preparation) {
  if (!preparation.objectives.wants_variants) return Status::Ok();
  IL_ASSIGN_OR_RETURN(std::vector<serve::VariantReport> reports, PreparePrecisionVariants(*version, preparation));
  auto adaptation = std::make_unique<ModelAdaptation>(version.get(), preparation.objectives, reports);
  auto e = std::make_unique<Entry>();
  e->version = version;
  e->adaptation = adaptation.get();
  e->model = version->name();
  e->version_label = std::to_string(version->version());
  for (int i = 0; i < version->variant_count(); ++i) e->variant_names.push_back(version->variant_name(i));
  e->window = preparation.objectives.window;
  e->next_step = Clock::now() + e->window;
  version->SetAdaptiveControl(std::move(adaptation));
  if (options_.log) {
    serve::EventLog::Fields f = {{"model", e->model}, {"version", e->version_label}};
    std::string usable, skipped;
    for (const auto& r : reports) {
      if (r.usable) {
        usable += (usable.empty() ? "" : ", ") + r.name + " (" +
                  (r.accuracy_measured ? "drop " + Num(r.accuracy_drop) + " pp, " : "") + "batch 1 " +
                  Num(r.latency_ms.empty() ? 0 : r.latency_ms.front().second) + " ms, " +
                  Num(static_cast<double>(r.memory_bytes) / (1 << 20)) + " MiB)";
      } else {
        skipped += (skipped.empty() ? "" : "; ") + r.name + ": " + r.skipped_reason;
      }
    }
    f.emplace_back("variants", usable);
    if (!skipped.empty()) f.emplace_back("skipped", skipped);
    options_.log->Info("adaptive_variants", f);
  }
  const serve::AdaptiveState state = e->adaptation->State();
  Decision start;
  start.knobs.variant = version->active_variant();
  start.knobs.preferred_batch_size = std::max(1, state.preferred_batch_size);
  start.knobs.max_queue_delay = std::chrono::microseconds(state.max_queue_delay_us);
  start.knobs.instances = state.instances;
  start.reason = "start";
  Publish(*e, start, false);
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back(std::move(e));
  return Status::Ok();
}

void AdaptiveLoop::Publish(Entry& e, const Decision& d, bool from_api) {
  const std::string variant =
      d.knobs.variant >= 0 && d.knobs.variant < static_cast<int>(e.variant_names.size()) ? e.variant_names[static_cast<size_t>(d.knobs.variant)] : "?";
  const std::vector<std::string> mv = {e.model, e.version_label};
  if (variant_gauge_)
    for (size_t i = 0; i < e.variant_names.size(); ++i)
      if (auto g = variant_gauge_->WithLabels({e.model, e.version_label, e.variant_names[i]}); g.ok())
        g->Set(static_cast<int>(i) == d.knobs.variant ? 1 : 0);
  if (decisions_ && d.reason != "start") {
    if (auto c = decisions_->WithLabels({e.model, e.version_label, d.reason}); c.ok()) c->Increment();
    e.reasons.insert(d.reason);
  }
  if (unreachable_)
    if (auto g = unreachable_->WithLabels(mv); g.ok()) g->Set(d.slo_unreachable ? 1 : 0);
  if (batch_size_)
    if (auto g = batch_size_->WithLabels(mv); g.ok()) g->Set(d.knobs.preferred_batch_size);
  if (delay_)
    if (auto g = delay_->WithLabels(mv); g.ok()) g->Set(static_cast<double>(d.knobs.max_queue_delay.count()) / 1e6);
  if (instances_)
    if (auto g = instances_->WithLabels(mv); g.ok()) g->Set(d.knobs.instances);
  if (!options_.log || d.reason == "start") return;
  serve::EventLog::Fields f = {{"model", e.model},
                               {"version", e.version_label},
                               {"variant", variant},
                               {"reason", d.reason},
                               {"batch_size", std::to_string(d.knobs.preferred_batch_size)},
                               {"queue_delay_us", std::to_string(d.knobs.max_queue_delay.count())},
                               {"instances", std::to_string(d.knobs.instances)}};
  if (!from_api) {
    f.emplace_back("rate_rps", Num(d.rate_rps));
    f.emplace_back("predicted_ms", Num(d.predicted_ms));
    f.emplace_back("observed_ms", Num(d.observed_ms));
    f.emplace_back("correction", Num(d.correction));
  }
  if (d.slo_unreachable) {
    f.emplace_back("slo_unreachable", "true");
    options_.log->Warn("adaptive_decision", f);
  } else {
    options_.log->Info("adaptive_decision", f);
  }
}

void AdaptiveLoop::Forget(Entry& e) {
  // Only this version's series: a version replacing it (hot reload) keeps its own.
  for (auto* fam : {unreachable_, batch_size_, delay_, instances_})
    if (fam) fam->Remove({e.model, e.version_label});
  if (variant_gauge_)
    for (const auto& v : e.variant_names) variant_gauge_->Remove({e.model, e.version_label, v});
  if (decisions_)
    for (const auto& r : e.reasons) decisions_->Remove({e.model, e.version_label, r});
}

void AdaptiveLoop::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  const auto origin = Clock::now();
  while (!stopping_) {
    cv_.wait_for(lock, options_.tick);
    if (stopping_) break;
    const auto now = Clock::now();
    for (size_t i = 0; i < entries_.size();) {
      Entry& e = *entries_[i];
      std::shared_ptr<serve::ServedModelVersion> v = e.version.lock();
      if (!v) {
        bool replaced = false;  // a version with the same number reloaded: its series stay
        for (const auto& o : entries_)
          replaced |= o.get() != &e && o->model == e.model && o->version_label == e.version_label && !o->version.expired();
        if (!replaced) Forget(e);
        entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (auto d = e.adaptation->TakeApiDecision()) Publish(e, *d, true);
      if (now >= e.next_step) {
        e.next_step = now + e.window;
        if (auto d = e.adaptation->Step(std::chrono::duration<double>(now - origin).count())) Publish(e, *d, false);
      }
      ++i;
    }
  }
}

}  // namespace inferloop::control
