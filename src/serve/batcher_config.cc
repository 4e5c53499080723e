#include "serve/batcher_config.h"

#include <algorithm>

namespace inferloop::serve {

namespace {

QueuePolicy ToQueuePolicy(const configpb::ModelQueuePolicy& p) {
  QueuePolicy q;
  q.max_queue_size = p.max_queue_size();
  q.default_timeout = std::chrono::microseconds(p.default_timeout_microseconds());
  q.allow_timeout_override = p.allow_timeout_override();
  q.timeout_action =
      p.timeout_action() == configpb::ModelQueuePolicy::DELAY ? TimeoutAction::kDelay : TimeoutAction::kReject;
  return q;
}

}  // namespace

// The batcher's options from the completed config: dynamic batching and its queue policies,
// one worker per instance of the instance groups (at least one).
BatcherOptions BatcherOptionsOf(const std::string& model_name, int64_t version, const ModelConfig& c) {
  BatcherOptions bo;
  bo.name = model_name + ":" + std::to_string(version);
  if (c.has_dynamic_batching()) {
    const auto& db = c.dynamic_batching();
    bo.max_batch_size = c.max_batch_size();
    for (int p : db.preferred_batch_size()) bo.preferred_batch_sizes.push_back(p);
    bo.max_queue_delay = std::chrono::microseconds(db.max_queue_delay_microseconds());
    bo.priority_levels = db.priority_levels() > 0 ? static_cast<uint32_t>(db.priority_levels()) : 1;
    bo.default_priority_level =
        db.default_priority_level() > 0 ? static_cast<uint32_t>(db.default_priority_level()) : bo.priority_levels;
    if (db.priority_levels() == 0) bo.default_priority_level = 1;
    bo.default_policy = ToQueuePolicy(db.default_queue_policy());
    for (const auto& [level, policy] : db.priority_queue_policy())
      bo.level_policies[static_cast<uint32_t>(level)] = ToQueuePolicy(policy);
  }
  int instances = 0;
  for (const auto& g : c.instance_group()) instances += std::max(1, g.count());
  bo.instance_count = std::max(1, instances);
  return bo;
}

}  // namespace inferloop::serve
