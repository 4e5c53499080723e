// Which backend serves a model: the server's registry (gguf, then onnx) picks by the config's
// platform/backend fields and, when they are empty, by the files of the highest version folder;
// a platform or backend no backend serves is refused naming it and the backends there are.
#include <gtest/gtest.h>

#include "backends/gguf/gguf_backend.h"
#include "backends/onnx/onnx_backend.h"
#include "serve/model_backend.h"

namespace inferloop::serve {
namespace {

BackendRegistry ServerRegistry() {
  BackendRegistry r;
  r.Add(backends::MakeGgufBackend({}, nullptr));
  r.Add(backends::MakeOnnxBackend());
  return r;
}

std::string KindOf(const BackendRegistry& r, const std::string& config_text, std::vector<std::string> files) {
  auto c = ParseModelConfig(config_text, "m");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  auto b = r.ForModel(*c, files);
  return b.ok() ? b.value()->kind() : b.status().message();
}

TEST(BackendRegistry, PicksByConfigThenFiles) {
  const BackendRegistry r = ServerRegistry();
  EXPECT_EQ(KindOf(r, "", {"model.onnx"}), "onnx");
  EXPECT_EQ(KindOf(r, "", {"model.gguf"}), "gguf");
  EXPECT_EQ(KindOf(r, "", {"model.gguf", "model.onnx"}), "onnx");
  EXPECT_EQ(KindOf(r, "platform: \"onnxruntime_onnx\"", {"model.gguf"}), "onnx");
  EXPECT_EQ(KindOf(r, "backend: \"onnxruntime\"", {}), "onnx");
  EXPECT_EQ(KindOf(r, "backend: \"llama\"", {}), "gguf");
  EXPECT_EQ(KindOf(r, "", {}), "onnx");  // an empty version folder: the onnx backend says what is missing
}

TEST(BackendRegistry, UnservedPlatformIsNamed) {
  const BackendRegistry r = ServerRegistry();
  const std::string trt = KindOf(r, "platform: \"tensorrt_plan\"", {"model.plan"});
  EXPECT_NE(trt.find("platform 'tensorrt_plan' is not served"), std::string::npos) << trt;
  EXPECT_NE(trt.find("gguf, onnx"), std::string::npos) << trt;
  const std::string py = KindOf(r, "backend: \"python\"", {"model.py"});
  EXPECT_NE(py.find("backend 'python'"), std::string::npos) << py;
}

}  // namespace
}  // namespace inferloop::serve
