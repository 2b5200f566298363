// File: torchbench/process_group.h
//
// A real torch.distributed process group of world size 1, for models whose
// reference runs its collectives under torch.distributed (moco's
// concat_all_gather and broadcast). TorchBench runs such models as a world
// of one process; their collectives still go through the backend (copies,
// a worker thread, a work object to wait on), so the port does too.
//
// The backend is what torch.distributed picks for the device: Gloo on the
// CPU and NCCL on CUDA (when this build has NCCL: TORCHBENCH_HAVE_NCCL; else
// Gloo, which also serves CUDA tensors), rank 0 of 1 over an in-process
// HashStore, as init_process_group("gloo"/"nccl", rank=0, world_size=1)
// makes it with a store.
//
// Why Gloo needs a Debian package: LibTorch's ProcessGroupGloo.hpp includes
// Gloo's headers, which the torch wheel does not ship (its libtorch_cpu.so
// has the compiled Gloo). The harness compiles against Debian's libgloo-dev
// headers in one source file; ProcessGroupGloo only holds Gloo objects by
// pointer, so its layout does not depend on Gloo's version. Users of this
// header need neither.
#ifndef TORCHBENCH_PROCESS_GROUP_H_
#define TORCHBENCH_PROCESS_GROUP_H_

#include <torch/types.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "absl/status/statusor.h"

namespace torchbench {

// Creates rank 0 of a world of one on `device` (see above); the backend's
// name ("gloo" or "nccl") says which it is.
absl::StatusOr<c10::intrusive_ptr<c10d::Backend>> CreateWorldOfOne(
    const torch::Device& device);

}  // namespace torchbench

#endif  // TORCHBENCH_PROCESS_GROUP_H_
