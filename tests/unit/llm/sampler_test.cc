// The sampler's logit adjustments (logit_bias, repetition, presence and frequency penalties) and
// min-p, against values computed by hand from the documented formulas (sampler.h).
#include "llm/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace inferloop::llm {
namespace {

std::vector<float> Adjusted(const Sampler& s, std::vector<float> logits) {
  s.Adjust(logits);
  return logits;
}

TEST(SamplerPenalties, MatchTheFormulasStepByStep) {
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  p.logit_bias = {{4, 1.0f}};
  const std::vector<int32_t> prompt = {0, 1};
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, -0.5f};
  Sampler s(p, prompt);
  ASSERT_TRUE(s.adjusts());
  // Nothing generated yet: bias on 4 (-0.5 + 1), repetition on the prompt's 0 (2 / 2) and 1 (-1 * 2).
  EXPECT_EQ(Adjusted(s, logits), (std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f, 0.5f}));
  EXPECT_EQ(s.Sample(logits), 3);
  // 3 generated once: 3 / 2 - (0.5 + 0.25 * 1) = 0.75.
  EXPECT_EQ(Adjusted(s, logits), (std::vector<float>{1.0f, -2.0f, 0.5f, 0.75f, 0.5f}));
  EXPECT_EQ(s.Sample(logits), 0);
  // 0 (a prompt token) generated once: 2 / 2 - 0.75 = 0.25.
  EXPECT_EQ(Adjusted(s, logits), (std::vector<float>{0.25f, -2.0f, 0.5f, 0.75f, 0.5f}));
  EXPECT_EQ(s.Sample(logits), 3);
  // 3 generated twice: 1.5 - (0.5 + 0.25 * 2) = 0.5; ties go to the lowest id.
  EXPECT_EQ(Adjusted(s, logits), (std::vector<float>{0.25f, -2.0f, 0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(s.Sample(logits), 2);
  // The caller's logits are never modified.
  EXPECT_EQ(logits, (std::vector<float>{2.0f, -1.0f, 0.5f, 3.0f, -0.5f}));
}

TEST(SamplerPenalties, NegativeValuesEncourageRepeats) {
  SamplingParams p;
  p.temperature = 0;
  p.presence_penalty = -1;
  p.frequency_penalty = -0.5f;
  Sampler s(p);
  const std::vector<float> logits = {1.0f, 1.5f};
  EXPECT_EQ(s.Sample(logits), 1);
  // 1 generated once: 1.5 + 1 + 0.5 = 3; the prompt is not penalised by presence/frequency.
  EXPECT_EQ(Adjusted(s, logits), (std::vector<float>{1.0f, 3.0f}));
  // Repetition penalty < 1 raises a positive logit (1 / 0.5 = 2) and lowers a negative one.
  SamplingParams r;
  r.repetition_penalty = 0.5f;
  Sampler t(r, std::vector<int32_t>{0, 1, 1});
  EXPECT_EQ(Adjusted(t, {1.0f, -2.0f, 4.0f}), (std::vector<float>{2.0f, -1.0f, 4.0f}));
}

TEST(SamplerPenalties, NeutralValuesChangeNothing) {
  SamplingParams p;
  p.temperature = 1;
  p.top_k = 0;
  p.top_p = 1;
  p.seed = 7;
  SamplingParams q = p;
  q.presence_penalty = 0;
  q.frequency_penalty = 0;
  q.repetition_penalty = 1;
  Sampler a(p), b(q, std::vector<int32_t>{0, 1, 2});
  EXPECT_FALSE(b.adjusts());
  const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.25f};
  for (int i = 0; i < 500; ++i) ASSERT_EQ(a.Sample(logits), b.Sample(logits));
}

TEST(SamplerMinP, KeepsTokensWithinTheRatioOfTheBest) {
  // Probabilities relative to the best token at temperature 1: 1, 0.5, 0.05.
  const std::vector<float> logits = {0.0f, std::log(0.5f), std::log(0.05f)};
  SamplingParams p;
  p.temperature = 1;
  p.top_k = 0;
  p.top_p = 1;
  p.min_p = 0.1f;
  Sampler s(p);
  int counts[3] = {};
  for (int i = 0; i < 3000; ++i) ++counts[s.Sample(logits)];
  EXPECT_EQ(counts[2], 0);
  EXPECT_GT(counts[0], 1500);  // 1 / 1.5 of the kept mass
  EXPECT_GT(counts[1], 700);   // 0.5 / 1.5
  p.min_p = 0.6f;
  Sampler only_best(p);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(only_best.Sample(logits), 0);
  // Without min-p the third token appears (0.05 / 1.55 of the draws).
  p.min_p = 0;
  Sampler all(p);
  int third = 0;
  for (int i = 0; i < 3000; ++i) third += all.Sample(logits) == 2;
  EXPECT_GT(third, 20);
}

TEST(SamplerPenalties, ValidationNamesTheParameter) {
  auto message = [](auto set) {
    SamplingParams p;
    set(p);
    const Status st = ValidateSamplingParams(p, 100);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    return st.message();
  };
  EXPECT_NE(message([](SamplingParams& p) { p.presence_penalty = 2.5f; }).find("presence_penalty"), std::string::npos);
  EXPECT_NE(message([](SamplingParams& p) { p.frequency_penalty = -2.5f; }).find("frequency_penalty"), std::string::npos);
  EXPECT_NE(message([](SamplingParams& p) { p.repetition_penalty = 0; }).find("repetition_penalty"), std::string::npos);
  EXPECT_NE(message([](SamplingParams& p) { p.min_p = 1.5f; }).find("min_p"), std::string::npos);
  EXPECT_NE(message([](SamplingParams& p) { p.logit_bias = {{100, 1}}; }).find("vocabulary size 100"), std::string::npos);
  EXPECT_NE(message([](SamplingParams& p) { p.logit_bias = {{3, 101}}; }).find("logit_bias"), std::string::npos);
  SamplingParams edge;
  edge.presence_penalty = -2;
  edge.frequency_penalty = 2;
  edge.min_p = 1;
  edge.logit_bias = {{99, -100}};
  EXPECT_TRUE(ValidateSamplingParams(edge, 100).ok());
}

}  // namespace
}  // namespace inferloop::llm
