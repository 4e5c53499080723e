// inferloop optimize MODEL -o OUT.onnx [--level N]: run the graph optimizer and save the result.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "graph/onnx_loader.h"
#include "graph/onnx_writer.h"
#include "optimizer/optimizer.h"

namespace inferloop::cli {

Runner AddOptimizeCommand(CLI::App& app) {
  struct Args {
    std::string model, output;
    int level = 2;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "optimize",
      "Optimize a model's graph (constant folding, fusions into com.inferloop ops) and save it as ONNX; "
      "prints node counts by op before and after.");
  cmd->add_option("model", args->model, "Path to an ONNX model file")->required();
  cmd->add_option("-o,--output", args->output, "Where to write the optimized model (.onnx)")->required();
  cmd->add_option("--level", args->level, "0 = none, 1 = basic (folding, dead/identity removal, cancellations), 2 = all fusions")
      ->check(CLI::Range(0, 2));
  return [args]() {
    auto t0 = std::chrono::steady_clock::now();
    auto model = LoadModelFromFile(args->model);
    if (!model.ok()) {
      std::cerr << "error: " << model.status().ToString() << "\n";
      return 1;
    }
    auto t_loaded = std::chrono::steady_clock::now();
    OptimizeOptions opts;
    opts.level = args->level;
    auto report = OptimizeModel(*model, opts);
    if (!report.ok()) {
      std::cerr << "error: " << report.status().ToString() << "\n";
      return 1;
    }
    auto t1 = std::chrono::steady_clock::now();
    if (report->skipped)
      std::cerr << "warning: the graph is not a valid DAG (a cycle or an undefined value); left as it is\n";
    Status st = SaveModelToFile(*model, args->output);
    if (!st.ok()) {
      std::cerr << "error: " << st.ToString() << "\n";
      return 1;
    }
    std::cout << FormatOptimizeReport(*report);
    std::cout << "rewrites:";
    for (const auto& [pass, n] : report->rewrites)
      if (n > 0) std::cout << " " << pass << "=" << n;
    std::cout << std::endl;
    auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    std::cerr << std::fixed << std::setprecision(1) << "loaded in " << ms(t0, t_loaded) << " ms, optimized in "
              << ms(t_loaded, t1) << " ms (" << report->iterations << " rounds); wrote " << args->output << "\n";
    return 0;
  };
}

}  // namespace inferloop::cli
