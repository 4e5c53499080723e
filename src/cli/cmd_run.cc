// inferloop run MODEL --input NAME=FILE ...: run a model once and summarize its outputs.
#include <iostream>
#include <memory>

#include "cli/commands.h"

namespace inferloop::cli {

Runner AddRunCommand(CLI::App& app) {
  struct Args {
    std::string model;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("run", "Run a model once and print each output's summary.");
  cmd->add_option("model", args->model, "Path to model.onnx")->required();
  return [args]() {
    std::cerr << "run: not implemented yet\n";
    return 2;
  };
}

}  // namespace inferloop::cli
