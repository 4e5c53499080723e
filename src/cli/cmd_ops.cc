// inferloop ops: the operators this build supports, by domain.
#include <iostream>
#include <map>
#include <memory>
#include <vector>

#include "cli/commands.h"
#include "compute/kernel_registry.h"

namespace inferloop::cli {

Runner AddOpsCommand(CLI::App& app) {
  auto domain = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("ops", "List the operators inferloop supports, grouped by domain.");
  cmd->add_option("--domain", *domain, "Only this domain (ai.onnx, ai.onnx.ml, ai.onnx.preview.training)");
  return [domain]() {
    std::map<std::string, std::vector<std::string>> by_domain;
    for (const auto& name : DefaultKernelRegistry().OpNames()) {
      size_t colon = name.rfind(':');
      by_domain[name.substr(0, colon)].push_back(name.substr(colon + 1));
    }
    if (!domain->empty() && !by_domain.count(*domain)) {
      std::cerr << "error: no operators in domain '" << *domain << "'\n";
      return 1;
    }
    for (const auto& [d, ops] : by_domain) {
      if (!domain->empty() && d != *domain) continue;
      std::cout << d << " (" << ops.size() << " operators):\n";
      std::string line = " ";
      for (const auto& op : ops) {
        if (line.size() + op.size() + 1 > 100) {
          std::cout << line << "\n";
          line = " ";
        }
        line += " " + op;
      }
      std::cout << line << "\n";
    }
    return 0;
  };
}

}  // namespace inferloop::cli
