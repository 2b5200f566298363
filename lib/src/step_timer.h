// File: step_timer.h (internal: the program's timer, not installed)
//
// The step timer: device-event time on accelerators, steady-clock time on
// the CPU.
//
//   StepTimer timer(device);
//   timer.Start();
//   model.Step();
//   StepTime t = timer.Stop();  // synchronizes the device
#ifndef TORCHBENCH_SRC_STEP_TIMER_H_
#define TORCHBENCH_SRC_STEP_TIMER_H_

#include <c10/core/Device.h>
#include <c10/core/Event.h>

#include <chrono>
#include <optional>

namespace torchbench {

struct StepTime {
  double seconds = 0;       // Device-event time (accelerators) or wall.
  double wall_seconds = 0;  // Steady clock from Start() to after the sync.
};

// Times one step. On accelerators the start and stop events are recorded on
// the current stream and Stop() synchronizes the device, so `seconds` is
// GPU time and `wall_seconds` is synchronized host time.
class StepTimer {
 public:
  explicit StepTimer(c10::Device device);

  void Start();
  // Synchronizes the device and returns the step's time.
  StepTime Stop();

 private:
  c10::Device device_;
  std::optional<c10::Event> start_event_;
  std::optional<c10::Event> stop_event_;
  std::chrono::steady_clock::time_point wall_start_;
};

}  // namespace torchbench

#endif  // TORCHBENCH_SRC_STEP_TIMER_H_
