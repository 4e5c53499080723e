// Top-k strings in the format of Triton's classification extension ("<value>:<index>[:<label>]",
// value through std::to_string), softmax on known values, labels parsing.
#include "imaging/classification.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace inferloop::imaging {
namespace {

TEST(Classification, TritonFormatTopK) {
  // Triton's documented example: [1, 5, 10, 4] -> top-2 indices [2, 1].
  const std::vector<float> scores = {1, 5, 10, 4};
  auto r = Classify(scores, 2, false, {"zero", "one", "two", "three"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, (std::vector<std::string>{"10.000000:2:two", "5.000000:1:one"}));
  // Without a label for an index the ":<label>" part is left out; k beyond the count gives all.
  r = Classify(scores, 9, false, {"zero", "one"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<std::string>{"10.000000:2", "5.000000:1:one", "4.000000:3", "1.000000:0:zero"}));
  // Ties: lower index first.
  auto t = TopK(std::vector<float>{3, 7, 7, 1}, 2);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)[0].index, 1);
  EXPECT_EQ((*t)[1].index, 2);
}

TEST(Classification, SoftmaxKnownValues) {
  // softmax([0, ln 3]) = [1/4, 3/4].
  auto r = Classify(std::vector<float>{0.0f, std::log(3.0f)}, 1, true, {"a", "b"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0], "0.750000:1:b");
  // Large logits do not overflow.
  auto s = Softmax(std::vector<float>{1000.0f, 1000.0f, -1000.0f});
  ASSERT_TRUE(s.ok());
  EXPECT_FLOAT_EQ((*s)[0], 0.5f);
  EXPECT_FLOAT_EQ((*s)[1], 0.5f);
  EXPECT_FLOAT_EQ((*s)[2], 0.0f);
}

TEST(Classification, LabelsAndBadInput) {
  EXPECT_EQ(ParseLabels("cat\r\ndog\n\nbird\n"), (std::vector<std::string>{"cat", "dog", "", "bird"}));
  EXPECT_EQ(ParseLabels("one"), (std::vector<std::string>{"one"}));
  EXPECT_TRUE(ParseLabels("").empty());
  EXPECT_EQ(FormatClassScore({2, 0.5f}, {"cat", "dog", ""}), "0.500000:2:");
  EXPECT_EQ(Classify({}, 1, false, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Classify(std::vector<float>{1}, 0, false, {}).status().code(), StatusCode::kInvalidArgument);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Classify(std::vector<float>{1, nan}, 1, true, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ReadLabelsFile("/nonexistent/labels.txt").ok());
}

}  // namespace
}  // namespace inferloop::imaging
