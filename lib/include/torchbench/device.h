// File: torchbench/device.h
//
// Device selection, the harness's one synchronization point, and the step
// timer: device-event time on accelerators, steady-clock time on the CPU.
//
//   torchbench::StepTimer timer(device);
//   timer.Start();
//   model.Step();
//   torchbench::StepTime t = timer.Stop();  // synchronizes the device
#ifndef TORCHBENCH_DEVICE_H_
#define TORCHBENCH_DEVICE_H_

#include <c10/core/Device.h>
#include <c10/core/Event.h>

#include <chrono>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace torchbench {

// Returns whether a CUDA device is usable by this process.
bool CudaAvailable();

// Returns cuda:0 when CUDA is usable, else cpu.
c10::Device DefaultDevice();

// Parses "cpu", "cuda" or "cuda:<i>". Returns InvalidArgument for any other
// text, FailedPrecondition when CUDA is asked for and not usable (or the
// index is out of range).
absl::StatusOr<c10::Device> ParseDevice(const std::string& text);

// Blocks until all work queued on `device` has finished. No-op on the CPU.
void SynchronizeDevice(c10::Device device);

// Returns a human-readable device name ("NVIDIA H200", the CPU model).
std::string DeviceName(c10::Device device);

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

#endif  // TORCHBENCH_DEVICE_H_
