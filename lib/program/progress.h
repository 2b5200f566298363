// File: program/progress.h
//
// The line an isolated run prints after each instance, so that someone
// watching a long run knows where it is and how long is left:
//
//   [12/84] hf_Bert/Eval/batch_size:1 · 9.8 s · elapsed 1:42 · about 10:16 left
#ifndef TORCHBENCH_PROGRAM_PROGRESS_H_
#define TORCHBENCH_PROGRAM_PROGRESS_H_

#include <cstdint>
#include <string>

namespace torchbench {

class Progress {
 public:
  // `total`: the instances this process will run (a resumed run counts
  // only those left).
  explicit Progress(int64_t total) : total_(total) {}

  // Records that instance `name` took `seconds` and returns the line. The
  // estimate of what is left is the mean time of the instances run so far
  // times the number left: instances differ a lot, so it says "about".
  std::string Finished(const std::string& name, double seconds);

  double elapsed_seconds() const { return elapsed_; }

 private:
  int64_t total_;
  int64_t done_ = 0;
  double elapsed_ = 0;
};

// Seconds as m:ss, or h:mm:ss from an hour.
std::string FormatDuration(double seconds);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_PROGRESS_H_
