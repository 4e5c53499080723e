#include "llm/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "base/c_locale_number.h"

namespace inferloop::llm {
namespace {

std::string Num(double x) {
  return FormatGeneralC(x);
}

}  // namespace

Status ValidateSamplingParams(const SamplingParams& p, int64_t vocab) {
  if (!(p.temperature >= 0) || !std::isfinite(p.temperature)) {
    return Status::InvalidArgument("temperature must be >= 0, got " + Num(p.temperature));
  }
  if (p.top_k < 0) return Status::InvalidArgument("top_k must be >= 0, got " + std::to_string(p.top_k));
  if (!(p.top_p > 0 && p.top_p <= 1)) return Status::InvalidArgument("top_p must be in (0, 1], got " + Num(p.top_p));
  if (!(p.min_p >= 0 && p.min_p <= 1)) return Status::InvalidArgument("min_p must be in [0, 1], got " + Num(p.min_p));
  if (!(p.presence_penalty >= -2 && p.presence_penalty <= 2)) {
    return Status::InvalidArgument("presence_penalty must be in [-2, 2], got " + Num(p.presence_penalty));
  }
  if (!(p.frequency_penalty >= -2 && p.frequency_penalty <= 2)) {
    return Status::InvalidArgument("frequency_penalty must be in [-2, 2], got " + Num(p.frequency_penalty));
  }
  if (!(p.repetition_penalty > 0) || !std::isfinite(p.repetition_penalty)) {
    return Status::InvalidArgument("repetition_penalty must be > 0, got " + Num(p.repetition_penalty));
  }
  for (const auto& [t, b] : p.logit_bias) {
    if (t < 0 || (vocab > 0 && t >= vocab)) {
      return Status::InvalidArgument("logit_bias token id " + std::to_string(t) + " is not a token id of this model" +
                                     (vocab > 0 ? " (vocabulary size " + std::to_string(vocab) + ")" : ""));
    }
    if (!(b >= -100 && b <= 100)) {
      return Status::InvalidArgument("logit_bias of token " + std::to_string(t) + " must be in [-100, 100], got " + Num(b));
    }
  }
  return Status::Ok();
}

int32_t ArgMax(std::span<const float> logits) {
  // The first index i with logits[i] > every earlier value (NaN never is, and a NaN at 0 stays the
  // answer), found as: the largest non-NaN value, then its first index. Eight independent maxima
  // instead of one compare chain through the best index: 32000 normal random logits in the L1,
  // -O2, one AMD EPYC Zen 4 core, 2000 calls, 3 alternating runs: 113.5-113.8 -> 9.0-9.4 us.
  const size_t n = logits.size();
  if (n == 0 || std::isnan(logits[0])) return 0;
  const float* x = logits.data();
  float m[8];
  for (float& v : m) v = x[0];
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    #pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) m[k] = x[i + k] > m[k] ? x[i + k] : m[k];
  }
  for (; i < n; ++i) m[0] = x[i] > m[0] ? x[i] : m[0];
  float best = m[0];
  for (float v : m) best = v > best ? v : best;
  size_t at = 0;
  while (!(x[at] == best)) ++at;  // best is one of the values
  return static_cast<int32_t>(at);
}

Sampler::Sampler(const SamplingParams& p, std::span<const int32_t> prompt) : p_(p), rng_(p.seed) {
  penalizes_ = p.presence_penalty != 0 || p.frequency_penalty != 0 || p.repetition_penalty != 1;
  adjusts_ = penalizes_ || !p.logit_bias.empty();
  if (p.repetition_penalty != 1) {
    for (int32_t t : prompt) Touch(t);
  }
}

Sampler::Seen& Sampler::Touch(int32_t token) {
  auto [it, added] = seen_at_.try_emplace(token, seen_.size());
  if (added) seen_.push_back(Seen{token, 0});
  return seen_[it->second];
}

void Sampler::Adjust(std::span<float> logits) const {
  const auto size = static_cast<int64_t>(logits.size());
  for (const auto& [t, b] : p_.logit_bias) {
    if (t >= 0 && t < size) logits[t] += b;
  }
  if (!penalizes_) return;
  const float rep = p_.repetition_penalty;
  for (const Seen& s : seen_) {
    if (s.token < 0 || s.token >= size) continue;
    float& l = logits[s.token];
    if (rep != 1) l = l > 0 ? l / rep : l * rep;
    if (s.generated > 0) l -= p_.presence_penalty + p_.frequency_penalty * static_cast<float>(s.generated);
  }
}

int32_t Sampler::Sample(std::span<const float> logits) {
  if (adjusts_) {
    scratch_.assign(logits.begin(), logits.end());
    Adjust(scratch_);
    logits = scratch_;
  }
  const int32_t chosen = p_.temperature == 0 || logits.size() <= 1 ? ArgMax(logits) : Draw(logits);
  if (penalizes_) ++Touch(chosen).generated;
  return chosen;
}

int32_t Sampler::Draw(std::span<const float> logits) {
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  size_t k = ids.size();
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < k) {
    k = static_cast<size_t>(p_.top_k);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), by_logit);
  } else {
    std::sort(ids.begin(), ids.end(), by_logit);
  }
  std::vector<double> prob(k);
  const double mx = logits[ids[0]];
  double sum = 0;
  for (size_t i = 0; i < k; ++i) {
    prob[i] = std::exp((logits[ids[i]] - mx) / p_.temperature);
    sum += prob[i];
  }
  // Nucleus: the smallest prefix (by probability) whose mass reaches top_p.
  size_t keep = k;
  if (p_.top_p < 1) {
    double acc = 0;
    for (size_t i = 0; i < k; ++i) {
      acc += prob[i] / sum;
      if (acc >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  // Min-p: prob[i] is already relative to the top token's (prob[0] = 1).
  if (p_.min_p > 0) {
    size_t m = 1;
    while (m < keep && prob[m] >= p_.min_p) ++m;
    keep = m;
  }
  double kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += prob[i];
  const double u = std::uniform_real_distribution<double>(0.0, kept)(rng_);
  double acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += prob[i];
    if (u < acc) return ids[i];
  }
  return ids[keep - 1];
}

}  // namespace inferloop::llm
