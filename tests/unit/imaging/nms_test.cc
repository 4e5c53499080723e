// NMS against ONNX Runtime's NonMaxSuppression on clustered random boxes (make_fixtures.py),
// per class and class-agnostic, and known cases.
#include "imaging/nms.h"

#include <gtest/gtest.h>

#include <string>

#include "unit/imaging/fixtures.h"

namespace inferloop::imaging {
namespace {

using testing::ReadFixtureNpy;

TEST(Nms, MatchesOnnxRuntime) {
  const Tensor boxes = ReadFixtureNpy("nms_boxes.npy");
  const Tensor scores = ReadFixtureNpy("nms_scores.npy");
  const int64_t n = boxes.shape()[0], c = scores.shape()[1];
  const std::span<const float> b(boxes.data<float>(), static_cast<size_t>(boxes.size()));
  const std::span<const float> s(scores.data<float>(), static_cast<size_t>(scores.size()));
  struct Case {
    const char* name;
    int64_t max_output;
    float iou, score;
  };
  for (const Case& k : {Case{"a", 100, 0.5f, 0.0f}, Case{"b", 4, 0.3f, 0.2f}, Case{"c", 100, 0.7f, 0.5f}}) {
    NmsOptions options{k.iou, k.score, k.max_output, true};
    auto per_class = NonMaxSuppression(b, s, n, c, options);
    ASSERT_TRUE(per_class.ok()) << per_class.status().ToString();
    const Tensor want = ReadFixtureNpy(std::string("nms_per_class_") + k.name + ".npy");  // [K, 2]: class, box
    ASSERT_EQ(per_class->size(), static_cast<size_t>(want.shape()[0])) << k.name;
    for (size_t i = 0; i < per_class->size(); ++i) {
      EXPECT_EQ((*per_class)[i].class_index, want.data<int64_t>()[i * 2]) << k.name << " " << i;
      EXPECT_EQ((*per_class)[i].box_index, want.data<int64_t>()[i * 2 + 1]) << k.name << " " << i;
      EXPECT_EQ((*per_class)[i].score, s[(*per_class)[i].box_index * c + (*per_class)[i].class_index]);
    }
    options.per_class = false;
    auto agnostic = NonMaxSuppression(b, s, n, c, options);
    ASSERT_TRUE(agnostic.ok());
    const Tensor want_a = ReadFixtureNpy(std::string("nms_agnostic_") + k.name + ".npy");  // [K]: box
    ASSERT_EQ(agnostic->size(), static_cast<size_t>(want_a.shape()[0])) << k.name;
    for (size_t i = 0; i < agnostic->size(); ++i) {
      const Detection& d = (*agnostic)[i];
      EXPECT_EQ(d.box_index, want_a.data<int64_t>()[i]) << k.name << " " << i;
      for (int64_t cls = 0; cls < c; ++cls) EXPECT_LE(s[d.box_index * c + cls], d.score);  // its best class
      EXPECT_EQ(s[d.box_index * c + d.class_index], d.score);
    }
  }
}

TEST(Nms, KnownCases) {
  // Two boxes overlapping with IoU 1/3 (2x2 boxes sharing half): kept at 0.5, suppressed at 0.3.
  const std::vector<float> boxes = {0, 0, 2, 2, 1, 0, 3, 2};
  const std::vector<float> scores = {0.9f, 0.8f};
  EXPECT_NEAR(BoxIoU(&boxes[0], &boxes[4]), 1.0f / 3.0f, 1e-6);
  auto r = NonMaxSuppression(boxes, scores, 2, 1, NmsOptions{0.5f, 0.0f, 10, false});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 2u);
  r = NonMaxSuppression(boxes, scores, 2, 1, NmsOptions{0.3f, 0.0f, 10, false});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].box_index, 0);
  // Score threshold is strict; max_output 0 keeps nothing; swapped corners are the same box.
  r = NonMaxSuppression(boxes, scores, 2, 1, NmsOptions{0.5f, 0.8f, 10, false});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 1u);
  r = NonMaxSuppression(boxes, scores, 2, 1, NmsOptions{0.5f, 0.0f, 0, false});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  const float swapped[4] = {2, 2, 0, 0};
  EXPECT_FLOAT_EQ(BoxIoU(&boxes[0], swapped), 1.0f);
  // Empty input is fine.
  r = NonMaxSuppression({}, {}, 0, 3, NmsOptions{});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST(Nms, BadInput) {
  const std::vector<float> boxes = {0, 0, 1, 1};
  EXPECT_EQ(NonMaxSuppression(boxes, std::vector<float>{1, 2}, 1, 1, NmsOptions{}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NonMaxSuppression(boxes, std::vector<float>{1}, 2, 1, NmsOptions{}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NonMaxSuppression(boxes, std::vector<float>{1}, 1, 1, NmsOptions{0.5f, 0.0f, -1, false}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NonMaxSuppression(boxes, std::vector<float>{1}, 1, 0, NmsOptions{}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace inferloop::imaging
