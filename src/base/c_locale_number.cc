#include "base/c_locale_number.h"

#include <locale.h>
#include <stdlib.h>

#include <charconv>
#include <cmath>

namespace inferloop {
namespace {

// The "C" locale object, made once and kept for the process's life (strtod_l only reads it).
locale_t CLocale() {
  static const locale_t c = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  return c;
}

std::string ToChars(double v, std::chars_format format, int precision) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";  // printf's spelling
  // Room for the longest result: 309 integer digits of DBL_MAX in fixed notation, the point, the
  // precision's digits, a sign (general notation needs less).
  std::string out(static_cast<size_t>(precision) + 320, '\0');
  const std::to_chars_result r = std::to_chars(out.data(), out.data() + out.size(), v, format, precision);
  out.resize(static_cast<size_t>(r.ptr - out.data()));
  return out;
}

}  // namespace

double StrtodC(const char* s, char** end) {
  const locale_t c = CLocale();
  // newlocale("C") does not fail in glibc; if it ever did, strtod in the current locale.
  return c != static_cast<locale_t>(nullptr) ? strtod_l(s, end, c) : strtod(s, end);
}

std::string FormatGeneralC(double v, int precision) {
  return ToChars(v, std::chars_format::general, precision < 1 ? 1 : precision);
}

std::string FormatFixedC(double v, int precision) {
  return ToChars(v, std::chars_format::fixed, precision < 0 ? 0 : precision);
}

}  // namespace inferloop
