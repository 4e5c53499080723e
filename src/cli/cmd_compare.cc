// inferloop compare MODEL_A MODEL_B --data DATA: per-tensor precision comparison of two models
// (tools/model_compare.h, docs/QUANTIZATION.md).
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "tools/model_compare.h"

namespace inferloop::cli {

Runner AddCompareCommand(CLI::App& app) {
  struct Args {
    std::string model_a, model_b, data, json, calibration, tensors;
    double cosine_threshold = 0.99;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Run two models on the same inputs and compare every intermediate tensor they share by name (cosine similarity, "
      "max abs/rel error, value ranges); points at the first tensor where they diverge. Both run unoptimized.");
  cmd->add_option("model_a", args->model_a, "Reference ONNX model (e.g. FP32)")->required();
  cmd->add_option("model_b", args->model_b, "ONNX model to check (e.g. quantized)")->required();
  cmd->add_option("-d,--data", args->data,
                  "Folder of <input>.npy / <input>.pb files (one sample), or a folder of such folders (several samples)")
      ->required();
  cmd->add_option("--cosine-threshold", args->cosine_threshold, "A tensor with cosine similarity below this diverges")
      ->default_val(0.99)
      ->check(CLI::Range(-1.0, 1.0));
  cmd->add_option("--json", args->json, "Also write the report as JSON to FILE");
  cmd->add_option("--calibration", args->calibration,
                  "Calibration data (same layout as --data): flag input channels whose mean is more than 3 calibration "
                  "std away (a preprocessing mismatch)");
  cmd->add_option("--tensors", args->tensors, "Comma-separated tensor names to compare (default: every node output)");
  return [args]() {
    CompareOptions opts;
    opts.cosine_threshold = args->cosine_threshold;
    opts.calibration_dir = args->calibration;
    std::stringstream ss(args->tensors);
    for (std::string t; std::getline(ss, t, ',');)
      if (!t.empty()) opts.tensors.push_back(t);
    auto report = CompareModels(args->model_a, args->model_b, args->data, opts);
    if (!report.ok()) {
      std::cerr << "error: " << report.status().ToString() << "\n";
      return 1;
    }
    std::cout << FormatCompareReport(*report);
    if (!args->json.empty()) {
      std::ofstream f(args->json, std::ios::binary);
      f << CompareReportToJson(*report);
      if (!f.good()) {
        std::cerr << "error: cannot write '" << args->json << "'\n";
        return 1;
      }
    }
    return 0;
  };
}

}  // namespace inferloop::cli
