// Reading and writing numbers as text the same way in every process: as in the "C" locale,
// whatever LC_NUMERIC the host program set. Plain strtod follows LC_NUMERIC, so in a
// process that called setlocale(LC_ALL, "de_DE.UTF-8") (a Python program embedding the engine, a
// C API user) it reads "1.5" as 1 and stops at the '.': a silent wrong number. The CLI never calls
// setlocale; the library must not depend on that. The same holds for printf's %g / %f, which
// write "1,5" there: invalid JSON in a report, a trace or a profile.
#pragma once

#include <string>

namespace inferloop {

// std::strtod(s, end) as in the "C" locale: '.' is the decimal point; leading space, sign, hex
// floats, "inf" / "nan" and ERANGE as strtod has them. Thread-safe.
double StrtodC(const char* s, char** end);

// printf("%.*g", precision, v) as in the "C" locale (std::to_chars, which no locale affects):
// '.' as the decimal point, "inf" / "-inf" / "nan" for the non-finite values. precision >= 1.
std::string FormatGeneralC(double v, int precision = 6);
// printf("%.*f", precision, v) as in the "C" locale. precision >= 0.
std::string FormatFixedC(double v, int precision);

}  // namespace inferloop
