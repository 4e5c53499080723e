// Reading a processing step's `parameters` (Triton's syntax: parameters { key: "K" value: {
// string_value: "V" } }). Every error is InvalidArgument naming the parameter and what it expects.
#pragma once

#include <string>
#include <vector>

#include "inferloop/status.h"
#include "serve/model_config.h"

namespace inferloop::backends {

// The parameter's string, or `fallback` when absent.
std::string ParamString(const serve::ModelConfig& c, const std::string& key, const std::string& fallback = "");
// A number; `fallback` when absent.
Result<double> ParamNumber(const serve::ModelConfig& c, const std::string& key, double fallback);
// Comma-separated numbers ("0.485,0.456,0.406"); `fallback` when absent.
Result<std::vector<double>> ParamNumbers(const serve::ModelConfig& c, const std::string& key,
                                         const std::vector<double>& fallback);
// One of `choices`; `fallback` when absent.
Result<std::string> ParamChoice(const serve::ModelConfig& c, const std::string& key,
                                const std::vector<std::string>& choices, const std::string& fallback);

}  // namespace inferloop::backends
