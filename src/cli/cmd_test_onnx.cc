// inferloop test-onnx DIR...: the ONNX backend conformance runner.
#include <iostream>
#include <memory>

#include "base/file_bytes.h"
#include "cli/commands.h"
#include "tools/conformance.h"

namespace inferloop::cli {

Runner AddTestOnnxCommand(CLI::App& app) {
  struct Args {
    std::vector<std::string> dirs;
    std::string exclusions;
    double rtol = 1e-3, atol = 1e-7;
    bool verbose = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "test-onnx",
      "Run ONNX backend-test cases (folders with model.onnx and test_data_set_N/) and compare outputs.\n"
      "Prints one line per failed or skipped case, then 'N passed, N failed, N skipped'.\n"
      "Exit status 1 if any case failed.");
  cmd->add_option("dirs", args->dirs, "Case folders, or folders of case folders")->required();
  cmd->add_option("--exclusions", args->exclusions,
                  "File of per-case skips and tolerances (format: docs/CONFORMANCE.md)");
  cmd->add_option("--rtol", args->rtol, "Default relative tolerance")->capture_default_str();
  cmd->add_option("--atol", args->atol, "Default absolute tolerance")->capture_default_str();
  cmd->add_flag("-v,--verbose", args->verbose, "Also print a line for each passing case");
  return [args]() {
    ConformanceOptions opts;
    opts.rtol = args->rtol;
    opts.atol = args->atol;
    if (!args->exclusions.empty()) {
      auto text = ReadFileBytes(args->exclusions);
      if (!text.ok()) {
        std::cerr << "error: " << text.status().ToString() << "\n";
        return 2;
      }
      auto ov = ParseExclusions(*text);
      if (!ov.ok()) {
        std::cerr << "error: " << args->exclusions << ": " << ov.status().message() << "\n";
        return 2;
      }
      opts.overrides = std::move(ov).value();
    }
    int passed = 0, failed = 0, skipped = 0;
    for (const auto& dir : args->dirs) {
      for (const auto& r : RunConformance({dir}, opts)) {
        switch (r.outcome) {
          case CaseResult::Outcome::kPass:
            ++passed;
            if (args->verbose) std::cout << "PASS " << r.name << "\n";
            break;
          case CaseResult::Outcome::kFail:
            ++failed;
            std::cout << "FAIL " << r.name << ": " << r.reason << "\n";
            break;
          case CaseResult::Outcome::kSkip:
            ++skipped;
            std::cout << "SKIP " << r.name << ": " << r.reason << "\n";
            break;
        }
        std::cout.flush();
      }
    }
    std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped" << std::endl;
    return failed ? 1 : 0;
  };
}

}  // namespace inferloop::cli
