// Runs test cases in the ONNX backend-test layout:
//   CASE/model.onnx, CASE/test_data_set_N/input_K.pb, CASE/test_data_set_N/output_K.pb
// and compares inferloop's outputs with the expected ones (ONNX's tolerances by default).
// Per-case tolerances and skips come from an exclusions file; see docs/CONFORMANCE.md.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "inferloop/status.h"

namespace inferloop {

struct CaseOverride {
  bool skip = false;
  double rtol = -1, atol = -1;  // < 0: default
  std::string reason;
};

// Parses the exclusions file. Each non-comment line:
//   <case_name> skip                 # reason
//   <case_name> rtol=<x> [atol=<y>]  # reason
// A reason is required for every entry.
Result<std::map<std::string, CaseOverride>> ParseExclusions(const std::string& text);

struct ConformanceOptions {
  double rtol = 1e-3;
  double atol = 1e-7;
  std::map<std::string, CaseOverride> overrides;
};

struct CaseResult {
  std::string name;
  enum class Outcome { kPass, kFail, kSkip } outcome = Outcome::kPass;
  std::string reason;
};

// True if `dir` holds a model.onnx (is a case rather than a folder of cases).
bool IsConformanceCase(const std::string& dir);
// Runs one case folder.
CaseResult RunConformanceCase(const std::string& dir, const ConformanceOptions& opts);
// Expands each path (a case, or a folder of cases, sorted by name) and runs them all.
std::vector<CaseResult> RunConformance(const std::vector<std::string>& paths, const ConformanceOptions& opts);

}  // namespace inferloop
