// A process-wide LC_NUMERIC whose decimal point is ',' (de_DE.UTF-8), for tests of the number
// readers that must not follow the host program's locale (base/c_locale_number.h). glibc's
// localedef compiles it from Debian's `locales` data (scripts/install_deps.sh) into a temporary
// folder, found through LOCPATH. While the object lives the locale is set; the destructor puts
// "C" back. ok() is false, with why(), when the locale cannot be made: tests ASSERT it.
#pragma once

#include <locale.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

namespace inferloop::testing {

class CommaDecimalLocale {
 public:
  CommaDecimalLocale() {
    char tmpl[] = "/tmp/il_locale_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      why_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    const std::string cmd = "localedef -i de_DE -f UTF-8 '" + dir_ + "/de_DE.UTF-8' 2>&1";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[256];
      while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
      pclose(p);  // localedef exits 1 on mere warnings; what counts is whether setlocale works
    }
    setenv("LOCPATH", dir_.c_str(), 1);
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8") == nullptr) {
      why_ = "setlocale(LC_NUMERIC, \"de_DE.UTF-8\") failed after `" + cmd + "`: " + out +
             " (Debian: apt-get install locales, scripts/install_deps.sh)";
      return;
    }
    if (std::strcmp(localeconv()->decimal_point, ",") != 0) {
      why_ = std::string("de_DE's decimal point is \"") + localeconv()->decimal_point + "\", not \",\"";
      return;
    }
    ok_ = true;
  }
  ~CommaDecimalLocale() {
    setlocale(LC_NUMERIC, "C");
    unsetenv("LOCPATH");
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  CommaDecimalLocale(const CommaDecimalLocale&) = delete;
  CommaDecimalLocale& operator=(const CommaDecimalLocale&) = delete;

  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }

 private:
  std::string dir_, why_;
  bool ok_ = false;
};

}  // namespace inferloop::testing
