// File: torchbench/device.h
//
// Device selection and the harness's one synchronization point.
//
//   c10::Device device = torchbench::DefaultDevice();  // cuda:0, else cpu
//   model.Step();
//   torchbench::SynchronizeDevice(device);
#ifndef TORCHBENCH_DEVICE_H_
#define TORCHBENCH_DEVICE_H_

#include <c10/core/Device.h>

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

}  // namespace torchbench

#endif  // TORCHBENCH_DEVICE_H_
