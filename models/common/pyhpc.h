// What TorchBench's three dionhaefner/pyhpc-benchmarks kernels share: the
// ModelSpec fields they have in common, and the input grid and random arrays
// of _generate_inputs(size) with the deterministic twins the golden adapters
// (tools/golden/adapters/pyhpc_*.py) use:
//
//   const PyhpcGrid grid = MakePyhpcGrid(config.batch_size);
//   torch::Tensor mask_u = PyhpcRandomMask(grid.Shape(), options);
//   torch::Tensor dxt = PyhpcFilledNormal("dxt", {grid.nx}).to(options);
#ifndef TORCHBENCH_MODELS_COMMON_PYHPC_H_
#define TORCHBENCH_MODELS_COMMON_PYHPC_H_

#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/families.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/model.h"

namespace torchbench::common {

// The spec of a pyhpc kernel, filled around what the kernel states (name,
// task, reference, any batch limit). TorchBench runs each in eval only
// (train() raises NotImplementedError) at DEFAULT_EVAL_BSIZE 1048576, the
// "problem size"; none sets ALLOW_CUSTOMIZE_BSIZE, so other sizes are allowed
// and reshape the grid. Each registers no parameters or buffers (counted in
// Python, pinned torch, on the Model of pytorch/benchmark 43ca0857). None
// has a half path: its inputs are NumPy float64 arrays, so fp16/bf16 would
// not be the reference's computation. The golden file is "<name>.golden",
// made by tools/golden/adapters/<name>.py from the reference's own eval().
inline ModelSpec PyhpcKernelSpec(ModelSpec spec) {
  spec.domain = "science";
  spec.modes = {Mode::kEval};
  spec.train_batch_size = 0;
  spec.eval_batch_size = 1048576;
  spec.fixed_batch_size = false;
  spec.supports_channels_last = false;
  spec.reference_parameters = 0;
  spec.reference_buffers = 0;
  spec.checks.golden_file = spec.name + ".golden";
  spec.checks.test_batch_size = 4096;
  return WithUnsupportedPrecisions(
      std::move(spec), {Precision::kFp16, Precision::kBf16},
      "the reference computes in float64 with no parameters and no half path; "
      "converting its inputs would not be the reference's computation");
}

// The (nx, ny, nz) ocean grid the benchmark's "problem size" stands for.
struct PyhpcGrid {
  int64_t nx = 0;
  int64_t ny = 0;
  int64_t nz = 0;

  // Returns {nx, ny, nz} followed by `trailing` (e.g. {3} for the three
  // time levels of a 4-D array).
  std::vector<int64_t> Shape(std::vector<int64_t> trailing = {}) const {
    std::vector<int64_t> shape = {nx, ny, nz};
    shape.insert(shape.end(), trailing.begin(), trailing.end());
    return shape;
  }
};

// Returns (ceil(2 c), ceil(2 c), ceil(c / 4)) with c = size^(1/3), as
// _generate_inputs computes it in double ((204, 204, 26) at 1048576 and,
// because 4096^(1/3) rounds just below 16, (32, 32, 4) at 4096).
inline PyhpcGrid MakePyhpcGrid(int64_t size) {
  const double c = std::pow(static_cast<double>(size), 1.0 / 3);
  const int64_t nxy = static_cast<int64_t>(std::ceil(2 * c));
  return {nxy, nxy, static_cast<int64_t>(std::ceil(0.25 * c))};
}

// `(np.random.rand(*shape) < 0.8).astype("float64")`, drawn with torch's
// generator: a 0/1 land-sea mask, 1 with probability 0.8.
inline torch::Tensor PyhpcRandomMask(torch::IntArrayRef shape,
                                     const torch::TensorOptions& options) {
  return (torch::rand(shape, options.dtype(torch::kFloat64)) < 0.8)
      .to(torch::kFloat64);
}

// The golden twin of PyhpcRandomMask: u < 0.6 for the deterministic u in
// [-1, 1), so 1 with probability 0.8, as a float64 CPU tensor.
inline torch::Tensor PyhpcFilledMask(std::string_view name,
                                     torch::IntArrayRef shape) {
  return (DeterministicTensor(name, shape, torch::kFloat64) < 0.6)
      .to(torch::kFloat64);
}

// The golden twin of np.random.randn: sqrt(3) u, which has randn's mean (0)
// and variance (1), as a float64 CPU tensor.
inline torch::Tensor PyhpcFilledNormal(std::string_view name,
                                       torch::IntArrayRef shape) {
  return DeterministicTensor(name, shape, torch::kFloat64, 0.0, std::sqrt(3.0));
}

}  // namespace torchbench::common

#endif  // TORCHBENCH_MODELS_COMMON_PYHPC_H_
