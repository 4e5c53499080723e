// A progress bar on stderr for long tool runs (calibration, evaluation): redrawn in place when
// stderr is a terminal, else one plain line at every tenth of the way.
#pragma once

#include <cstdint>
#include <string>

namespace inferloop {

class ProgressBar {
 public:
  // enabled = false: prints nothing.
  ProgressBar(std::string label, int64_t total, bool enabled = true);
  // `done` of `total` steps finished.
  void Update(int64_t done);
  // Ends the line (terminal) or prints the last plain line; idempotent.
  void Finish();

 private:
  std::string label_;
  int64_t total_ = 0, done_ = 0;
  bool enabled_ = true, tty_ = false, finished_ = false;
  int last_decile_ = -1;
};

}  // namespace inferloop
