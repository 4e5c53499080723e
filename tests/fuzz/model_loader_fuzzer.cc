// Fuzzes the ONNX loader and session creation: arbitrary bytes must give a Status, never a
// crash, hang or leak. When a model loads, it is also run once on zero-filled inputs of its
// declared shape (small shapes only), with a low tensor-size limit.
#include <cstddef>
#include <cstdint>

#include "inferloop/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inferloop::SessionOptions opts;
  opts.max_tensor_bytes = size_t{16} << 20;
  auto session = inferloop::Session::CreateFromBytes(data, size, opts);
  if (!session.ok()) return 0;
  std::vector<inferloop::NamedValue> feeds;
  for (const auto& in : (*session)->inputs()) {
    if (in.kind != inferloop::ValueInfo::Kind::kTensor || !in.has_shape) return 0;
    inferloop::Shape shape;
    int64_t n = 1;
    for (const auto& d : in.shape) {
      int64_t v = d.value >= 0 ? d.value : 1;
      if (v > 64) return 0;
      n *= v;
      shape.push_back(v);
    }
    if (n > 4096 || in.dtype == inferloop::DataType::kUndefined) return 0;
    auto t = inferloop::Tensor::Create(in.dtype, shape);
    if (!t.ok()) return 0;
    feeds.emplace_back(in.name, std::move(t).value());
  }
  (void)(*session)->Run(feeds);
  return 0;
}
