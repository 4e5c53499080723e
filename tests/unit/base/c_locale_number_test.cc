// StrtodC (base/c_locale_number.h) and a reader built on it (the Cast op's string path) in a
// process whose LC_NUMERIC has ',' as the decimal point, where plain strtod misreads "1.5".
#include "base/c_locale_number.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "compute/tensor_cast.h"
#include "unit/comma_decimal_locale.h"

namespace inferloop {
namespace {

TEST(StrtodC, ReadsThePointWhateverTheLocale) {
  testing::CommaDecimalLocale locale;
  ASSERT_TRUE(locale.ok()) << locale.why();
  // The hazard is real in this process: plain strtod stops at the '.'.
  ASSERT_EQ(std::strtod("1.5", nullptr), 1.0);
  const struct {
    const char* text;
    double value;
    size_t used;
  } cases[] = {{"1.5", 1.5, 3}, {" -0.25x", -0.25, 6}, {"2.5e-3", 2.5e-3, 6}, {"+7", 7.0, 2},
               {"0x1.8p1", 3.0, 7}, {"1,5", 1.0, 1}};
  for (const auto& c : cases) {
    char* end = nullptr;
    EXPECT_EQ(StrtodC(c.text, &end), c.value) << c.text;
    EXPECT_EQ(static_cast<size_t>(end - c.text), c.used) << c.text;
  }
  EXPECT_TRUE(std::isinf(StrtodC("inf", nullptr)));
  EXPECT_TRUE(std::isnan(StrtodC("nan", nullptr)));
  EXPECT_EQ(StrtodC("1e400", nullptr), HUGE_VAL);
}

TEST(StrtodC, CastFromStringReadsOutOfRangeDecimalsUnderACommaLocale) {
  testing::CommaDecimalLocale locale;
  ASSERT_TRUE(locale.ok()) << locale.why();
  // "1.5e400" overflows a double: the Cast op's fallback reads it with StrtodC (+inf). Plain
  // strtod here would read "1" and give 1.0.
  Tensor s = Tensor::FromStrings({3}, {"1.5e400", "-2.5e-400", "0.125"});
  auto f = CastTensor(s, DataType::kDouble);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->data<double>()[0], HUGE_VAL);
  EXPECT_EQ(f->data<double>()[1], 0.0);
  EXPECT_TRUE(std::signbit(f->data<double>()[1]));
  EXPECT_EQ(f->data<double>()[2], 0.125);
}

}  // namespace
}  // namespace inferloop
