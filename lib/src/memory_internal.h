// File: memory_internal.h (internal: set up by the program, not installed)
#ifndef TORCHBENCH_SRC_MEMORY_INTERNAL_H_
#define TORCHBENCH_SRC_MEMORY_INTERNAL_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <string>

namespace torchbench {

// Makes LibTorch allocate CPU tensors through a counting allocator. Call it
// before the tensors you want counted are made; idempotent and thread-safe.
void InstallCpuMemoryCounter();
bool CpuMemoryCounterInstalled();

// The caching allocator's reserved-bytes peak on an accelerator since the
// last ResetPeakMemory (torch.cuda.max_memory_reserved): what its segments
// held at most, allocated or cached. -1 on the CPU, which has no reserve.
int64_t PeakReservedMemoryBytes(c10::Device device);

// NVML's "memory used" of a CUDA device: the whole device's, every process
// and the CUDA context included, which is what TorchBench's gpu_peak_mem
// samples (components/model_analyzer's nvml_monitor). -1 on the CPU, or
// where NVML cannot be loaded or does not know the device
// (DeviceMemoryUsedStatus says why).
int64_t DeviceMemoryUsedBytes(c10::Device device);

// "available", or "unavailable: <why>" (no CUDA in this build, no
// libnvidia-ml.so.1, an NVML error): loads NVML on first use.
std::string DeviceMemoryUsedStatus();

}  // namespace torchbench

#endif  // TORCHBENCH_SRC_MEMORY_INTERNAL_H_
