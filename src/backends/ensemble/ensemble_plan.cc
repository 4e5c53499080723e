#include "backends/ensemble/ensemble_plan.h"

#include <set>

#include "backends/ensemble/step_condition.h"
#include "base/status_macros.h"

namespace inferloop::backends {
namespace {

using serve::ModelConfig;

// What is known of a tensor where it is produced or read.
struct TensorType {
  serve::ConfigDataType dtype = serve::configpb::TYPE_INVALID;
  std::vector<int64_t> dims;  // without the batch dimension
  std::string where;
};

template <typename List>
bool FindTensor(const List& list, const std::string& name, const std::string& where, TensorType* out) {
  for (const auto& t : list) {
    if (t.name() != name) continue;
    *out = {t.data_type(), std::vector<int64_t>(t.dims().begin(), t.dims().end()), where};
    return true;
  }
  return false;
}

Status CheckSameType(const std::string& tensor, const TensorType& produced, const TensorType& read) {
  if (produced.dtype != serve::configpb::TYPE_INVALID && read.dtype != serve::configpb::TYPE_INVALID &&
      produced.dtype != read.dtype)
    return Status::InvalidArgument("tensor '" + tensor + "' is " + serve::ConfigDataTypeName(produced.dtype) + " at " +
                                   produced.where + " but " + serve::ConfigDataTypeName(read.dtype) + " at " + read.where);
  if (produced.dims.empty() || read.dims.empty()) return Status::Ok();
  bool same = produced.dims.size() == read.dims.size();
  for (size_t i = 0; same && i < produced.dims.size(); ++i)
    same = produced.dims[i] < 0 || read.dims[i] < 0 || produced.dims[i] == read.dims[i];
  if (!same) {
    auto str = [](const std::vector<int64_t>& d) {
      std::string s = "[";
      for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
      return s + "]";
    };
    return Status::InvalidArgument("tensor '" + tensor + "' has dims " + str(produced.dims) + " at " + produced.where +
                                   " but " + str(read.dims) + " at " + read.where);
  }
  return Status::Ok();
}

Status StepError(const EnsembleStep& s, const std::string& what) {
  return Status::InvalidArgument("ensemble " + s.label + ": " + what);
}

// Steps in an order where each comes after those it reads from; InvalidArgument naming a step on
// a cycle.
Status CheckAcyclic(const EnsemblePlan& plan) {
  std::vector<int> state(plan.steps.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<int, size_t>> stack;
  for (size_t root = 0; root < plan.steps.size(); ++root) {
    if (state[root]) continue;
    stack.push_back({static_cast<int>(root), 0});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      if (next < plan.steps[i].after.size()) {
        const int d = plan.steps[i].after[next++];
        if (state[d] == 1) return StepError(plan.steps[d], "is on a cycle (it reads, through other steps, what it produces)");
        if (state[d] == 0) {
          state[d] = 1;
          stack.push_back({d, 0});
        }
      } else {
        state[i] = 2;
        stack.pop_back();
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<EnsemblePlan> PlanEnsemble(const ModelConfig& config, serve::ModelResolver& models) {
  EnsemblePlan plan;
  std::map<std::string, TensorType> produced;
  plan.producer[kTraceTensor] = -1;
  produced[kTraceTensor] = {serve::configpb::TYPE_STRING, {}, "the ensemble's trace"};
  for (const auto& in : config.input()) {
    plan.producer[in.name()] = -1;
    produced[in.name()] = {in.data_type(), std::vector<int64_t>(in.dims().begin(), in.dims().end()),
                           "ensemble input '" + in.name() + "'"};
  }
  const auto& cfg_steps = config.ensemble_scheduling().step();
  if (cfg_steps.empty()) return Status::InvalidArgument("ensemble_scheduling has no step");
  std::vector<std::shared_ptr<serve::ModelVersion>> versions;
  // Pass 1: each step's model, maps and outputs.
  for (int i = 0; i < cfg_steps.size(); ++i) {
    const auto& c = cfg_steps[i];
    EnsembleStep s;
    s.label = "step " + std::to_string(i + 1) + " (" + c.model_name() + ")";
    s.model = c.model_name();
    s.version = c.model_version();
    s.input_map.insert(c.input_map().begin(), c.input_map().end());
    s.output_map.insert(c.output_map().begin(), c.output_map().end());
    s.conditions.assign(c.condition().begin(), c.condition().end());
    s.skipped_value.insert(c.skipped_value().begin(), c.skipped_value().end());
    if (!c.model_namespace().empty()) return StepError(s, "model_namespace is not supported");
    if (s.model.empty()) return StepError(s, "model_name is empty");
    auto v = models.Find(s.model, s.version);
    if (!v.ok()) return StepError(s, "model '" + s.model + "' is not served (" + v.status().message() + ")");
    const ModelConfig& mc = v.value()->config();
    for (const auto& [model_out, tensor] : s.output_map) {
      TensorType t;
      if (!FindTensor(mc.output(), model_out, s.label + " output '" + model_out + "'", &t))
        return StepError(s, "model '" + s.model + "' has no output '" + model_out + "'");
      if (plan.producer.count(tensor))
        return StepError(s, "tensor '" + tensor + "' is produced twice (also by " +
                                (plan.producer[tensor] < 0 ? std::string("the ensemble's inputs")
                                                           : plan.steps[plan.producer[tensor]].label) + ")");
      plan.producer[tensor] = i;
      produced[tensor] = t;
    }
    for (const auto& entry : s.skipped_value) {
      const std::string& tensor = entry.first;
      if (std::none_of(s.output_map.begin(), s.output_map.end(), [&](const auto& kv) { return kv.second == tensor; }))
        return StepError(s, "skipped_value names '" + tensor + "', which this step does not produce");
    }
    versions.push_back(std::move(v).value());
    plan.steps.push_back(std::move(s));
  }
  // Pass 2: what each step reads, its types, and the order.
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    EnsembleStep& s = plan.steps[i];
    const ModelConfig& mc = versions[i]->config();
    s.model_batches = mc.max_batch_size() > 0;
    std::set<int> after;
    auto reads = [&](const std::string& tensor) -> Status {
      auto p = plan.producer.find(tensor);
      if (p == plan.producer.end())
        return StepError(s, "reads tensor '" + tensor + "', which is neither an ensemble input nor a step's output");
      if (p->second >= 0) after.insert(p->second);
      return Status::Ok();
    };
    for (const auto& [model_in, tensor] : s.input_map) {
      TensorType t;
      if (!FindTensor(mc.input(), model_in, s.label + " input '" + model_in + "'", &t))
        return StepError(s, "model '" + s.model + "' has no input '" + model_in + "'");
      IL_RETURN_IF_ERROR(reads(tensor));
      if (Status st = CheckSameType(tensor, produced[tensor], t); !st.ok()) return StepError(s, st.message());
      for (const auto& in : mc.input())
        if (in.name() == model_in && in.optional()) s.optional_inputs.push_back(model_in);
    }
    for (const auto& c : s.conditions) {
      IL_RETURN_IF_ERROR(reads(c.tensor()));
      if (Status st = CheckCondition(c); !st.ok()) return StepError(s, st.message());
    }
    s.after.assign(after.begin(), after.end());
  }
  IL_RETURN_IF_ERROR(CheckAcyclic(plan));
  for (const auto& out : config.output()) {
    auto p = plan.producer.find(out.name());
    if (p == plan.producer.end() || p->second < 0)
      return Status::InvalidArgument("ensemble output '" + out.name() + "' is produced by no step");
    TensorType t{out.data_type(), std::vector<int64_t>(out.dims().begin(), out.dims().end()),
                 "ensemble output '" + out.name() + "'"};
    if (Status st = CheckSameType(out.name(), produced[out.name()], t); !st.ok())
      return StepError(plan.steps[p->second], st.message());
  }
  return plan;
}

}  // namespace inferloop::backends
