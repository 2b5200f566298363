// File: program/host_malloc.h
//
// Whether freed host memory stays in the process between steps. glibc's
// malloc gives it back to the kernel by heuristics (the heap top is trimmed
// once 128 KiB..64 MiB of it is free, chunks above a moving threshold are
// unmapped), and whether they fire depends on the heap's layout, not on the
// step: hf_Albert's batch-1 Eval re-faulted about 600 MB of fresh pages each
// step in this program (1.42 s a step, 1.14 s with them kept) and not in
// TorchBench's Python process, whose interpreter objects pin the heap top.
// "retain" keeps freed memory in the process, as PyTorch's caching allocator
// does on a GPU, so a step's time is its compute in any process; "glibc"
// leaves malloc as glibc and its MALLOC_* tunables configure it.
#ifndef TORCHBENCH_PROGRAM_HOST_MALLOC_H_
#define TORCHBENCH_PROGRAM_HOST_MALLOC_H_

#include <string>

#include "absl/status/statusor.h"

namespace torchbench {

enum class HostMalloc { kRetain, kGlibc };

// "retain" | "glibc".
absl::StatusOr<HostMalloc> ParseHostMalloc(const std::string& value);

// Applies `policy` to this process (once, before the first instance) and
// returns what the run's context records: "retain", "glibc", or
// "glibc (retain needs glibc's mallopt)" where malloc is not glibc's.
std::string ApplyHostMalloc(HostMalloc policy);

// Gives the heap's free pages back to the kernel now (glibc's malloc_trim;
// nothing elsewhere), whatever the policy: for memory an untimed pass freed
// that must not count in the measured steps' peak_host_rss.
void TrimHostHeap();

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_HOST_MALLOC_H_
