// The C++ API from an installed inferloop: loads an ONNX model, runs it on a .npy input and checks
// the output against a .npy of expected values (within 1e-4).
// Usage: cpp_consumer MODEL.onnx INPUT.npy EXPECTED.npy   (exit 0: output as expected)
#include <inferloop/session.h>
#include <inferloop/version.h>

#include <cstdio>
#include <cstdlib>

#include "npy_f32.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.onnx INPUT.npy EXPECTED.npy\n", argv[0]);
    return 2;
  }
  std::printf("inferloop %s, C++ API\n", INFERLOOP_VERSION_STRING);
  auto session = inferloop::Session::CreateFromFile(argv[1]);
  if (!session.ok()) {
    std::fprintf(stderr, "error: %s\n", session.status().ToString().c_str());
    return 1;
  }
  const inferloop::Session& s = **session;
  for (const inferloop::ValueInfo& v : s.inputs()) std::printf("input %s\n", v.ToString().c_str());
  npy_f32 input, expected;
  if (npy_f32_read(argv[2], &input) || npy_f32_read(argv[3], &expected)) return 1;
  auto tensor = inferloop::Tensor::FromBytes(inferloop::DataType::kFloat,
                                             inferloop::Shape(input.shape, input.shape + input.rank), input.data,
                                             input.count * sizeof(float));
  std::free(input.data);
  if (!tensor.ok()) {
    std::fprintf(stderr, "error: %s\n", tensor.status().ToString().c_str());
    return 1;
  }
  auto outputs = s.Run({{s.inputs()[0].name, *tensor}});
  if (!outputs.ok()) {
    std::fprintf(stderr, "error: %s\n", outputs.status().ToString().c_str());
    return 1;
  }
  const auto& [name, value] = outputs->front();
  const inferloop::Tensor& out = value.tensor();
  if (out.dtype() != inferloop::DataType::kFloat || static_cast<size_t>(out.size()) != expected.count) {
    std::fprintf(stderr, "error: output %s is %s%s, expected %zu float values\n", name.c_str(),
                 inferloop::DataTypeName(out.dtype()), inferloop::ShapeToString(out.shape()).c_str(), expected.count);
    return 1;
  }
  const double diff = npy_f32_max_abs_diff(out.data<float>(), expected.data, expected.count);
  std::free(expected.data);
  std::printf("output %s: float32%s, max |difference| from expected %.3g\n", name.c_str(),
              inferloop::ShapeToString(out.shape()).c_str(), diff);
  return diff <= 1e-4 ? 0 : 1;
}
