// AdaptiveLoop: the server's adaptive loop (docs/ADAPTIVE.md). The ONNX backend hands it each
// version whose config.pbtxt has an `adaptive { ... }` block (Attach, while the version loads):
// it prepares the precision variants (precision_variants.h), gives the version its
// ModelAdaptation (the AdaptiveControl of the REST/gRPC API), and from then on, on one thread,
// steps every attached version's controller once per its window. Every decision that changes a
// knob (or says the SLO became unreachable / reachable again) and every pin/free is an event
// line ("adaptive_decision") and shows in the metrics:
//   inferloop_adaptive_variant{model,version,variant}   1 for the variant in force, 0 for others
//   inferloop_adaptive_decisions_total{model,version,reason}
//   inferloop_adaptive_slo_unreachable{model,version}   1 while no usable setting meets the SLO
//   inferloop_adaptive_batch_size{model,version}, inferloop_adaptive_queue_delay_seconds{...},
//   inferloop_adaptive_instances{model,version}
// Versions are held weakly: one that unloads simply drops out (its series are removed).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "control/adaptive_controller.h"
#include "control/precision_variants.h"
#include "serve/event_log.h"
#include "serve/metrics_registry.h"
#include "serve/served_model_version.h"

namespace inferloop::control {

class AdaptiveLoop {
 public:
  struct Options {
    serve::EventLog* log = nullptr;            // may be null
    serve::MetricsRegistry* metrics = nullptr;  // may be null; must outlive the loop
    std::chrono::milliseconds tick{100};       // how often windows are checked
  };
  explicit AdaptiveLoop(Options options);
  ~AdaptiveLoop();  // stops the thread
  AdaptiveLoop(const AdaptiveLoop&) = delete;
  AdaptiveLoop& operator=(const AdaptiveLoop&) = delete;

  // For a version whose adaptive block asks for variants (latency_slo or variants set): prepares
  // them and attaches its ModelAdaptation; with a latency SLO, the loop steps it from now on.
  // Otherwise nothing happens. Errors: only those that break the version (see
  // PreparePrecisionVariants); a skipped variant is no error.
  Status Attach(const std::shared_ptr<serve::ServedModelVersion>& version, const VariantPreparation& preparation);

 private:
  struct Entry;
  void Run();
  void Publish(Entry& e, const Decision& d, bool from_api);
  void Forget(Entry& e);

  Options options_;
  serve::GaugeFamily* variant_gauge_ = nullptr;
  serve::CounterFamily* decisions_ = nullptr;
  serve::GaugeFamily* unreachable_ = nullptr;
  serve::GaugeFamily* batch_size_ = nullptr;
  serve::GaugeFamily* delay_ = nullptr;
  serve::GaugeFamily* instances_ = nullptr;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::thread thread_;
};

}  // namespace inferloop::control
