#include "llm/llm_kernels.h"

#include "base/cpu_features.h"
#include "llm/amx_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace inferloop::llm {
namespace {

// The AVX2 table's instructions: AVX2, FMA, F16C.
bool HasAvx2() {
  const CpuFeatures& f = DetectedCpuFeatures();
  return f.avx2 && f.f16c;
}

// The AVX-512 VNNI table's: those and AVX-512 F, BW, VL, DQ, VNNI.
bool HasAvx512Vnni() {
  const CpuFeatures& f = DetectedCpuFeatures();
  return HasAvx2() && f.avx512 && f.avx512_vnni;
}

// AMX-INT8 with the tile state granted; the AMX products do their decode steps with AVX-512 VNNI.
bool HasAmxInt8() { return HasAvx512Vnni() && DetectedCpuFeatures().amx_int8 && RequestAmxTileState(); }

const LlmKernelTable* Choose() {
  const IsaCap cap = IsaCapFromEnv();
  if (cap >= IsaCap::kAvx512 && HasAvx512Vnni() && Avx512VnniLlmKernels() != nullptr) return Avx512VnniLlmKernels();
  if (cap >= IsaCap::kAvx2 && HasAvx2() && Avx2LlmKernels() != nullptr) return Avx2LlmKernels();
  return ScalarLlmKernels();
}

}  // namespace

void Int8RowStorage::ResizeValues(int64_t rows, int64_t n, int64_t block) {
  n_ = n;
  rows_ = rows;
  q_.resize(rows * n + 64);
  d_.resize(rows * n / block);
}

void Q8Rows::Resize(int64_t rows, int64_t n) {
  ResizeValues(rows, n, 32);
  sum_.resize(rows * n / 32);
  qsum_.resize(rows * n / 32);
  if (n % 64 == 0) {
    lane_nsum_.resize(rows * n / 4);
    lane_d_.resize(rows * n / 4);
    lane_nsum4_.resize(rows * n / 4);
    lane_d4_.resize(rows * n / 4);
    q4_.resize(rows * n + 64);
  }
}

void Q8Rows::Quantize(int64_t r, const float* x) {
  int8_t* q = q_.data() + r * n_;
  float* d = d_.data() + r * n_ / 32;
  ActiveLlmKernels().quantize_q8(x, n_, q, d, sum_.data() + r * n_ / 32);
  int32_t* qs = qsum_.data() + r * n_ / 32;
  for (int64_t b = 0; b < n_ / 32; ++b) {
    int32_t s = 0;
    for (int i = 0; i < 32; ++i) s += q[b * 32 + i];
    qs[b] = s;
  }
  if (n_ % 64 != 0) return;
  int32_t* ns = lane_nsum_.data() + r * n_ / 4;
  float* ld = lane_d_.data() + r * n_ / 4;
  int32_t* ns4 = lane_nsum4_.data() + r * n_ / 4;
  float* ld4 = lane_d4_.data() + r * n_ / 4;
  int8_t* q4 = q4_.data() + r * n_;
  for (int64_t c = 0; c < n_ / 64; ++c) {
    int32_t s[2];
    for (int k = 0; k < 2; ++k) {
      s[k] = 0;
      for (int i = 0; i < 32; ++i) s[k] += q[c * 64 + k * 32 + i];
    }
    for (int l = 0; l < 16; ++l) {
      ns[c * 16 + l] = -s[l / 8];
      ld[c * 16 + l] = d[c * 2 + l / 8];
      ns4[c * 16 + l] = -s[(l / 4) % 2];
      ld4[c * 16 + l] = d[c * 2 + (l / 4) % 2];
    }
    // [b0 0-15, b1 0-15, b0 16-31, b1 16-31]
    for (int i = 0; i < 16; ++i) {
      q4[c * 64 + i] = q[c * 64 + i];
      q4[c * 64 + 16 + i] = q[c * 64 + 32 + i];
      q4[c * 64 + 32 + i] = q[c * 64 + 16 + i];
      q4[c * 64 + 48 + i] = q[c * 64 + 48 + i];
    }
  }
}

Q8Row Q8Rows::Row(int64_t r) const {
  Q8Row row{q_.data() + r * n_, d_.data() + r * n_ / 32, sum_.data() + r * n_ / 32, qsum_.data() + r * n_ / 32};
  if (n_ % 64 == 0) {
    row.lane_nsum = lane_nsum_.data() + r * n_ / 4;
    row.lane_d = lane_d_.data() + r * n_ / 4;
    row.lane_nsum4 = lane_nsum4_.data() + r * n_ / 4;
    row.lane_d4 = lane_d4_.data() + r * n_ / 4;
    row.q4 = q4_.data() + r * n_;
  }
  return row;
}

void Q8KRows::Resize(int64_t rows, int64_t n) {
  ResizeValues(rows, n, 256);
  bsum_.resize(rows * n / 16);
  bsum32_.resize(rows * n / 32);
}

void Q8KRows::Quantize(int64_t r, const float* x) {
  int16_t* bsum = bsum_.data() + r * n_ / 16;
  ActiveLlmKernels().quantize_q8_k(x, n_, q_.data() + r * n_, d_.data() + r * n_ / 256, bsum);
  // The 32-value sums, as Q4KAddBlock's vphaddw forms them (the Q4_K group tiles' mins).
  int16_t* bsum32 = bsum32_.data() + r * n_ / 32;
  for (int64_t i = 0; i < n_ / 32; ++i) bsum32[i] = static_cast<int16_t>(bsum[2 * i] + bsum[2 * i + 1]);
}

bool AmxAvailable() {
  // INFERLOOP_ISA set to any of its levels turns AMX off.
  static const bool available = IsaCapFromEnv() == IsaCap::kNone && HasAmxInt8();
  return available;
}

const LlmKernelTable& ActiveLlmKernels() {
  static const LlmKernelTable* table = Choose();
  return *table;
}

std::vector<const LlmKernelTable*> AvailableLlmKernels() {
  std::vector<const LlmKernelTable*> v;
  if (HasAvx512Vnni() && Avx512VnniLlmKernels() != nullptr) v.push_back(Avx512VnniLlmKernels());
  if (HasAvx2() && Avx2LlmKernels() != nullptr) v.push_back(Avx2LlmKernels());
  v.push_back(ScalarLlmKernels());
  return v;
}

}  // namespace inferloop::llm
