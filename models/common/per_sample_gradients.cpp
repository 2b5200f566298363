#include "common/per_sample_gradients.h"

// ATen's functorch headers (the C++ behind torch.func). Interpreter.h
// includes <nlohmann/json.hpp>, which the torch wheel does not ship: the
// build takes it from Debian's nlohmann-json3-dev (tools/tb installs it).
#include <ATen/functorch/BatchedTensorImpl.h>
#include <ATen/functorch/DynamicLayer.h>
#include <ATen/functorch/TensorWrapper.h>
#include <ATen/ops/_add_batch_dim.h>
#include <ATen/ops/_remove_batch_dim.h>
#include <c10/core/GradMode.h>
#include <torch/autograd.h>
#include <torch/nn/functional/fold.h>
#include <torch/nn/functional/normalization.h>

#include <optional>
#include <stdexcept>
#include <utility>

namespace torchbench::common {
namespace per_sample_gradients_internal {

namespace ft = at::functorch;

// Pops the dynamic layer it pushed, also when the loss throws (the
// `finally: _vmap_decrement_nesting()` / `_grad_decrement_nesting()` of
// torch._functorch).
class DynamicLayerScope {
 public:
  explicit DynamicLayerScope(int64_t level) : level_(level) {}
  ~DynamicLayerScope() { ft::popDynamicLayerAndDeleteMetadata(); }
  DynamicLayerScope(const DynamicLayerScope&) = delete;
  DynamicLayerScope& operator=(const DynamicLayerScope&) = delete;
  int64_t level() const { return level_; }

 private:
  int64_t level_;
};

// torch._functorch.eager_transforms._unwrap_for_grad.
torch::Tensor UnwrapForGrad(const torch::Tensor& t, int64_t level) {
  auto* wrapper = ft::maybeGetTensorWrapper(t);
  if (wrapper == nullptr || wrapper->level() != level) return t;
  return wrapper->value();
}

// grad_and_value_impl's body inside its grad level: the gradients of
// `loss(params, sample)` with respect to `params`, unwrapped to the level
// below.
std::vector<torch::Tensor> GradAtNewLevel(
    const SampleLoss& loss, const std::vector<torch::Tensor>& params,
    const std::vector<torch::Tensor>& sample) {
  // _grad_increment_nesting: the grad level remembers the grad mode to
  // restore inside it (NOTE [grad and vjp interaction with no_grad]).
  const bool prev_grad_mode = c10::GradMode::is_enabled();
  DynamicLayerScope grad_level(ft::initAndPushDynamicLayer(
      ft::TransformType::Grad, std::nullopt, std::nullopt, prev_grad_mode));
  const int64_t level = grad_level.level();
  torch::AutoGradMode enable_grad(true);
  std::vector<torch::Tensor> wrapped_params;
  wrapped_params.reserve(params.size());
  {
    // enable_inplace_requires_grad(True) around _create_differentiable.
    const bool prev_inplace = ft::getInplaceRequiresGradAllowed();
    ft::setInplaceRequiresGradAllowed(true);
    for (const auto& p : params) {
      wrapped_params.push_back(
          ft::makeTensorWrapper(p, level).requires_grad_(true));
    }
    ft::setInplaceRequiresGradAllowed(prev_inplace);
  }
  std::vector<torch::Tensor> wrapped_sample;
  wrapped_sample.reserve(sample.size());
  for (const auto& s : sample) {
    wrapped_sample.push_back(ft::makeTensorWrapper(s, level));
  }
  torch::Tensor output = loss(wrapped_params, wrapped_sample);
  TORCH_CHECK(output.dim() == 0, "VmapGrad: the loss must be a scalar");
  // _autograd_grad: create_graph=True so the backward is not run in
  // no_grad mode, allow_unused with zeros for unused inputs.
  std::vector<torch::Tensor> grads = torch::autograd::grad(
      {output}, wrapped_params, /*grad_outputs=*/{}, /*retain_graph=*/true,
      /*create_graph=*/true, /*allow_unused=*/true);
  std::vector<torch::Tensor> out;
  out.reserve(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    torch::Tensor g =
        grads[i].defined() ? grads[i] : torch::zeros_like(wrapped_params[i]);
    out.push_back(UnwrapForGrad(g, level));
  }
  return out;
}

int64_t BatchSize(const std::vector<torch::Tensor>& batched) {
  TORCH_CHECK(!batched.empty(), "VmapGrad needs a batched input");
  const int64_t n = batched[0].size(0);
  for (const auto& t : batched) {
    TORCH_CHECK(t.size(0) == n, "VmapGrad: batched inputs differ in size");
  }
  return n;
}

// The batch dimension of a grad-sampler result's inputs: activations cast to
// the output gradient's dtype (autocast runs layers in a lower precision),
// the gradient scaled by the batch size for a mean-reduced loss.
std::pair<torch::Tensor, torch::Tensor> Rearrange(const torch::Tensor& input,
                                                  const torch::Tensor& grad) {
  const int64_t n = input.size(0);
  return {input.to(grad.scalar_type()), grad.detach() * n};
}

}  // namespace per_sample_gradients_internal

std::vector<torch::Tensor> VmapGrad(const SampleLoss& loss,
                                    const std::vector<torch::Tensor>& params,
                                    const std::vector<torch::Tensor>& batched) {
  namespace internal = per_sample_gradients_internal;
  namespace ft = at::functorch;
  const int64_t batch_size = internal::BatchSize(batched);
  std::vector<torch::Tensor> per_sample;
  {
    internal::DynamicLayerScope vmap_level(ft::initAndPushDynamicLayer(
        ft::TransformType::Vmap, c10::SymInt(batch_size),
        ft::RandomnessType::Error));
    std::vector<torch::Tensor> sample;
    sample.reserve(batched.size());
    for (const auto& t : batched) {
      sample.push_back(at::_add_batch_dim(t, 0, vmap_level.level()));
    }
    std::vector<torch::Tensor> grads =
        internal::GradAtNewLevel(loss, params, sample);
    per_sample.reserve(grads.size());
    for (const auto& g : grads) {
      per_sample.push_back(
          at::_remove_batch_dim(g, vmap_level.level(), batch_size, 0));
    }
  }
  return per_sample;
}

void GradSampleHooks::Conv2d(const torch::Tensor& input,
                             const torch::Tensor& output,
                             const torch::Tensor& weight,
                             const torch::Tensor& bias,
                             const Conv2dGeometry& geometry) {
  if (!output.requires_grad()) return;
  TORCH_CHECK(weight.dim() == 4 && weight.size(1) == input.size(1),
              "GradSampleHooks::Conv2d supports groups=1 only");
  torch::Tensor activations = input.detach();
  output.register_hook([this, activations, weight, bias,
                        geometry](const torch::Tensor& grad_output) {
    auto [a, b] =
        per_sample_gradients_internal::Rearrange(activations, grad_output);
    const int64_t n = a.size(0);
    // Opacus's unfold2d is F.unfold's (C * kh * kw, L) layout.
    a = torch::nn::functional::unfold(
        a, torch::nn::functional::UnfoldFuncOptions(geometry.kernel_size)
               .dilation(geometry.dilation)
               .padding(geometry.padding)
               .stride(geometry.stride));
    b = b.reshape({n, -1, a.size(-1)});
    // einsum("noq,npq->nop"); for groups=1 Opacus's diagonal extraction
    // over groups is the identity.
    std::vector<int64_t> shape = {n};
    shape.insert(shape.end(), weight.sizes().begin(), weight.sizes().end());
    Accumulate(weight,
               torch::einsum("noq,npq->nop", {b, a}).contiguous().view(shape));
    if (bias.defined()) Accumulate(bias, b.sum(2));
  });
}

void GradSampleHooks::Linear(const torch::Tensor& input,
                             const torch::Tensor& output,
                             const torch::Tensor& weight,
                             const torch::Tensor& bias) {
  if (!output.requires_grad()) return;
  torch::Tensor activations = input.detach();
  output.register_hook(
      [this, activations, weight, bias](const torch::Tensor& grad_output) {
        auto [a, b] =
            per_sample_gradients_internal::Rearrange(activations, grad_output);
        Accumulate(weight, torch::einsum("n...i,n...j->nij", {b, a}));
        if (bias.defined()) {
          Accumulate(bias, torch::einsum("n...k->nk", {b}));
        }
      });
}

void GradSampleHooks::GroupNorm(const torch::Tensor& input,
                                const torch::Tensor& output,
                                const torch::Tensor& weight,
                                const torch::Tensor& bias, int64_t num_groups,
                                double eps) {
  if (!output.requires_grad()) return;
  torch::Tensor activations = input.detach();
  output.register_hook([this, activations, weight, bias, num_groups,
                        eps](const torch::Tensor& grad_output) {
    // Opacus's grad sampler reads the input as it was, not its dtype cast.
    torch::Tensor a = activations;
    torch::Tensor b = grad_output.detach() * a.size(0);
    torch::Tensor normalized = torch::nn::functional::group_norm(
        a, torch::nn::functional::GroupNormFuncOptions(num_groups).eps(eps));
    Accumulate(weight, torch::einsum("ni...->ni", {normalized * b}));
    if (bias.defined()) Accumulate(bias, torch::einsum("ni...->ni", {b}));
  });
}

torch::Tensor GradSampleHooks::GradSample(const torch::Tensor& param) const {
  auto it = grad_samples_.find(param.unsafeGetTensorImpl());
  TORCH_CHECK(it != grad_samples_.end(),
              "no per-sample gradient recorded for a parameter");
  return it->second;
}

void GradSampleHooks::Accumulate(const torch::Tensor& param,
                                 torch::Tensor grad_sample) {
  auto [it, inserted] =
      grad_samples_.emplace(param.unsafeGetTensorImpl(), grad_sample);
  if (!inserted) it->second = it->second + grad_sample;
}

std::vector<torch::Tensor> ClipAndAccumulate(
    const std::vector<torch::Tensor>& grad_samples, double max_norm,
    torch::Tensor* norms) {
  TORCH_CHECK(!grad_samples.empty(), "ClipAndAccumulate: no gradients");
  const int64_t n = grad_samples[0].size(0);
  std::vector<torch::Tensor> per_param;
  per_param.reserve(grad_samples.size());
  for (const auto& g : grad_samples) {
    per_param.push_back(g.reshape({n, -1}).norm(2, /*dim=*/{-1}));
  }
  torch::Tensor per_sample = torch::stack(per_param, 1).norm(2, {1});
  torch::Tensor factor = (max_norm / (per_sample + 1e-6)).clamp_max(1.0);
  std::vector<torch::Tensor> summed;
  summed.reserve(grad_samples.size());
  for (const auto& g : grad_samples) {
    summed.push_back(torch::einsum("i,i...", {factor.to(g.scalar_type()), g}));
  }
  if (norms != nullptr) *norms = per_sample;
  return summed;
}

}  // namespace torchbench::common
