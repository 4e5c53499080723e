// StrtodC (base/c_locale_number.h) and a reader built on it (the Cast op's string path) in a
// process whose LC_NUMERIC has ',' as the decimal point, where plain strtod misreads "1.5"; and
// FormatGeneralC / FormatFixedC, printf's %g / %f as in the "C" locale.
#include "base/c_locale_number.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
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

std::string Printf(const char* format, int precision, double v) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, precision, v);
  return buf;
}

// The same characters as printf in the "C" locale (this test's own, before any setlocale) for
// values across the double range, the precisions the callers use, and the special values.
TEST(FormatC, WritesWhatPrintfWritesInTheCLocale) {
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> mantissa(-10.0, 10.0);
  std::uniform_int_distribution<int> exponent(-30, 30);
  std::vector<double> values = {0.0, -0.0, 1.0, -1.5, 0.1, 1e-5, 123456789.0, 2.5e-300, DBL_MAX, DBL_MIN,
                                4.9e-324, 0.5, 1.5, 2.5, 1e21, 1e-7, 999999.5, 0.000123456789};
  for (int i = 0; i < 2000; ++i) values.push_back(mantissa(g) * std::pow(10.0, exponent(g)));
  for (double v : values) {
    for (int p : {1, 3, 4, 6, 7, 17}) {
      EXPECT_EQ(FormatGeneralC(v, p), Printf("%.*g", p, v)) << v << " precision " << p;
    }
    if (std::fabs(v) < 1e30) {
      for (int p : {0, 1, 3, 6}) EXPECT_EQ(FormatFixedC(v, p), Printf("%.*f", p, v)) << v << " precision " << p;
    }
  }
  EXPECT_EQ(FormatFixedC(DBL_MAX, 17), Printf("%.*f", 17, DBL_MAX));
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(FormatGeneralC(inf), "inf");
  EXPECT_EQ(FormatGeneralC(-inf), "-inf");
  EXPECT_EQ(FormatGeneralC(nan), "nan");
  EXPECT_EQ(FormatFixedC(-inf, 3), "-inf");
}

TEST(FormatC, WritesThePointWhateverTheLocale) {
  testing::CommaDecimalLocale locale;
  ASSERT_TRUE(locale.ok()) << locale.why();
  ASSERT_EQ(Printf("%.*g", 6, 1.5), "1,5");  // the hazard is real in this process
  EXPECT_EQ(FormatGeneralC(1.5), "1.5");
  EXPECT_EQ(FormatGeneralC(0.000123456789, 7), "0.0001234568");
  EXPECT_EQ(FormatGeneralC(2.5e-7, 4), "2.5e-07");
  EXPECT_EQ(FormatFixedC(12.3456, 3), "12.346");
  EXPECT_EQ(FormatFixedC(-0.5, 0), "-0");
}

}  // namespace
}  // namespace inferloop
