// inferloop run MODEL --input NAME=FILE ...: run a model once and summarize its outputs.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "base/npy.h"
#include "cli/commands.h"
#include "cli/precision_option.h"
#include "compute/tensor_cast.h"
#include "graph/tensor_file.h"
#include "inferloop/session.h"

namespace inferloop::cli {
namespace {

std::string Summary(const Tensor& t) {
  std::ostringstream os;
  os << DataTypeName(t.dtype()) << " " << ShapeToString(t.shape());
  if (t.dtype() == DataType::kString) {
    os << "  values:";
    for (int64_t i = 0; i < std::min<int64_t>(t.size(), 5); ++i) os << " \"" << t.strings()[i] << "\"";
    if (t.size() > 5) os << " ...";
    return os.str();
  }
  auto d = CastTensor(t, DataType::kDouble);
  if (!d.ok() || t.size() == 0) return os.str();
  const double* v = d->data<double>();
  double mn = v[0], mx = v[0], sum = 0, sq = 0;
  int64_t nan = 0, argmax = 0;
  for (int64_t i = 0; i < t.size(); ++i) {
    if (std::isnan(v[i])) { ++nan; continue; }
    if (v[i] < mn) mn = v[i];
    if (v[i] > mx) { mx = v[i]; argmax = i; }
    sum += v[i];
    sq += v[i] * v[i];
  }
  const double n = static_cast<double>(t.size() - nan);
  const double mean = n ? sum / n : 0, var = n ? std::max(0.0, sq / n - mean * mean) : 0;
  os << std::setprecision(6) << "  min " << mn << "  max " << mx << "  mean " << mean << "  std " << std::sqrt(var)
     << "  argmax " << argmax;
  if (nan) os << "  nan " << nan;
  os << "\n    first values:";
  for (int64_t i = 0; i < std::min<int64_t>(t.size(), 8); ++i) os << " " << v[i];
  if (t.size() > 8) os << " ...";
  return os.str();
}

}  // namespace

Runner AddRunCommand(CLI::App& app) {
  struct Args {
    std::string model;
    std::vector<std::string> inputs;
    std::string output_dir;
    std::string precision;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a model once and print each output's name, dtype, shape and summary statistics.");
  cmd->add_option("model", args->model, "Path to an ONNX model file")->required();
  cmd->add_option("-i,--input", args->inputs,
                  "NAME=FILE: value for input NAME from a .npy file or an ONNX TensorProto .pb file (repeatable)");
  cmd->add_option("-o,--output-dir", args->output_dir, "Write every output as DIR/<name>.npy");
  AddPrecisionOption(cmd, &args->precision);
  return [args]() {
    SessionOptions opts;
    auto precision = ParsePrecision(args->precision);
    if (!precision.ok()) {
      std::cerr << "error: --precision: " << precision.status().message() << "\n";
      return 2;
    }
    opts.precision = *precision;
    auto t0 = std::chrono::steady_clock::now();
    auto session = Session::CreateFromFile(args->model, opts);
    if (!session.ok()) {
      std::cerr << "error: " << session.status().ToString() << "\n";
      return 1;
    }
    auto t1 = std::chrono::steady_clock::now();
    std::vector<NamedValue> feeds;
    for (const auto& spec : args->inputs) {
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::cerr << "error: --input expects NAME=FILE, got '" << spec << "'\n";
        return 2;
      }
      auto t = LoadTensorFile(spec.substr(eq + 1));
      if (!t.ok()) {
        std::cerr << "error: input '" << spec.substr(0, eq) << "': " << t.status().ToString() << "\n";
        return 1;
      }
      feeds.emplace_back(spec.substr(0, eq), Value(std::move(t).value()));
    }
    if (feeds.empty() && !(*session)->inputs().empty()) {
      std::cerr << "error: the model needs inputs; pass --input NAME=FILE for each of:\n";
      for (const auto& vi : (*session)->inputs()) std::cerr << "  " << vi.ToString() << "\n";
      return 2;
    }
    auto result = (*session)->Run(feeds);
    auto t2 = std::chrono::steady_clock::now();
    if (!result.ok()) {
      std::cerr << "error: " << result.status().ToString() << "\n";
      return 1;
    }
    if (!args->output_dir.empty()) std::filesystem::create_directories(args->output_dir);
    for (const auto& [name, v] : *result) {
      if (v.is_tensor()) {
        std::cout << name << ": " << Summary(v.tensor()) << "\n";
        if (!args->output_dir.empty()) {
          std::string safe = name;
          for (char& c : safe)
            if (c == '/' || c == '\\' || c == ':') c = '_';
          Status st = WriteNpyFile((std::filesystem::path(args->output_dir) / (safe + ".npy")).string(), v.tensor());
          if (!st.ok()) std::cerr << "warning: " << name << ": " << st.message() << "\n";
        }
      } else if (v.is_sequence()) {
        std::cout << name << ": sequence of " << v.sequence().size() << " tensors\n";
        for (size_t i = 0; i < v.sequence().size(); ++i) std::cout << "  [" << i << "] " << Summary(v.sequence()[i]) << "\n";
      } else {
        std::cout << name << ": (empty optional)\n";
      }
    }
    auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    std::cerr << std::fixed << std::setprecision(2) << "session create " << ms(t0, t1) << " ms, run " << ms(t1, t2) << " ms\n";
    return 0;
  };
}

}  // namespace inferloop::cli
