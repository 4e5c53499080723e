#include "tools/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace inferloop {

ProgressBar::ProgressBar(std::string label, int64_t total, bool enabled)
    : label_(std::move(label)), total_(std::max<int64_t>(total, 1)), enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0) {}

void ProgressBar::Update(int64_t done) {
  if (!enabled_ || finished_) return;
  done_ = std::clamp<int64_t>(done, 0, total_);
  const double frac = static_cast<double>(done_) / static_cast<double>(total_);
  if (tty_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(frac * kWidth);
    std::fprintf(stderr, "\r%s [%s%s] %lld/%lld (%3d%%)", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, ' ').c_str(), static_cast<long long>(done_),
                 static_cast<long long>(total_), static_cast<int>(frac * 100));
    std::fflush(stderr);
    return;
  }
  const int decile = static_cast<int>(frac * 10);
  if (decile != last_decile_) {
    last_decile_ = decile;
    std::fprintf(stderr, "%s: %lld/%lld (%d%%)\n", label_.c_str(), static_cast<long long>(done_),
                 static_cast<long long>(total_), static_cast<int>(frac * 100));
  }
}

void ProgressBar::Finish() {
  if (!enabled_ || finished_) return;
  if (done_ < total_) Update(total_);
  finished_ = true;
  if (tty_) std::fprintf(stderr, "\n");
}

}  // namespace inferloop
