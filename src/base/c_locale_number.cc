#include "base/c_locale_number.h"

#include <locale.h>
#include <stdlib.h>

namespace inferloop {
namespace {

// The "C" locale object, made once and kept for the process's life (strtod_l only reads it).
locale_t CLocale() {
  static const locale_t c = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  return c;
}

}  // namespace

double StrtodC(const char* s, char** end) {
  const locale_t c = CLocale();
  // newlocale("C") does not fail in glibc; if it ever did, strtod in the current locale.
  return c != static_cast<locale_t>(nullptr) ? strtod_l(s, end, c) : strtod(s, end);
}

}  // namespace inferloop
