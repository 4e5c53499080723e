// inferloop compare MODEL_A MODEL_B --data DATA: per-tensor precision comparison of two models
// (tools/model_compare.h, docs/QUANTIZATION.md).
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "tools/model_compare.h"
#include "tools/quantizer.h"

namespace inferloop::cli {

Runner AddCompareCommand(CLI::App& app) {
  struct Args {
    std::string model_a, model_b, data, json, calibration, tensors;
    double cosine_threshold = 0.99;
    bool sensitivity = false, per_channel = false, reduce_range = false, no_progress = false;
    std::string eval, method = "minmax", stats;
    double percentile = 99.99;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Run two models on the same inputs and compare every intermediate tensor they share by name (cosine similarity, "
      "max abs/rel error, value ranges); points at the first tensor where they diverge. Both run unoptimized.");
  cmd->add_option("model_a", args->model_a, "Reference ONNX model (e.g. FP32)")->required();
  cmd->add_option("model_b", args->model_b, "ONNX model to check (e.g. quantized); not with --sensitivity");
  cmd->add_option("-d,--data", args->data,
                  "Folder of <input>.npy / <input>.pb files (one sample), or a folder of such folders (several samples)");
  cmd->add_option("--cosine-threshold", args->cosine_threshold, "A tensor with cosine similarity below this diverges")
      ->default_val(0.99)
      ->check(CLI::Range(-1.0, 1.0));
  cmd->add_option("--json", args->json, "Also write the report as JSON to FILE");
  cmd->add_option("--calibration", args->calibration,
                  "Calibration data (same layout as --data): flag input channels whose mean is more than 3 calibration "
                  "std away (a preprocessing mismatch)");
  cmd->add_option("--tensors", args->tensors, "Comma-separated tensor names to compare (default: every node output)");
  cmd->add_flag("--sensitivity", args->sensitivity,
                "Rank MODEL_A's layers by the accuracy lost on --eval when only that layer is INT8 (needs --calibration, "
                "--eval)");
  cmd->add_option("--eval", args->eval, "With --sensitivity: evaluation data (labels.npy: top-1 accuracy, else "
                                        "top-1 agreement with FP32)");
  cmd->add_option("--method", args->method, "With --sensitivity: calibrator minmax, percentile or entropy")
      ->default_val("minmax");
  cmd->add_option("--percentile", args->percentile, "With --sensitivity --method percentile")->default_val(99.99);
  cmd->add_flag("--per-channel", args->per_channel, "With --sensitivity: weights per output channel");
  cmd->add_flag("--reduce-range", args->reduce_range, "With --sensitivity: 7-bit weights, as quantize --reduce-range");
  cmd->add_option("--stats", args->stats, "With --sensitivity: calibration statistics file (reused when it matches)");
  cmd->add_flag("--no-progress", args->no_progress, "With --sensitivity: no progress bar");
  return [args]() {
    if (args->sensitivity) {
      auto m = ParseCalibrationMethod(args->method);
      if (!m.ok()) {
        std::cerr << "error: --method: " << m.status().message() << "\n";
        return 1;
      }
      if (!args->model_b.empty()) {
        std::cerr << "error: --sensitivity takes one model\n";
        return 1;
      }
      SensitivityCommandOptions so;
      so.model = args->model_a;
      so.calibration = args->calibration;
      so.eval = args->eval;
      so.stats = args->stats;
      so.json = args->json;
      so.method = *m;
      so.percentile = args->percentile;
      so.per_channel = args->per_channel;
      so.reduce_range = args->reduce_range;
      so.progress = !args->no_progress;
      Status s = RunSensitivityCommand(so, std::cout);
      if (!s.ok()) {
        std::cerr << "error: " << s.ToString() << "\n";
        return 1;
      }
      return 0;
    }
    if (args->model_b.empty() || args->data.empty()) {
      std::cerr << "error: compare needs MODEL_A MODEL_B --data DATA (or --sensitivity MODEL --calibration DATA --eval DATA)\n";
      return 1;
    }
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
