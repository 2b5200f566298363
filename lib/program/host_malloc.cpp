#include "program/host_malloc.h"

#include <climits>

#include "absl/strings/str_cat.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace torchbench {

absl::StatusOr<HostMalloc> ParseHostMalloc(const std::string& value) {
  if (value == "retain") return HostMalloc::kRetain;
  if (value == "glibc") return HostMalloc::kGlibc;
  return absl::InvalidArgumentError(absl::StrCat(
      "--torchbench_host_malloc=", value, ": expected retain or glibc"));
}

std::string ApplyHostMalloc(HostMalloc policy) {
  if (policy == HostMalloc::kGlibc) return "glibc";
#if defined(__GLIBC__)
  // mallopt takes an int: chunks up to 2 GiB come from the heap, and up to
  // 2 GiB of free heap top stays mapped. Both, because setting either turns
  // off glibc's moving mmap threshold: the trim threshold alone left every
  // block above 128 KiB to mmap and munmap each step (hf_Albert's Eval 1.55 s
  // a step, slower than glibc's defaults).
  if (mallopt(M_MMAP_THRESHOLD, INT_MAX) == 1 &&
      mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1) {
    return "retain";
  }
#endif
  return "glibc (retain needs glibc's mallopt)";
}

void TrimHostHeap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace torchbench
