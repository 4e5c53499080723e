// Softmax, top-k and Triton's classification strings (classification.h).
#include "imaging/classification.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/file_bytes.h"
#include "base/status_macros.h"

namespace inferloop::imaging {
namespace {

Status CheckScores(std::span<const float> scores) {
  if (scores.empty()) return Status::InvalidArgument("classification needs at least one score");
  for (size_t i = 0; i < scores.size(); ++i)
    if (!std::isfinite(scores[i])) return Status::InvalidArgument("score " + std::to_string(i) + " is not finite");
  return Status::Ok();
}

}  // namespace

std::vector<std::string> ParseLabels(std::string_view text) {
  std::vector<std::string> labels;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    labels.emplace_back(line);
    start = end + 1;
  }
  return labels;
}

Result<std::vector<std::string>> ReadLabelsFile(const std::string& path) {
  IL_ASSIGN_OR_RETURN(std::string text, ReadFileBytes(path));
  return ParseLabels(text);
}

Result<std::vector<float>> Softmax(std::span<const float> scores) {
  IL_RETURN_IF_ERROR(CheckScores(scores));
  const float top = *std::max_element(scores.begin(), scores.end());
  std::vector<double> e(scores.size());
  double sum = 0.0;
  for (size_t i = 0; i < scores.size(); ++i) sum += e[i] = std::exp(static_cast<double>(scores[i]) - top);
  std::vector<float> out(scores.size());
  for (size_t i = 0; i < scores.size(); ++i) out[i] = static_cast<float>(e[i] / sum);
  return out;
}

Result<std::vector<ClassScore>> TopK(std::span<const float> scores, int64_t k) {
  IL_RETURN_IF_ERROR(CheckScores(scores));
  if (k < 1) return Status::InvalidArgument("class count " + std::to_string(k) + " is not positive");
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t n = std::min(scores.size(), static_cast<size_t>(k));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(), [&](int64_t a, int64_t b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
  });
  std::vector<ClassScore> top(n);
  for (size_t i = 0; i < n; ++i) top[i] = {order[i], scores[order[i]]};
  return top;
}

std::string FormatClassScore(const ClassScore& c, const std::vector<std::string>& labels) {
  std::string s = std::to_string(c.score) + ":" + std::to_string(c.index);
  if (c.index >= 0 && static_cast<size_t>(c.index) < labels.size()) s += ":" + labels[static_cast<size_t>(c.index)];
  return s;
}

Result<std::vector<std::string>> Classify(std::span<const float> scores, int64_t k, bool apply_softmax,
                                          const std::vector<std::string>& labels) {
  std::vector<float> probabilities;
  if (apply_softmax) {
    IL_ASSIGN_OR_RETURN(probabilities, Softmax(scores));
    scores = probabilities;
  }
  IL_ASSIGN_OR_RETURN(std::vector<ClassScore> top, TopK(scores, k));
  std::vector<std::string> out;
  out.reserve(top.size());
  for (const ClassScore& c : top) out.push_back(FormatClassScore(c, labels));
  return out;
}

}  // namespace inferloop::imaging
