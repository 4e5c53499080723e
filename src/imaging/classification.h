// Classifier outputs as Triton's classification extension returns them (class_count results).
//
// Contract:
// - Classify: optional softmax over the scores, then the k highest (k > count: all), highest
//   first; equal scores keep the lower index first. Each result is the string
//   "<score>:<index>[:<label>]" as Triton formats it: the score with std::to_string (six
//   decimals, "0.750000"), the index in the model output, and ":<label>" only when the labels
//   list has an entry for that index (an empty line is an empty label, "0.750000:3:").
// - Labels text: one label per line, in class-index order; "\r\n" line ends are accepted and a
//   final newline does not add a label.
// - Non-finite scores, k < 1 and empty score lists are InvalidArgument.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::imaging {

struct ClassScore {
  int64_t index = 0;
  float score = 0.0f;
};

std::vector<std::string> ParseLabels(std::string_view text);
Result<std::vector<std::string>> ReadLabelsFile(const std::string& path);

// exp(x - max) / sum, in double; InvalidArgument on an empty or non-finite input.
Result<std::vector<float>> Softmax(std::span<const float> scores);

// The k highest scores, highest first (ties: lower index first).
Result<std::vector<ClassScore>> TopK(std::span<const float> scores, int64_t k);

// "<score>:<index>[:<label>]".
std::string FormatClassScore(const ClassScore& c, const std::vector<std::string>& labels);

Result<std::vector<std::string>> Classify(std::span<const float> scores, int64_t k, bool apply_softmax,
                                          const std::vector<std::string>& labels);

}  // namespace inferloop::imaging
