// A gtest fixture parameterized by the vector instruction set (compute/simd/cpu_isa.h): each test
// runs with that set active, is skipped where this CPU lacks it, and restores the detected set
// afterwards. Instantiate with
//   INSTANTIATE_TEST_SUITE_P(AllIsas, MyTest, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512), IsaParamName);
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "compute/simd/cpu_isa.h"

namespace inferloop {
namespace simd {

class IsaParamTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (static_cast<int>(GetParam()) > static_cast<int>(DetectedIsa()))
      GTEST_SKIP() << IsaName(GetParam()) << " is not available on this CPU";
    ASSERT_EQ(SetActiveIsa(GetParam()), GetParam());
  }
  void TearDown() override { SetActiveIsa(DetectedIsa()); }
};

inline std::string IsaParamName(const ::testing::TestParamInfo<Isa>& i) { return IsaName(i.param); }

}  // namespace simd
}  // namespace inferloop
