// The shipped example model gives ONNX Runtime's output (saved by scripts/make_example_models.py).
#include <gtest/gtest.h>

#include <cmath>

#include "inferloop/session.h"
#include "base/npy.h"

namespace inferloop {

TEST(ExampleModel, TinyCnnMatchesOnnxRuntime) {
  const std::string root = INFERLOOP_SOURCE_DIR;
  auto session = Session::CreateFromFile(root + "/examples/model_repository/tiny_cnn/1/model.onnx");
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto image = ReadNpyFile(root + "/examples/data/tiny_cnn/image.npy");
  auto expected = ReadNpyFile(root + "/examples/data/tiny_cnn/expected_probs.npy");
  ASSERT_TRUE(image.ok() && expected.ok());
  auto out = (*session)->Run({{"image", *image}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const Tensor& probs = (*out)[0].second.tensor();
  ASSERT_EQ(probs.shape(), expected->shape());
  for (int64_t i = 0; i < probs.size(); ++i)
    EXPECT_NEAR(probs.data<float>()[i], expected->data<float>()[i], 1e-5 + 1e-4 * std::fabs(expected->data<float>()[i])) << i;
}

}  // namespace inferloop
