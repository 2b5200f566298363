// File: program/context.h
//
// The run's environment, recorded in Google Benchmark's JSON "context" so
// two runs can be told apart: LibTorch/CUDA/cuDNN versions, device, math
// flags, threads, seed, the project's commit.
#ifndef TORCHBENCH_PROGRAM_CONTEXT_H_
#define TORCHBENCH_PROGRAM_CONTEXT_H_

#include <c10/core/Device.h>

#include <string>
#include <utility>
#include <vector>

#include "program/flags.h"

namespace torchbench {

// Sets LibTorch's math flags for `precision`: fp32 turns TF32 off for
// cuBLAS and cuDNN, tf32 turns both on. cuDNN autotuning is on (TorchBench's
// vision models set cudnn.benchmark = True).
void ApplyPrecision(Precision precision);

// Returns key/value pairs describing the run.
std::vector<std::pair<std::string, std::string>> RunContext(
    c10::Device device, const HarnessFlags& flags);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_CONTEXT_H_
