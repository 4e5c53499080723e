// Conditional ensemble steps: reduce(tensor) op value, as docs/PIPELINES.md defines it, on
// tensors whose answers are worked out by hand.
#include "backends/ensemble/step_condition.h"

#include <gtest/gtest.h>

namespace inferloop::backends {
namespace {

StepConditionConfig Cond(const std::string& reduce, const std::string& op, double value, int64_t index = -1) {
  StepConditionConfig c;
  c.set_tensor("t");
  c.set_reduce(reduce);
  c.set_op(op);
  c.set_value(value);
  if (index >= 0) c.set_index(index);
  return c;
}

bool Holds(const StepConditionConfig& c, const Tensor& t) {
  auto r = EvaluateCondition(c, t);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() && *r;
}

TEST(StepCondition, ReducesAndCompares) {
  // Two rows of class probabilities: top-1 0.7 and 0.95; class 1: 0.7 and 0.05.
  const Tensor probs = Tensor::FromVector<float>(DataType::kFloat, {2, 2}, {0.3f, 0.7f, 0.95f, 0.05f});
  EXPECT_TRUE(Holds(Cond("max", ">=", 0.95f), probs));  // the float 0.95 itself
  EXPECT_FALSE(Holds(Cond("max", ">", 0.95f), probs));
  EXPECT_TRUE(Holds(Cond("", ">", 0.9), probs));  // max is the default
  EXPECT_TRUE(Holds(Cond("min", "==", 0.05f), probs));
  EXPECT_TRUE(Holds(Cond("mean", "<", 0.5001), probs));
  EXPECT_TRUE(Holds(Cond("top1_min", "<", 0.9), probs));   // row 0's top-1 is 0.7
  EXPECT_FALSE(Holds(Cond("top1_min", "<", 0.6), probs));
  EXPECT_TRUE(Holds(Cond("max", ">=", 0.5, 1), probs));     // class 1: 0.7 in row 0
  EXPECT_FALSE(Holds(Cond("min", ">=", 0.5, 1), probs));    // 0.05 in row 1
  EXPECT_TRUE(Holds(Cond("max", "!=", 0.3, 0), probs));
  // Integer and boolean tensors too.
  EXPECT_TRUE(Holds(Cond("max", "==", 3), Tensor::FromVector<int64_t>(DataType::kInt64, {3}, {1, 3, 2})));
}

TEST(StepCondition, RefusesWhatCannotBeEvaluated) {
  EXPECT_FALSE(CheckCondition(Cond("median", ">", 0)).ok());
  EXPECT_FALSE(CheckCondition(Cond("max", "=>", 0)).ok());
  EXPECT_FALSE(CheckCondition(Cond("top1_min", "<", 0.5, 1)).ok());
  const Tensor probs = Tensor::FromVector<float>(DataType::kFloat, {1, 2}, {0.3f, 0.7f});
  auto out_of_range = EvaluateCondition(Cond("max", ">", 0, 2), probs);
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.status().message().find("index 2"), std::string::npos);
  auto strings = EvaluateCondition(Cond("max", ">", 0), Tensor::FromStrings({1}, {"x"}));
  EXPECT_FALSE(strings.ok());
  auto empty = EvaluateCondition(Cond("max", ">", 0), Tensor::FromVector<float>(DataType::kFloat, {0}, {}));
  EXPECT_FALSE(empty.ok());
}

}  // namespace
}  // namespace inferloop::backends
