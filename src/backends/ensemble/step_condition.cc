#include "backends/ensemble/step_condition.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "backends/processing/tensor_values.h"
#include "base/status_macros.h"

namespace inferloop::backends {
namespace {

const char* const kReduces[] = {"", "max", "min", "mean", "top1_min"};
const char* const kOps[] = {">", ">=", "<", "<=", "==", "!="};

}  // namespace

Status CheckCondition(const StepConditionConfig& c) {
  if (c.tensor().empty()) return Status::InvalidArgument("a condition names no tensor");
  if (std::none_of(std::begin(kReduces), std::end(kReduces), [&](const char* r) { return c.reduce() == r; }))
    return Status::InvalidArgument("condition reduce '" + c.reduce() + "' is not one of max, min, mean, top1_min");
  if (c.has_index() && (c.index() < 0 || c.reduce() == "top1_min"))
    return Status::InvalidArgument("condition index " + std::to_string(c.index()) +
                                   " must be >= 0 and cannot go with reduce top1_min");
  if (std::none_of(std::begin(kOps), std::end(kOps), [&](const char* o) { return c.op() == o; }))
    return Status::InvalidArgument("condition op '" + c.op() + "' is not one of >, >=, <, <=, ==, !=");
  return Status::Ok();
}

Result<bool> EvaluateCondition(const StepConditionConfig& c, const Tensor& t) {
  IL_RETURN_IF_ERROR(CheckCondition(c));
  if (t.size() == 0) return Status::InvalidArgument("condition tensor '" + c.tensor() + "' is empty");
  auto values = NumericValues(t);
  if (!values.ok()) return Status::InvalidArgument("a condition needs a numeric tensor: " + values.status().message());
  std::vector<double> v = std::move(values).value();
  if (c.has_index()) {
    const int64_t row = t.rank() > 0 ? t.dim(t.rank() - 1) : 1;
    if (c.index() >= row)
      return Status::InvalidArgument("condition index " + std::to_string(c.index()) + " is outside the last axis of '" +
                                     c.tensor() + "' (" + std::to_string(row) + ")");
    std::vector<double> picked;
    for (size_t r = 0; r + static_cast<size_t>(row) <= v.size(); r += static_cast<size_t>(row))
      picked.push_back(v[r + static_cast<size_t>(c.index())]);
    v = std::move(picked);
  }
  double x = 0;
  if (c.reduce() == "min") {
    x = *std::min_element(v.begin(), v.end());
  } else if (c.reduce() == "mean") {
    for (double e : v) x += e;
    x /= static_cast<double>(v.size());
  } else if (c.reduce() == "top1_min") {
    const int64_t row = t.rank() > 0 && t.dim(t.rank() - 1) > 0 ? t.dim(t.rank() - 1) : 1;
    x = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r + static_cast<size_t>(row) <= v.size(); r += static_cast<size_t>(row))
      x = std::min(x, *std::max_element(v.begin() + static_cast<std::ptrdiff_t>(r),
                                        v.begin() + static_cast<std::ptrdiff_t>(r + row)));
  } else {
    x = *std::max_element(v.begin(), v.end());
  }
  const double y = c.value();
  const std::string& op = c.op();
  if (op == ">") return x > y;
  if (op == ">=") return x >= y;
  if (op == "<") return x < y;
  if (op == "<=") return x <= y;
  if (op == "==") return x == y;
  return x != y;
}

}  // namespace inferloop::backends
