#include "torchbench/process_group.h"

#include <exception>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "absl/strings/str_cat.h"
#include "torchbench_config.h"

// ProcessGroupGloo.hpp and ProcessGroupNCCL.hpp declare their classes only
// under these macros (LibTorch's CMake target defines them for its users).
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#if TORCHBENCH_HAVE_NCCL
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace torchbench {

absl::StatusOr<c10::intrusive_ptr<c10d::Backend>> CreateWorldOfOne(
    const torch::Device& device) {
  try {
    auto store = c10::make_intrusive<c10d::HashStore>();
#if TORCHBENCH_HAVE_NCCL
    if (device.is_cuda()) {
      return c10::intrusive_ptr<c10d::Backend>(
          c10::make_intrusive<c10d::ProcessGroupNCCL>(store, /*rank=*/0,
                                                      /*size=*/1));
    }
#endif
    auto options = c10d::ProcessGroupGloo::Options::create();
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    return c10::intrusive_ptr<c10d::Backend>(
        c10::make_intrusive<c10d::ProcessGroupGloo>(store, /*rank=*/0,
                                                    /*size=*/1, options));
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot create a process group of one on ", device.str(),
                     ": ", e.what()));
  }
}

}  // namespace torchbench
