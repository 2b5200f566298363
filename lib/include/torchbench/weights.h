// File: torchbench/weights.h
//
// Reading reference weights written by Python (safetensors files) and
// loading them into a LibTorch module by state_dict name, for the fidelity
// tests that compare a port with its Python package.
//
//   absl::StatusOr<std::map<std::string, torch::Tensor>> tensors =
//       torchbench::ReadSafetensors("torchvision_resnet50.weights.safetensors");
//   if (!tensors.ok()) return tensors.status();
//   absl::Status loaded = torchbench::LoadStateDict(model->module(), *tensors);
#ifndef TORCHBENCH_WEIGHTS_H_
#define TORCHBENCH_WEIGHTS_H_

#include <torch/nn/module.h>
#include <torch/types.h>

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace torchbench {

// Reads every tensor of a safetensors file (an 8-byte little-endian header
// length, a JSON header {name: {"dtype", "shape", "data_offsets"}} with an
// optional "__metadata__" entry, then the raw little-endian data) into CPU
// tensors keyed by name. Supports F32, F64, F16, BF16, I64, I32, I8, U8 and
// BOOL. Returns NotFound for a missing file and InvalidArgument (naming the
// file and the problem) for a truncated or malformed one; never reads
// outside the file.
absl::StatusOr<std::map<std::string, torch::Tensor>> ReadSafetensors(
    const std::string& path);

// Copies `tensors` into `module`'s parameters and buffers of the same
// (dotted, state_dict) names, converting dtype and device to the
// destination's. Every parameter and buffer must get a tensor of its exact
// shape and every tensor must find a destination; otherwise returns
// InvalidArgument listing (the first few) missing keys, unexpected keys and
// shape mismatches, and leaves the module unchanged.
absl::Status LoadStateDict(torch::nn::Module& module,
                           const std::map<std::string, torch::Tensor>& tensors);

}  // namespace torchbench

#endif  // TORCHBENCH_WEIGHTS_H_
