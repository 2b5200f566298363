#include "program/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace torchbench {

std::string FormatDuration(double seconds) {
  const int64_t s = std::llround(std::max(0.0, seconds));
  if (s >= 3600) {
    return absl::StrFormat("%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60);
  }
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

std::string Progress::Finished(const std::string& name, double seconds) {
  ++done_;
  elapsed_ += seconds;
  std::string line =
      absl::StrFormat("[%d/%d] %s · %.1f s · elapsed %s", done_, total_, name,
                      seconds, FormatDuration(elapsed_));
  if (done_ < total_) {
    const double left = elapsed_ / static_cast<double>(done_) *
                        static_cast<double>(total_ - done_);
    absl::StrAppend(&line, " · about ", FormatDuration(left), " left");
  }
  return line;
}

}  // namespace torchbench
