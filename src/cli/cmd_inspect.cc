// inferloop inspect MODEL [--shape NAME=D1,D2,...]: what a model is and what running it will need.
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "graph/onnx_loader.h"
#include "graph/shape_inference.h"
#include "inferloop/session.h"

namespace inferloop::cli {
namespace {

std::string HumanBytes(size_t b) {
  std::ostringstream os;
  os.precision(3);
  if (b >= (size_t{1} << 30)) os << b / double(size_t{1} << 30) << " GiB";
  else if (b >= (size_t{1} << 20)) os << b / double(size_t{1} << 20) << " MiB";
  else if (b >= 1024) os << b / 1024.0 << " KiB";
  else os << b << " B";
  return os.str();
}

}  // namespace

Runner AddInspectCommand(CLI::App& app) {
  struct Args {
    std::string model;
    std::vector<std::string> shapes;
    bool values = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Print a model's inputs, outputs, opsets and operators, infer every intermediate's shape, and plan "
                 "its memory before running.");
  cmd->add_option("model", args->model, "Path to an ONNX model file")->required();
  cmd->add_option("-s,--shape", args->shapes, "NAME=D1,D2,...: concrete shape for an input with symbolic dims (repeatable)");
  cmd->add_flag("--values", args->values, "Also list every intermediate value with its inferred type");
  return [args]() {
    std::map<std::string, Shape> shapes;
    for (const auto& spec : args->shapes) {
      size_t eq = spec.find('=');
      if (eq == std::string::npos) {
        std::cerr << "error: --shape expects NAME=D1,D2,..., got '" << spec << "'\n";
        return 2;
      }
      Shape s;
      std::stringstream ss(spec.substr(eq + 1));
      std::string tok;
      while (std::getline(ss, tok, ',')) {
        try {
          s.push_back(std::stoll(tok));
        } catch (...) {
          std::cerr << "error: bad dimension '" << tok << "' in --shape " << spec << "\n";
          return 2;
        }
      }
      shapes[spec.substr(0, eq)] = s;
    }
    auto model = LoadModelFromFile(args->model);
    if (!model.ok()) {
      std::cerr << "error: " << model.status().ToString() << "\n";
      return 1;
    }
    auto session = Session::CreateFromFile(args->model);
    if (!session.ok()) {
      std::cerr << "error: " << session.status().ToString() << "\n";
      return 1;
    }
    std::cout << "model: " << args->model << "\n  ir_version " << model->ir_version << ", producer '" << model->producer_name
              << "'\n  opsets:";
    for (const auto& [d, v] : model->opsets) std::cout << " " << (d.empty() ? "ai.onnx" : d) << "=" << v;
    std::cout << "\ninputs:\n";
    for (const auto& vi : (*session)->inputs()) std::cout << "  " << vi.ToString() << "\n";
    std::cout << "outputs:\n";
    for (const auto& vi : (*session)->outputs()) std::cout << "  " << vi.ToString() << "\n";
    std::map<std::string, int> ops;
    for (const auto& n : model->graph.nodes) ++ops[(n.domain.empty() ? "" : n.domain + ".") + n.op_type];
    std::cout << "nodes: " << model->graph.nodes.size() << " (";
    bool first = true;
    for (const auto& [op, c] : ops) {
      std::cout << (first ? "" : ", ") << op << " " << c;
      first = false;
    }
    std::cout << ")\ninitializers: " << model->graph.initializers.size() << "\n";
    auto inferred = InferShapes(*model, shapes);
    if (!inferred.ok()) {
      std::cerr << "error: " << inferred.status().ToString() << "\n";
      return 1;
    }
    std::cout << "shape inference: " << inferred->inferred << " tensors with known shape, " << inferred->unknown << " unknown\n";
    if (args->values)
      for (const auto& [name, t] : inferred->types) std::cout << "  " << name << ": " << t.ToString() << "\n";
    auto plan = (*session)->PlanMemory(shapes);
    if (!plan.ok()) {
      std::cerr << "error: " << plan.status().ToString() << "\n";
      return 1;
    }
    std::cout << "memory plan: arena " << HumanBytes(plan->arena_bytes) << ", peak live " << HumanBytes(plan->peak_bytes)
              << ", without reuse " << HumanBytes(plan->naive_bytes) << "; " << plan->planned_values << " intermediates planned, "
              << plan->unplanned_values << " sized at run time\n";
    return 0;
  };
}

}  // namespace inferloop::cli
