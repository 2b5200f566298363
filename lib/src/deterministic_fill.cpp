#include "torchbench/deterministic_fill.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <unordered_set>
#include <vector>

namespace torchbench {
namespace {

uint64_t Fnv1a64(std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001B3ULL;
  }
  return h;
}

// The 24 random bits of element i: splitmix64's finaliser, top bits.
uint64_t Bits24(uint64_t h, int64_t i) {
  uint64_t z = h + static_cast<uint64_t>(i + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return z >> 40;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

template <typename T>
void FillFloating(T* out, int64_t n, uint64_t h, double offset, double scale) {
  at::parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const double u = static_cast<double>(Bits24(h, i)) / 8388608.0 - 1.0;
      out[i] = static_cast<T>(offset + scale * u);
    }
  });
}

}  // namespace

torch::Tensor DeterministicTensor(std::string_view name,
                                  torch::IntArrayRef shape, torch::Dtype dtype,
                                  double offset, double scale) {
  const uint64_t h = Fnv1a64(name);
  torch::Tensor out = torch::empty(shape, torch::dtype(torch::kDouble));
  FillFloating(out.data_ptr<double>(), out.numel(), h, offset, scale);
  // One rounding, double to dtype, as numpy's astype does.
  return out.to(dtype);
}

torch::Tensor DeterministicIntegers(std::string_view name,
                                    torch::IntArrayRef shape, int64_t low,
                                    int64_t high) {
  TORCH_CHECK(high > low && high - low < (int64_t{1} << 39),
              "DeterministicIntegers: bad range [", low, ", ", high, ")");
  const uint64_t h = Fnv1a64(name);
  const auto range = static_cast<uint64_t>(high - low);
  torch::Tensor out = torch::empty(shape, torch::dtype(torch::kLong));
  int64_t* data = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    data[i] = low + static_cast<int64_t>((Bits24(h, i) * range) >> 24);
  }
  return out;
}

void DeterministicFill(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  auto fill = [](const std::string& name, torch::Tensor& tensor) {
    if (!tensor.defined() || !tensor.is_floating_point()) return;
    double offset = 0;
    double scale = 1;
    if (EndsWith(name, "running_var")) {
      offset = 1;
      scale = 0.5;
    } else if (EndsWith(name, "running_mean") ||
               (tensor.dim() <= 1 && EndsWith(name, "bias"))) {
      scale = 0.1;
    } else if (tensor.dim() <= 1) {
      offset = 1;
      scale = 0.25;
    } else {
      const double fan_in = static_cast<double>(tensor.numel()) /
                            static_cast<double>(tensor.size(0));
      scale = std::sqrt(3.0 / fan_in);
    }
    const torch::ScalarType dtype = tensor.scalar_type();
    torch::Tensor values = DeterministicTensor(
        name, tensor.sizes(),
        dtype == torch::kDouble ? torch::kDouble : torch::kFloat, offset,
        scale);
    tensor.copy_(values);
  };
  // A tensor registered under several names (shared or tied) takes the fill
  // of its first name in registration order, as Python's named_parameters()
  // reports it.
  std::unordered_set<const void*> seen;
  for (auto& p : module.named_parameters(/*recurse=*/true)) {
    if (seen.insert(p.value().unsafeGetTensorImpl()).second) {
      fill(p.key(), p.value());
    }
  }
  for (auto& b : module.named_buffers(/*recurse=*/true)) {
    if (seen.insert(b.value().unsafeGetTensorImpl()).second) {
      fill(b.key(), b.value());
    }
  }
}

}  // namespace torchbench
