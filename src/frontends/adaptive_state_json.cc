#include "frontends/adaptive_state_json.h"

#include <cmath>
#include <string_view>

#include "frontends/json_writer.h"

namespace inferloop::frontends {
namespace {

// A number, or null when it is not finite.
void Number(JsonWriter& w, double v) {
  if (std::isfinite(v)) {
    w.Double(v);
  } else {
    w.Null();
  }
}

void WriteVariant(JsonWriter& w, const serve::VariantReport& v) {
  w.StartObject();
  Key(w, "name");
  Str(w, v.name);
  Key(w, "usable");
  w.Bool(v.usable);
  Key(w, "skipped_reason");
  Str(w, v.usable ? std::string_view() : std::string_view(v.skipped_reason));
  Key(w, "source");
  Str(w, v.source);
  Key(w, "accuracy_drop");
  if (v.accuracy_measured) {
    Number(w, v.accuracy_drop);
  } else {
    w.Null();
  }
  Key(w, "metric");
  Str(w, v.metric);
  Key(w, "memory_bytes");
  w.Int64(v.memory_bytes);
  Key(w, "latency_ms");
  w.StartArray();
  for (const auto& [batch_size, ms] : v.latency_ms) {
    w.StartArray();
    w.Int(batch_size);
    Number(w, ms);
    w.EndArray();
  }
  w.EndArray();
  w.EndObject();
}

void WriteObjectives(JsonWriter& w, const serve::AdaptiveState& s) {
  Key(w, "objectives");
  w.StartObject();
  Key(w, "latency_slo");
  if (s.controller) {
    w.StartObject();
    Key(w, "percentile");
    Number(w, s.slo_percentile);
    Key(w, "milliseconds");
    Number(w, s.slo_ms);
    w.EndObject();
  } else {
    w.Null();
  }
  Key(w, "max_accuracy_drop");
  Number(w, s.max_accuracy_drop);
  Key(w, "cpu_share");
  Number(w, s.cpu_share);
  w.EndObject();
}

void WriteKnobsAndObserved(JsonWriter& w, const serve::AdaptiveState& s) {
  Key(w, "knobs");
  w.StartObject();
  Key(w, "preferred_batch_size");
  w.Int(s.preferred_batch_size);
  Key(w, "max_queue_delay_us");
  w.Int64(s.max_queue_delay_us);
  Key(w, "instances");
  w.Int(s.instances);
  w.EndObject();
  Key(w, "observed");
  w.StartObject();
  Key(w, "arrival_rate");
  Number(w, s.arrival_rate);
  Key(w, "latency_ms");
  if (s.observed_latency_ms >= 0) {
    Number(w, s.observed_latency_ms);
  } else {
    w.Null();
  }
  w.EndObject();
}

}  // namespace

std::string AdaptiveStateJson(const serve::AdaptiveState& s) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  Key(w, "model");
  Str(w, s.model);
  Key(w, "version");
  Str(w, std::to_string(s.version));
  WriteObjectives(w, s);
  Key(w, "controller");
  w.Bool(s.controller);
  Key(w, "variant");
  Str(w, s.variant);
  Key(w, "pinned");
  Str(w, s.pinned);
  Key(w, "reason");
  Str(w, s.reason);
  Key(w, "slo_unreachable");
  w.Bool(s.slo_unreachable);
  WriteKnobsAndObserved(w, s);
  Key(w, "variants");
  w.StartArray();
  for (const auto& v : s.variants) WriteVariant(w, v);
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace inferloop::frontends
