#include "tools/conformance.h"

#include <gtest/gtest.h>

namespace inferloop {

TEST(Exclusions, ParsesSkipsAndTolerances) {
  auto r = ParseExclusions(
      "# header comment\n"
      "\n"
      "test_a skip  # random generator\n"
      "test_b rtol=1e-2 atol=1e-5  # float32 reference noise\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_TRUE(r->at("test_a").skip);
  EXPECT_EQ(r->at("test_a").reason, "random generator");
  EXPECT_FALSE(r->at("test_b").skip);
  EXPECT_DOUBLE_EQ(r->at("test_b").rtol, 1e-2);
  EXPECT_DOUBLE_EQ(r->at("test_b").atol, 1e-5);
}

TEST(Exclusions, EveryEntryNeedsAReason) {
  auto r = ParseExclusions("test_a skip\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("reason"), std::string::npos);
}

TEST(Exclusions, RejectsDuplicatesAndUnknownKeys) {
  EXPECT_FALSE(ParseExclusions("test_a skip # x\ntest_a skip # y\n").ok());
  EXPECT_FALSE(ParseExclusions("test_a tol=3 # x\n").ok());
  EXPECT_FALSE(ParseExclusions("test_a rtol=abc # x\n").ok());
  EXPECT_FALSE(ParseExclusions("test_a # nothing to do\n").ok());
}

TEST(Conformance, MissingFolderIsAFailureNotASilentPass) {
  auto results = RunConformance({"/nonexistent/onnx/cases"}, {});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, CaseResult::Outcome::kFail);
}

}  // namespace inferloop
