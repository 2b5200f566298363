// File: torchbench/deterministic_fill.h
//
// Weights and inputs that C++ and Python compute bit for bit, so a port can
// be checked against golden outputs of its reference's own code
// (tools/golden/). tools/golden/fill.py is the Python twin; both implement
// the rule below, and each has a test pinned to the same values.
//
// The rule (version kFillVersion):
//   h    = FNV-1a 64 of the tensor's name (its UTF-8 bytes)
//   z_i  = splitmix64's finaliser of h + (i + 1) * 0x9E3779B97F4A7C15
//          (mod 2^64), for the flat row-major index i
//   u_i  = (z_i >> 40) / 2^23 - 1, exactly representable in float32, in
//          [-1, 1)
// A floating tensor is offset + scale * u_i, computed in double and rounded
// once to the tensor's dtype. An integer tensor in [low, high) is
// low + (((z_i >> 40) * (high - low)) >> 24).
//
// Parameters and buffers (DeterministicFill) take offset and scale from
// their name and shape, so that activations stay in range:
//   *running_var                         1 + 0.5 u   (in [0.5, 1.5))
//   *running_mean, 0/1-D *bias           0.1 u
//   other 0/1-D (norm weights, gains)    1 + 0.25 u
//   >= 2-D (fan-in = numel / shape[0])   sqrt(3 / fan-in) u  (variance
//                                        1 / fan-in, LeCun's)
// Integer and boolean buffers (counters, position ids, masks) are left as
// the model built them.
// A tensor registered under several names (shared or tied weights) takes the
// fill of its first name in registration order.
//
//   torchbench::DeterministicFill(model->module());
//   torch::Tensor x = torchbench::DeterministicTensor("input", {2, 3, 32, 32});
//   torch::Tensor ids = torchbench::DeterministicIntegers("tokens", {2, 16},
//                                                         0, 30522);
#ifndef TORCHBENCH_DETERMINISTIC_FILL_H_
#define TORCHBENCH_DETERMINISTIC_FILL_H_

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <string_view>

namespace torchbench {

inline constexpr int kFillVersion = 1;

// Returns offset + scale * u_i for `name`, as a CPU tensor of `dtype`
// (floating).
torch::Tensor DeterministicTensor(std::string_view name,
                                  torch::IntArrayRef shape,
                                  torch::Dtype dtype = torch::kFloat,
                                  double offset = 0, double scale = 1);

// Returns integers in [low, high) for `name`, as a CPU int64 tensor.
torch::Tensor DeterministicIntegers(std::string_view name,
                                    torch::IntArrayRef shape, int64_t low,
                                    int64_t high);

// Overwrites every floating parameter and buffer of `module` (by its dotted
// state_dict name) with the rule above, on its own device and dtype.
void DeterministicFill(torch::nn::Module& module);

}  // namespace torchbench

#endif  // TORCHBENCH_DETERMINISTIC_FILL_H_
