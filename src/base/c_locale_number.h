// Reading numbers from text the same way in every process: strtod's grammar and rounding in the
// "C" locale, whatever LC_NUMERIC the host program set. Plain strtod follows LC_NUMERIC, so in a
// process that called setlocale(LC_ALL, "de_DE.UTF-8") (a Python program embedding the engine, a
// C API user) it reads "1.5" as 1 and stops at the '.': a silent wrong number. The CLI never calls
// setlocale; the library must not depend on that.
#pragma once

namespace inferloop {

// std::strtod(s, end) as in the "C" locale: '.' is the decimal point; leading space, sign, hex
// floats, "inf" / "nan" and ERANGE as strtod has them. Thread-safe.
double StrtodC(const char* s, char** end);

}  // namespace inferloop
