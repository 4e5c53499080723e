// inferloop quantize MODEL -o OUT.onnx --calibration DATA: post-training INT8 quantization into a
// standard QDQ model (tools/quantizer.h, docs/QUANTIZATION.md).
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "tools/quantizer.h"

namespace inferloop::cli {

Runner AddQuantizeCommand(CLI::App& app) {
  struct Args {
    QuantizeOptions o;
    std::string method = "minmax", exclude;
    bool no_progress = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Post-training INT8 quantization: calibrate over data and write a standard QDQ ONNX model (or --dynamic: "
      "weight-only MatMul/Gemm quantization); optional mixed precision within an accuracy bound; times INT8 against "
      "FP32 on this CPU.");
  cmd->add_option("model", args->o.model, "FP32 ONNX model")->required();
  cmd->add_option("-o,--output", args->o.output, "Quantized model to write")->required();
  cmd->add_option("--calibration", args->o.calibration,
                  "Calibration data: a folder of <input>.npy/.pb files (one sample; an .npy may hold a batch along "
                  "the model's batch dimension) or a folder of such folders");
  cmd->add_option("--method", args->method, "Calibrator: minmax, percentile or entropy (KL divergence)")
      ->default_val("minmax");
  cmd->add_option("--percentile", args->o.percentile, "Percentile of |x| kept by --method percentile")
      ->default_val(99.99)
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_flag("--per-channel", args->o.per_channel, "Weights per output channel (default: per tensor)");
  cmd->add_flag("--reduce-range", args->o.reduce_range,
                "7-bit weights ([-64, 64]): faster on CPUs without VNNI (AVX2), slightly less accurate");
  cmd->add_option("--exclude", args->exclude, "Comma-separated node names to keep FP32");
  cmd->add_flag("--dynamic", args->o.dynamic,
                "Dynamic quantization: MatMul/Gemm weights int8, activations quantized at run time (no calibration)");
  cmd->add_flag("--quantize-activation-matmul", args->o.quantize_activation_matmul,
                "Also quantize MatMuls of two activations (attention); default FP32");
  cmd->add_option("--max-accuracy-drop", args->o.max_accuracy_drop,
                  "Mixed precision: keep layers FP32, most sensitive first, until the metric on --eval drops by at "
                  "most PCT percentage points")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--eval", args->o.eval,
                  "Evaluation data (layout of --calibration; labels.npy = one int64 label per sample for top-1 "
                  "accuracy, else top-1 agreement with FP32)");
  cmd->add_option("--stats", args->o.stats,
                  "Calibration statistics file (JSON): reused when it matches the model and data, else written");
  cmd->add_option("--timing-runs", args->o.timing_runs, "Runs of each model for the INT8/FP32 timing (0: no timing)")
      ->default_val(30)
      ->check(CLI::Range(0, 100000));
  cmd->add_flag("--no-progress", args->no_progress, "No progress bar");
  return [args]() {
    QuantizeOptions o = args->o;
    auto m = ParseCalibrationMethod(args->method);
    if (!m.ok()) {
      std::cerr << "error: --method: " << m.status().message() << "\n";
      return 1;
    }
    o.method = *m;
    o.progress = !args->no_progress;
    std::stringstream ss(args->exclude);
    for (std::string t; std::getline(ss, t, ',');)
      if (!t.empty()) o.exclude.push_back(t);
    Status s = RunQuantize(o, std::cout, std::cerr);
    if (!s.ok()) {
      std::cerr << "error: " << s.ToString() << "\n";
      return 1;
    }
    return 0;
  };
}

}  // namespace inferloop::cli
