// Registration of the signal kernel family: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow,
// MelWeightMatrix, TfIdfVectorizer.
//
// The FFT is our own: iterative radix-2 for power-of-two lengths and Bluestein's chirp-z
// algorithm (via a power-of-two FFT) for any other length, both O(n log n), computed in double.
#include <algorithm>
#include <cmath>
#include <complex>
#include <map>
#include <numbers>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/image_common.h"

namespace inferloop {
namespace {

using namespace image_internal;
using cd = std::complex<double>;

// ---------------------------------------------------------------------------------------------
// FFT

// Power-of-two FFT with precomputed twiddles and bit reversal.
class Radix2 {
 public:
  explicit Radix2(size_t n) : n_(n), rev_(n), tw_(n / 2) {
    int bits = 0;
    while ((size_t{1} << bits) < n) ++bits;
    for (size_t i = 0; i < n; ++i) {
      size_t r = 0;
      for (int b = 0; b < bits; ++b)
        if (i & (size_t{1} << b)) r |= size_t{1} << (bits - 1 - b);
      rev_[i] = r;
    }
    for (size_t k = 0; k < n / 2; ++k) {
      const double a = -2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
      tw_[k] = cd(std::cos(a), std::sin(a));
    }
  }
  // In-place forward transform (exponent sign -1); inverse = conjugate trick, unnormalized.
  void Forward(cd* a) const {
    for (size_t i = 0; i < n_; ++i)
      if (i < rev_[i]) std::swap(a[i], a[rev_[i]]);
    for (size_t len = 2; len <= n_; len <<= 1) {
      const size_t half = len / 2, step = n_ / len;
      for (size_t i = 0; i < n_; i += len)
        for (size_t j = 0; j < half; ++j) {
          const cd u = a[i + j], v = a[i + j + half] * tw_[j * step];
          a[i + j] = u + v;
          a[i + j + half] = u - v;
        }
    }
  }
  size_t size() const { return n_; }

 private:
  size_t n_;
  std::vector<size_t> rev_;
  std::vector<cd> tw_;
};

// Any-length DFT plan: radix-2 directly, Bluestein otherwise.
class FftPlan {
 public:
  explicit FftPlan(size_t n) : n_(n) {
    if (n <= 1) return;
    if ((n & (n - 1)) == 0) {
      r2_ = std::make_unique<Radix2>(n);
      return;
    }
    size_t m = 1;
    while (m < 2 * n - 1) m <<= 1;
    r2_ = std::make_unique<Radix2>(m);
    chirp_.resize(n);
    for (size_t k = 0; k < n; ++k) {
      // exp(-i pi k^2 / n), with k^2 reduced mod 2n for accuracy.
      const size_t k2 = static_cast<size_t>((static_cast<unsigned __int128>(k) * k) % (2 * n));
      const double a = -std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n);
      chirp_[k] = cd(std::cos(a), std::sin(a));
    }
    filt_.assign(m, cd(0, 0));
    filt_[0] = std::conj(chirp_[0]);
    for (size_t k = 1; k < n; ++k) filt_[k] = filt_[m - k] = std::conj(chirp_[k]);
    r2_->Forward(filt_.data());
  }

  // In-place DFT of a[0..n). inverse: exponent sign +1 (no 1/n scaling). work: scratch buffer.
  void Run(cd* a, bool inverse, std::vector<cd>& work) const {
    if (n_ <= 1) return;
    if (inverse)
      for (size_t i = 0; i < n_; ++i) a[i] = std::conj(a[i]);
    if (chirp_.empty()) {
      r2_->Forward(a);
    } else {
      const size_t m = r2_->size();
      work.assign(m, cd(0, 0));
      for (size_t k = 0; k < n_; ++k) work[k] = a[k] * chirp_[k];
      r2_->Forward(work.data());
      for (size_t i = 0; i < m; ++i) work[i] = std::conj(work[i] * filt_[i]);
      r2_->Forward(work.data());  // inverse FFT via conjugation
      const double inv_m = 1.0 / static_cast<double>(m);
      for (size_t k = 0; k < n_; ++k) a[k] = std::conj(work[k]) * inv_m * chirp_[k];
    }
    if (inverse)
      for (size_t i = 0; i < n_; ++i) a[i] = std::conj(a[i]);
  }

 private:
  size_t n_;
  std::unique_ptr<Radix2> r2_;
  std::vector<cd> chirp_, filt_;
};

bool IsFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

constexpr int64_t kMaxFftLength = int64_t{1} << 28;

// ---------------------------------------------------------------------------------------------
// DFT

struct DftConfig {
  bool inverse = false, onesided = false;
  bool axis_is_input = false;  // opset 20+
  int64_t axis_attr = 1;
};

Status DftCompute(KernelContext& ctx, const DftConfig& cfg) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  if (!IsFloatType(x->dtype())) return UnsupportedType("DFT", x->dtype());
  const int r = x->rank();
  if (r < 2) return ctx.Invalid("expected input of rank >= 2, got shape " + ShapeToString(x->shape()));
  const int64_t cin = x->dim(r - 1);
  if (cin != 1 && cin != 2) return ctx.Invalid("expected last dimension 1 (real) or 2 (complex), got " + std::to_string(cin));
  int64_t axis = cfg.axis_attr;
  if (cfg.axis_is_input) {
    axis = -2;
    if (const Tensor* at = ctx.input(2); at && at->size() > 0) {
      IL_ASSIGN_OR_RETURN(axis, ReadScalarInt(*at, "DFT axis"));
    }
  }
  if (axis < -r || axis > r - 2 || axis == -1)
    return ctx.Invalid("axis " + std::to_string(axis) + " is out of range for input of rank " + std::to_string(r));
  if (axis < 0) axis += r;
  const int64_t L = x->dim(static_cast<int>(axis));
  const bool irfft = cfg.inverse && cfg.onesided;
  int64_t n = irfft ? 2 * (L - 1) : L;
  if (const Tensor* lt = ctx.input(1); lt && lt->size() > 0) {
    IL_ASSIGN_OR_RETURN(n, ReadScalarInt(*lt, "DFT dft_length"));
    if (n <= 0) return ctx.Invalid("dft_length must be positive, got " + std::to_string(n));
  }
  if (n <= 0) return ctx.Invalid("the DFT length must be positive, got " + std::to_string(n));
  if (n > kMaxFftLength) return ctx.Invalid("dft_length " + std::to_string(n) + " is too large");
  const int64_t out_len = irfft ? n : (cfg.onesided ? n / 2 + 1 : n);
  const int64_t cout = irfft ? 1 : 2;
  Shape out_shape = x->shape();
  out_shape[axis] = out_len;
  out_shape[r - 1] = cout;
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(x->dtype(), out_shape));
  if (out.size() == 0) {
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= x->dim(i);
  for (int i = static_cast<int>(axis) + 1; i < r - 1; ++i) inner *= x->dim(i);

  // Input and output in double.
  std::vector<double> in(static_cast<size_t>(x->size()));
  IL_RETURN_IF_ERROR(ConvertToCompute<double>(*x, in.data(), "DFT"));
  std::vector<double> res(static_cast<size_t>(out.size()));
  FftPlan plan(static_cast<size_t>(n));
  std::vector<cd> buf(static_cast<size_t>(n)), work;
  const int64_t in_len_used = irfft ? std::min<int64_t>(L, n / 2 + 1) : std::min<int64_t>(L, n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      std::fill(buf.begin(), buf.end(), cd(0, 0));
      const double* src = in.data() + (o * L * inner + i) * cin;
      for (int64_t k = 0; k < in_len_used; ++k) {
        const double* p = src + k * inner * cin;
        buf[k] = cd(p[0], cin == 2 ? p[1] : 0.0);
      }
      if (irfft) {
        // Hermitian extension of the one-sided spectrum (imaginary parts of DC / Nyquist ignored).
        buf[0] = cd(buf[0].real(), 0);
        for (int64_t k = 1; k < (n + 1) / 2; ++k) buf[n - k] = std::conj(buf[k]);
        if (n % 2 == 0) buf[n / 2] = cd(buf[n / 2].real(), 0);
      }
      plan.Run(buf.data(), cfg.inverse, work);
      const double scale = cfg.inverse ? 1.0 / static_cast<double>(n) : 1.0;
      double* dst = res.data() + (o * out_len * inner + i) * cout;
      for (int64_t k = 0; k < out_len; ++k) {
        double* p = dst + k * inner * cout;
        p[0] = buf[k].real() * scale;
        if (cout == 2) p[1] = buf[k].imag() * scale;
      }
    }
  }
  IL_RETURN_IF_ERROR(StoreFromCompute<double>(res.data(), out, "DFT"));
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// STFT

Status StftCompute(KernelContext& ctx, bool onesided) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* step_t, ctx.RequireInput(1));
  if (!IsFloatType(x->dtype())) return UnsupportedType("STFT", x->dtype());
  if (x->rank() != 3 || (x->dim(2) != 1 && x->dim(2) != 2))
    return ctx.Invalid("expected signal of shape [batch, length, 1 or 2], got " + ShapeToString(x->shape()));
  const int64_t B = x->dim(0), L = x->dim(1), cin = x->dim(2);
  IL_ASSIGN_OR_RETURN(int64_t step, ReadScalarInt(*step_t, "STFT frame_step"));
  if (step <= 0) return ctx.Invalid("frame_step must be positive, got " + std::to_string(step));
  const Tensor* win = ctx.input(2);
  if (win && win->size() == 0 && win->rank() != 1) win = nullptr;
  int64_t flen = -1;
  if (const Tensor* fl = ctx.input(3); fl && fl->size() > 0) {
    IL_ASSIGN_OR_RETURN(flen, ReadScalarInt(*fl, "STFT frame_length"));
    if (flen <= 0) return ctx.Invalid("frame_length must be positive, got " + std::to_string(flen));
  }
  std::vector<double> window;
  if (win) {
    if (win->rank() != 1) return ctx.Invalid("expected a 1-D window, got shape " + ShapeToString(win->shape()));
    if (flen >= 0 && win->dim(0) != flen)
      return ctx.Invalid("window length " + std::to_string(win->dim(0)) + " does not match frame_length " + std::to_string(flen));
    flen = win->dim(0);
    IL_ASSIGN_OR_RETURN(window, ReadDoubles(*win, "STFT window"));
  }
  if (flen < 0) flen = L;
  if (flen <= 0) return ctx.Invalid("frame length must be positive");
  if (flen > L) return ctx.Invalid("frame_length " + std::to_string(flen) + " exceeds the signal length " + std::to_string(L));
  if (flen > kMaxFftLength) return ctx.Invalid("frame_length " + std::to_string(flen) + " is too large");
  if (window.empty()) window.assign(static_cast<size_t>(flen), 1.0);
  const int64_t frames = 1 + (L - flen) / step;
  const int64_t bins = onesided ? flen / 2 + 1 : flen;
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(x->dtype(), {B, frames, bins, 2}));
  if (out.size() == 0) {
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }
  std::vector<double> in(static_cast<size_t>(x->size()));
  IL_RETURN_IF_ERROR(ConvertToCompute<double>(*x, in.data(), "STFT"));
  std::vector<double> res(static_cast<size_t>(out.size()));
  FftPlan plan(static_cast<size_t>(flen));
  std::vector<cd> buf(static_cast<size_t>(flen)), work;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      const double* src = in.data() + (b * L + f * step) * cin;
      for (int64_t k = 0; k < flen; ++k)
        buf[k] = cd(src[k * cin], cin == 2 ? src[k * cin + 1] : 0.0) * window[k];
      plan.Run(buf.data(), false, work);
      double* dst = res.data() + ((b * frames + f) * bins) * 2;
      for (int64_t k = 0; k < bins; ++k) {
        dst[2 * k] = buf[k].real();
        dst[2 * k + 1] = buf[k].imag();
      }
    }
  IL_RETURN_IF_ERROR(StoreFromCompute<double>(res.data(), out, "STFT"));
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Window functions and MelWeightMatrix: generated values stored as output_datatype
// (integers by truncation, like numpy's astype).

bool IsGeneratorOutputType(DataType t) {
  if (IsFloatType(t)) return true;
  switch (t) {
    case DataType::kInt8: case DataType::kInt16: case DataType::kInt32: case DataType::kInt64:
    case DataType::kUInt8: case DataType::kUInt16: case DataType::kUInt32: case DataType::kUInt64:
      return true;
    default:
      return false;
  }
}

Status StoreTruncating(const std::vector<double>& v, Tensor& out) {
  switch (out.dtype()) {
    case DataType::kFloat: case DataType::kDouble: case DataType::kFloat16: case DataType::kBFloat16:
      return StoreFromCompute<double>(v.data(), out, "window");
    default:
      return DispatchInteger(out.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        for (size_t i = 0; i < v.size(); ++i) {
          const double t = std::trunc(v[i]);
          out.data<T>()[i] = std::isnan(t) ? T(0)
                             : t <= static_cast<double>(std::numeric_limits<T>::lowest()) ? std::numeric_limits<T>::lowest()
                             : t >= static_cast<double>(std::numeric_limits<T>::max())    ? std::numeric_limits<T>::max()
                                                                                          : static_cast<T>(t);
        }
        return Status::Ok();
      });
  }
}

enum class WindowKind { kHann, kHamming, kBlackman };

Status WindowCompute(KernelContext& ctx, WindowKind kind, bool periodic, DataType dt) {
  IL_ASSIGN_OR_RETURN(const Tensor* st, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(int64_t size, ReadScalarInt(*st, "window size"));
  if (size < 0) return ctx.Invalid("size must be non-negative, got " + std::to_string(size));
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(dt, {size}));
  std::vector<double> v(static_cast<size_t>(size));
  const double N = static_cast<double>(periodic ? size : size - 1);
  const double pi = std::numbers::pi;
  for (int64_t i = 0; i < size; ++i) {
    const double n = static_cast<double>(i);
    if (N == 0) {
      v[i] = 1.0;  // a one-point symmetric window
      continue;
    }
    switch (kind) {
      case WindowKind::kHann: {
        const double s = std::sin(pi * n / N);
        v[i] = s * s;
        break;
      }
      case WindowKind::kHamming: {
        const double alpha = 25.0 / 46.0;
        v[i] = alpha - (1 - alpha) * std::cos(2 * pi * n / N);
        break;
      }
      case WindowKind::kBlackman:
        v[i] = 0.42 - 0.5 * std::cos(2 * pi * n / N) + 0.08 * std::cos(4 * pi * n / N);
        break;
    }
  }
  IL_RETURN_IF_ERROR(StoreTruncating(v, out));
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

Status MelCompute(KernelContext& ctx, DataType dt) {
  int64_t ints[3];
  const char* names[3] = {"num_mel_bins", "dft_length", "sample_rate"};
  for (int i = 0; i < 3; ++i) {
    IL_ASSIGN_OR_RETURN(const Tensor* t, ctx.RequireInput(i));
    IL_ASSIGN_OR_RETURN(ints[i], ReadScalarInt(*t, names[i]));
  }
  IL_ASSIGN_OR_RETURN(const Tensor* lo_t, ctx.RequireInput(3));
  IL_ASSIGN_OR_RETURN(const Tensor* hi_t, ctx.RequireInput(4));
  IL_ASSIGN_OR_RETURN(double lower, ReadScalarDouble(*lo_t, "lower_edge_hertz"));
  IL_ASSIGN_OR_RETURN(double upper, ReadScalarDouble(*hi_t, "upper_edge_hertz"));
  const int64_t num_mel = ints[0], dft_length = ints[1], sample_rate = ints[2];
  if (num_mel <= 0) return ctx.Invalid("num_mel_bins must be positive, got " + std::to_string(num_mel));
  if (dft_length <= 0) return ctx.Invalid("dft_length must be positive, got " + std::to_string(dft_length));
  if (sample_rate <= 0) return ctx.Invalid("sample_rate must be positive, got " + std::to_string(sample_rate));
  if (!(lower >= 0) || !(upper > lower))
    return ctx.Invalid("expected 0 <= lower_edge_hertz < upper_edge_hertz, got " + std::to_string(lower) + " and " +
                       std::to_string(upper));
  const int64_t nspec = dft_length / 2 + 1;
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(dt, {nspec, num_mel}));
  // Mel edges computed like ONNX's reference (float32 for the edge mels).
  const float ln10f = static_cast<float>(std::log(10.0));
  const float low_mel = 2595.0f * std::log1p(static_cast<float>(lower) / 700.0f) / ln10f;
  const float high_mel = 2595.0f * std::log1p(static_cast<float>(upper) / 700.0f) / ln10f;
  const float mel_step = (high_mel - low_mel) / static_cast<float>(num_mel + 2);
  std::vector<int64_t> fb(static_cast<size_t>(num_mel + 2));
  for (int64_t i = 0; i < num_mel + 2; ++i) {
    const double mel = static_cast<double>(i) * static_cast<double>(mel_step) + static_cast<double>(low_mel);
    const double hz = 700.0 * std::expm1(mel / 2595.0 * std::log(10.0));
    fb[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
    if (fb[i] < 0 || fb[i] >= nspec)
      return ctx.Invalid("mel band edge falls on spectrogram bin " + std::to_string(fb[i]) + ", outside [0, " +
                         std::to_string(nspec) + "); upper_edge_hertz is too high for sample_rate");
  }
  std::vector<double> v(static_cast<size_t>(nspec * num_mel), 0.0);
  for (int64_t i = 0; i < num_mel; ++i) {
    const int64_t l = fb[i], c = fb[i + 1], h = fb[i + 2];
    if (c == l) {
      v[c * num_mel + i] = 1;
    } else {
      for (int64_t j = l; j <= c; ++j) v[j * num_mel + i] = static_cast<double>(j - l) / static_cast<double>(c - l);
    }
    if (h > c)
      for (int64_t j = c; j < h; ++j) v[j * num_mel + i] = static_cast<double>(h - j) / static_cast<double>(h - c);
  }
  IL_RETURN_IF_ERROR(StoreTruncating(v, out));
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// TfIdfVectorizer

enum class TfIdfMode { kTF, kIDF, kTFIDF };

template <typename K>
struct Trie {
  struct Node {
    int64_t id = 0;  // 0: no n-gram ends here
    std::unordered_map<K, int32_t> next;
  };
  std::vector<Node> nodes{Node{}};
};

class TfIdfKernel : public Kernel {
 public:
  static Result<std::unique_ptr<Kernel>> Create(const KernelInfo& info) {
    auto k = std::make_unique<TfIdfKernel>();
    const std::string mode = info.GetString("mode", "");
    if (mode == "TF") k->mode_ = TfIdfMode::kTF;
    else if (mode == "IDF") k->mode_ = TfIdfMode::kIDF;
    else if (mode == "TFIDF") k->mode_ = TfIdfMode::kTFIDF;
    else return info.Invalid("mode must be TF, IDF or TFIDF, got '" + mode + "'");
    k->min_ = info.GetInt("min_gram_length", 0);
    k->max_ = info.GetInt("max_gram_length", 0);
    k->skip_ = info.GetInt("max_skip_count", 0);
    if (k->min_ < 1 || k->max_ < k->min_)
      return info.Invalid("expected 1 <= min_gram_length <= max_gram_length, got " + std::to_string(k->min_) + " and " +
                          std::to_string(k->max_));
    if (k->skip_ < 0) return info.Invalid("max_skip_count must be >= 0, got " + std::to_string(k->skip_));
    const std::vector<int64_t> counts = info.GetInts("ngram_counts");
    k->indexes_ = info.GetInts("ngram_indexes");
    if (const Attribute* wa = info.attr("weights")) {
      if (wa->type == Attribute::Type::kFloats) k->weights_ = wa->floats;
      else if (wa->type == Attribute::Type::kInts) k->weights_.assign(wa->ints.begin(), wa->ints.end());
      else return info.Invalid("weights must be a list of floats");
    }
    const bool has_int = info.has_attr("pool_int64s"), has_str = info.has_attr("pool_strings");
    if (has_int == has_str) return info.Invalid("exactly one of pool_int64s and pool_strings must be given");
    k->strings_ = has_str;
    const std::vector<int64_t> pool_i = info.GetInts("pool_int64s");
    const std::vector<std::string> pool_s = info.GetStrings("pool_strings");
    const int64_t total = has_str ? static_cast<int64_t>(pool_s.size()) : static_cast<int64_t>(pool_i.size());
    if (k->indexes_.empty()) return info.Invalid("ngram_indexes must not be empty");
    for (int64_t v : k->indexes_)
      if (v < 0) return info.Invalid("ngram_indexes must be non-negative, got " + std::to_string(v));
    k->out_size_ = *std::max_element(k->indexes_.begin(), k->indexes_.end()) + 1;
    if (!k->weights_.empty() && static_cast<int64_t>(k->weights_.size()) < k->out_size_)
      return info.Invalid("weights has " + std::to_string(k->weights_.size()) + " values, expected " + std::to_string(k->out_size_));
    for (size_t i = 0; i < counts.size(); ++i)
      if (counts[i] < 0 || counts[i] > total || (i > 0 && counts[i] < counts[i - 1]))
        return info.Invalid("ngram_counts must be non-decreasing offsets into the pool");
    // Build the trie; ids count every n-gram of the pool in order (1-based).
    int64_t id = 1;
    for (size_t i = 0; i < counts.size(); ++i) {
      const int64_t size = static_cast<int64_t>(i) + 1;
      const int64_t start = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : total;
      const int64_t ngrams = (end - start) / size;
      if (size < k->min_ || size > k->max_) {
        id += ngrams;
        continue;
      }
      for (int64_t g = 0; g < ngrams; ++g, ++id) {
        if (id - 1 >= static_cast<int64_t>(k->indexes_.size()))
          return info.Invalid("ngram_indexes has fewer entries than the pool has n-grams");
        const int64_t at = start + g * size;
        if (has_str) k->Insert(k->str_trie_, &pool_s[at], size, id);
        else k->Insert(k->int_trie_, &pool_i[at], size, id);
      }
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    const bool is_str = x->dtype() == DataType::kString;
    if (is_str != strings_ || (!is_str && x->dtype() != DataType::kInt32 && x->dtype() != DataType::kInt64))
      return ctx.Invalid(std::string("input of type ") + DataTypeName(x->dtype()) + " does not match the " +
                         (strings_ ? "string" : "int64") + " pool");
    int64_t rows, C;
    Shape out_shape;
    if (x->rank() <= 1) {
      rows = 1;
      C = x->rank() == 0 ? 1 : x->dim(0);
      out_shape = {out_size_};
    } else if (x->rank() == 2) {
      rows = x->dim(0);
      C = x->dim(1);
      out_shape = {rows, out_size_};
    } else {
      return ctx.Invalid("expected input of shape [C] or [N, C], got " + ShapeToString(x->shape()));
    }
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DataType::kFloat, out_shape));
    std::vector<int64_t> freq(static_cast<size_t>(rows * out_size_), 0);
    if (x->size() > 0) {
      if (is_str) {
        Count(str_trie_, x->strings(), rows, C, freq);
      } else if (x->dtype() == DataType::kInt64) {
        Count(int_trie_, x->data<int64_t>(), rows, C, freq);
      } else {
        std::vector<int64_t> v(x->data<int32_t>(), x->data<int32_t>() + x->size());
        Count(int_trie_, v.data(), rows, C, freq);
      }
    }
    float* y = out.data<float>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < out_size_; ++i) {
        const int64_t f = freq[r * out_size_ + i];
        const float w = weights_.empty() ? 1.0f : weights_[i];
        float v;
        switch (mode_) {
          case TfIdfMode::kTF: v = static_cast<float>(f); break;
          case TfIdfMode::kIDF: v = f > 0 ? w : 0.0f; break;
          default: v = w * static_cast<float>(f); break;
        }
        y[r * out_size_ + i] = v;
      }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }

 private:
  template <typename K>
  static void Insert(Trie<K>& t, const K* items, int64_t n, int64_t id) {
    int32_t node = 0;
    for (int64_t k = 0; k < n; ++k) {
      auto it = t.nodes[node].next.find(items[k]);
      if (it == t.nodes[node].next.end()) {
        const int32_t nn = static_cast<int32_t>(t.nodes.size());
        t.nodes[node].next.emplace(items[k], nn);
        t.nodes.emplace_back();
        node = nn;
      } else {
        node = it->second;
      }
    }
    if (t.nodes[node].id == 0) t.nodes[node].id = id;
  }

  template <typename K>
  void Count(const Trie<K>& t, const K* x, int64_t rows, int64_t C, std::vector<int64_t>& freq) const {
    if (t.nodes[0].next.empty()) return;
    for (int64_t r = 0; r < rows; ++r) {
      const K* row = x + r * C;
      int64_t start_size = min_;
      for (int64_t dist = 1; dist <= skip_ + 1; ++dist) {
        for (int64_t s = 0; s < C; ++s) {
          if (s + dist * (start_size - 1) >= C) break;
          int32_t node = 0;
          int64_t size = 1, item = s;
          while (!t.nodes[node].next.empty() && size <= max_ && item < C) {
            auto it = t.nodes[node].next.find(row[item]);
            if (it == t.nodes[node].next.end()) break;
            node = it->second;
            const int64_t id = t.nodes[node].id;
            if (size >= start_size && id != 0) ++freq[r * out_size_ + indexes_[id - 1]];
            ++size;
            item += dist;
          }
        }
        if (start_size == 1) {
          start_size = 2;
          if (start_size > max_) break;
        }
      }
    }
  }

  TfIdfMode mode_ = TfIdfMode::kTF;
  int64_t min_ = 1, max_ = 1, skip_ = 0, out_size_ = 0;
  bool strings_ = false;
  std::vector<int64_t> indexes_;
  std::vector<float> weights_;
  Trie<int64_t> int_trie_;
  Trie<std::string> str_trie_;
};

Result<DataType> OutputDatatype(const KernelInfo& info) {
  const int64_t dt = info.GetInt("output_datatype", 1);
  if (!IsKnownDataType(static_cast<int32_t>(dt)) || !IsGeneratorOutputType(static_cast<DataType>(dt)))
    return info.Invalid("unsupported output_datatype " + std::to_string(dt));
  return static_cast<DataType>(dt);
}

KernelFactory WindowFactory(WindowKind kind) {
  return [kind](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    IL_ASSIGN_OR_RETURN(DataType dt, OutputDatatype(info));
    const int64_t periodic = info.GetInt("periodic", 1);
    if (periodic != 0 && periodic != 1) return info.Invalid("periodic must be 0 or 1, got " + std::to_string(periodic));
    return MakeKernel([kind, dt, periodic](KernelContext& ctx) { return WindowCompute(ctx, kind, periodic == 1, dt); });
  };
}

}  // namespace

void RegisterSignalKernels(KernelRegistry& r) {
  r.Register("", "DFT", 17, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    DftConfig cfg;
    const int64_t inv = info.GetInt("inverse", 0), one = info.GetInt("onesided", 0);
    if (inv != 0 && inv != 1) return info.Invalid("inverse must be 0 or 1, got " + std::to_string(inv));
    if (one != 0 && one != 1) return info.Invalid("onesided must be 0 or 1, got " + std::to_string(one));
    cfg.inverse = inv == 1;
    cfg.onesided = one == 1;
    cfg.axis_is_input = info.opset() >= 20;
    cfg.axis_attr = info.GetInt("axis", 1);
    return MakeKernel([cfg](KernelContext& ctx) { return DftCompute(ctx, cfg); });
  });
  r.Register("", "STFT", 17, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    const int64_t one = info.GetInt("onesided", 1);
    if (one != 0 && one != 1) return info.Invalid("onesided must be 0 or 1, got " + std::to_string(one));
    return MakeKernel([one](KernelContext& ctx) { return StftCompute(ctx, one == 1); });
  });
  r.Register("", "HannWindow", 17, WindowFactory(WindowKind::kHann));
  r.Register("", "HammingWindow", 17, WindowFactory(WindowKind::kHamming));
  r.Register("", "BlackmanWindow", 17, WindowFactory(WindowKind::kBlackman));
  r.Register("", "MelWeightMatrix", 17, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    IL_ASSIGN_OR_RETURN(DataType dt, OutputDatatype(info));
    return MakeKernel([dt](KernelContext& ctx) { return MelCompute(ctx, dt); });
  });
  r.Register("", "TfIdfVectorizer", 9, TfIdfKernel::Create);
}

}  // namespace inferloop
