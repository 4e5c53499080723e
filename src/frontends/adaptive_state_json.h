// The adaptive state of a model version (serve::AdaptiveState, docs/ADAPTIVE.md) as the JSON body
// of GET /v2/models/{m}[/versions/{v}]/adaptive and of the pin/free answers (rest_handler.h):
//
//   {"model": "resnet", "version": "1",
//    "objectives": {"latency_slo": {"percentile": 99, "milliseconds": 50} | null,
//                   "max_accuracy_drop": 1, "cpu_share": 2},
//    "controller": true,                 // a latency SLO is set: the controller moves the knobs
//    "variant": "int8",                  // in force now
//    "pinned": "int8" | "",              // "": free
//    "reason": "...", "slo_unreachable": false,
//    "knobs": {"preferred_batch_size": 8, "max_queue_delay_us": 500, "instances": 2},
//    "observed": {"arrival_rate": 120.5, "latency_ms": 41.2 | null},
//    "variants": [{"name": "int8", "usable": true, "skipped_reason": "" | "why not usable",
//                  "source": "calibration/", "accuracy_drop": 0.4 | null, "metric": "top-1 accuracy",
//                  "memory_bytes": 26214400,
//                  "latency_ms": [[1, 2.5], [8, 9.75]]}, ...]}   // [batch size, median ms] at load
//
// Strings are always strings ("" when none); a number that is not known (no SLO, accuracy not
// measured, no latency observed) or not finite is null (JSON has no NaN).
#pragma once

#include <string>

#include "serve/adaptive_control.h"

namespace inferloop::frontends {

std::string AdaptiveStateJson(const serve::AdaptiveState& state);

}  // namespace inferloop::frontends
