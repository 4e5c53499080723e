// The inferloop command-line tool's subcommands. Each adds itself to the CLI11 app and
// returns the exit status when run.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace inferloop::cli {

// Registers a subcommand on `app`; the returned function runs it (after parsing).
using Runner = std::function<int()>;
Runner AddTestOnnxCommand(CLI::App& app);
Runner AddRunCommand(CLI::App& app);
Runner AddInspectCommand(CLI::App& app);
Runner AddOpsCommand(CLI::App& app);
Runner AddOptimizeCommand(CLI::App& app);
Runner AddBenchCommand(CLI::App& app);
Runner AddServeCommand(CLI::App& app);
Runner AddPerfCommand(CLI::App& app);
Runner AddCompareCommand(CLI::App& app);
Runner AddQuantizeCommand(CLI::App& app);
Runner AddGenerateCommand(CLI::App& app);
Runner AddTokenizeCommand(CLI::App& app);
Runner AddChatTemplateCommand(CLI::App& app);

}  // namespace inferloop::cli
