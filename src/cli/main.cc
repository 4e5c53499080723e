// inferloop: command-line entry point.
#include <iostream>

#include "cli/commands.h"
#include "cli/omp_spin_limit.h"
#include "inferloop/version.h"

int main(int argc, char** argv) {
  inferloop::cli::LimitOmpSpinWait(argv);
  CLI::App app{"inferloop: an inference engine for ONNX models.\nRun 'inferloop COMMAND --help' for a command's options."};
  app.set_version_flag("--version", "inferloop " INFERLOOP_VERSION_STRING, "Print the version and exit");
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, inferloop::cli::Runner>> commands;
  auto add = [&](inferloop::cli::Runner (*fn)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    auto runner = fn(app);
    commands.emplace_back(app.get_subcommands({})[before], runner);
  };
  add(inferloop::cli::AddRunCommand);
  add(inferloop::cli::AddInspectCommand);
  add(inferloop::cli::AddOpsCommand);
  add(inferloop::cli::AddOptimizeCommand);
  add(inferloop::cli::AddBenchCommand);
  add(inferloop::cli::AddServeCommand);
  add(inferloop::cli::AddPerfCommand);
  add(inferloop::cli::AddCompareCommand);
  add(inferloop::cli::AddQuantizeCommand);
  add(inferloop::cli::AddGenerateCommand);
  add(inferloop::cli::AddTokenizeCommand);
  add(inferloop::cli::AddTestOnnxCommand);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, run] : commands)
    if (sub->parsed()) return run();
  return 2;
}
