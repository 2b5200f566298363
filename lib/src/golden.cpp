#include "torchbench/golden.h"

#include <torch/torch.h>

namespace torchbench {

void RecordEdgeParameters(const torch::nn::Module& module,
                          const std::string& prefix, bool gradients,
                          std::map<std::string, torch::Tensor>* out) {
  const auto named = module.named_parameters(/*recurse=*/true);
  if (named.is_empty()) return;
  for (size_t i : {size_t{0}, named.size() - 1}) {
    const auto& item = named[i];
    const torch::Tensor& value = gradients ? item.value().grad() : item.value();
    TORCH_CHECK(value.defined(), "parameter ", item.key(), " has no gradient");
    // Sparse gradients (EmbeddingBag(sparse=True)) are compared dense.
    (*out)[prefix + item.key()] =
        (value.is_sparse() ? value.to_dense() : value).detach().clone();
  }
}

void TurnOffDropout(torch::nn::Module& module) {
  for (const auto& m : module.modules(/*include_self=*/true)) {
    if (m->as<torch::nn::Dropout>() || m->as<torch::nn::Dropout2d>() ||
        m->as<torch::nn::Dropout3d>() || m->as<torch::nn::AlphaDropout>() ||
        m->as<torch::nn::FeatureAlphaDropout>()) {
      m->eval();
    }
  }
}

}  // namespace torchbench
