// DALLE2_pytorch: where the library's random draws come from (torch's
// generator, Python's random module, or the golden check's deterministic
// fill). Included by dalle2_pytorch_prior.h only.
#ifndef TORCHBENCH_MODELS_VISION_DALLE2_PYTORCH_RANDOM_H_
#define TORCHBENCH_MODELS_VISION_DALLE2_PYTORCH_RANDOM_H_

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "torchbench/deterministic_fill.h"

namespace torchbench {
namespace dalle2_pytorch_model {
namespace {

// Python's random module after random.seed(seed) (TorchBench seeds it with
// 1337): MT19937 seeded by init_by_array on the seed's one 32-bit word;
// random() is genrand_res53. Checked against CPython's first draws.
class PythonRandom {
 public:
  explicit PythonRandom(uint32_t seed) {
    constexpr int kN = 624;
    std::vector<uint32_t> mt(kN);
    mt[0] = 19650218u;
    for (int i = 1; i < kN; ++i) {
      mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + i;
    }
    int i = 1;
    for (int k = kN; k; --k) {
      mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + seed;
      if (++i >= kN) {
        mt[0] = mt[kN - 1];
        i = 1;
      }
    }
    for (int k = kN - 1; k; --k) {
      mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - i;
      if (++i >= kN) {
        mt[0] = mt[kN - 1];
        i = 1;
      }
    }
    mt[0] = 0x80000000u;
    std::stringstream state;
    for (uint32_t word : mt) state << word << ' ';
    state << kN;
    state >> engine_;
  }
  double Random() {
    const uint32_t a = engine_() >> 5, b = engine_() >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
  }

 private:
  std::mt19937 engine_;
};

// The library's random draws. Normally torch's generator, in the
// reference's order; for the golden check (`golden`) the deterministic fill
// under the names tools/golden/adapters/DALLE2_pytorch.py gives them:
// randn.<k> for the k-th randn/randn_like, mask.<k> for the k-th
// prob_mask_like draw, and the low-resolution blur always on.
class Randomness {
 public:
  explicit Randomness(uint64_t seed = 1337)
      : python_(static_cast<uint32_t>(seed)) {}

  bool golden = false;

  torch::Tensor Randn(torch::IntArrayRef shape,
                      const torch::TensorOptions& options) {
    if (golden) return DeterministicTensor(Next("randn"), shape).to(options);
    return torch::randn(shape, options);
  }

  // prob_mask_like((batch,), prob): a bool keep mask.
  torch::Tensor Mask(int64_t batch, double prob, const torch::Device& device) {
    const auto opts = torch::TensorOptions().device(device);
    if (prob == 1) return torch::ones({batch}, opts.dtype(torch::kBool));
    if (prob == 0) return torch::zeros({batch}, opts.dtype(torch::kBool));
    if (golden) {
      return DeterministicTensor(Next("mask"), {batch}, torch::kFloat, 0.5, 0.5)
                 .to(device) < prob;
    }
    return torch::zeros({batch}, opts.dtype(torch::kFloat)).uniform_(0, 1) <
           prob;
  }

  // torch.randint(0, timesteps, (batch,)).
  torch::Tensor Times(int64_t batch, int64_t timesteps,
                      const torch::Device& device) {
    if (golden)
      return torch::zeros({batch}, torch::dtype(torch::kLong).device(device));
    return torch::randint(0, timesteps, {batch},
                          torch::dtype(torch::kLong).device(device));
  }

  // Python's random.random() < p.
  bool Chance(double p) { return golden || python_.Random() < p; }

 private:
  std::string Next(const std::string& prefix) {
    return prefix + "." + std::to_string(counts_[prefix]++);
  }
  std::map<std::string, int64_t> counts_;
  PythonRandom python_;
};

}  // namespace
}  // namespace dalle2_pytorch_model
}  // namespace torchbench

#endif  // TORCHBENCH_MODELS_VISION_DALLE2_PYTORCH_RANDOM_H_
