// File: torchbench/memory.h
//
// Memory counters. On accelerators they read the caching allocator's
// statistics (torch.cuda.max_memory_allocated in Python). On the CPU they
// read a counting allocator that wraps LibTorch's CPU allocator, so CPU runs
// report the same quantity: the peak of bytes held by tensors. The
// torchbench program and RunBenchmarks install it at start-up; elsewhere the
// CPU counters are -1 (unknown).
//
//   torchbench::ResetPeakMemory(device);
//   RunSteps();
//   int64_t peak = torchbench::PeakMemoryBytes(device);
#ifndef TORCHBENCH_MEMORY_H_
#define TORCHBENCH_MEMORY_H_

#include <c10/core/Device.h>

#include <cstdint>

namespace torchbench {

// Resets the peak of `device`'s allocator to its current bytes.
void ResetPeakMemory(c10::Device device);

// Returns tensor bytes currently held on `device`, or -1 when unknown (CPU
// without the counter).
int64_t CurrentMemoryBytes(c10::Device device);

// Returns the peak of tensor bytes held on `device` since the last reset, or
// -1 when unknown.
int64_t PeakMemoryBytes(c10::Device device);

// Returns the process's peak resident set size (VmHWM) in bytes, or -1.
int64_t PeakHostRssBytes();

// Resets the kernel's peak-RSS mark to the current RSS. Returns false where
// the kernel does not allow it (then PeakHostRssBytes() is the process peak).
bool ResetPeakHostRss();

// Returns cached, unused blocks to the device (no-op on the CPU).
void ReleaseCachedMemory(c10::Device device);

}  // namespace torchbench

#endif  // TORCHBENCH_MEMORY_H_
