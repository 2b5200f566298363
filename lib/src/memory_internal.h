// File: memory_internal.h (internal: set up by the program, not installed)
#ifndef TORCHBENCH_SRC_MEMORY_INTERNAL_H_
#define TORCHBENCH_SRC_MEMORY_INTERNAL_H_

namespace torchbench {

// Makes LibTorch allocate CPU tensors through a counting allocator. Call it
// before the tensors you want counted are made; idempotent and thread-safe.
void InstallCpuMemoryCounter();
bool CpuMemoryCounterInstalled();

}  // namespace torchbench

#endif  // TORCHBENCH_SRC_MEMORY_INTERNAL_H_
