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

// Returns key/value pairs describing the run. The TF32 flags are the ones
// the requested precision runs under (no model's default precision is tf32);
// cuDNN autotuning and determinism are the model's (each result's label
// names them on CUDA), so the context says "per_model".

std::vector<std::pair<std::string, std::string>> RunContext(
    c10::Device device, const HarnessFlags& flags);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_CONTEXT_H_
