// Per-sample gradients for the DP-SGD references (functorch_dp_cifar10,
// opacus_cifar10), in the two ways they compute them, and the per-sample
// clipping both apply.
//
// VmapGrad is `vmap(grad(loss), in_dims=(None, 0, ...))` run through
// LibTorch's own function-transform machinery (ATen's functorch
// DynamicLayer, BatchedTensor and TensorWrapper: the C++ that torch.func
// drives from Python), so the batched backward is the one PyTorch runs:
//
//   std::vector<torch::Tensor> per_sample = common::VmapGrad(
//       [&](const auto& params, const auto& sample) {
//         return F::cross_entropy(net->Forward(sample[0].unsqueeze(0), params),
//                                 sample[1].unsqueeze(0));
//       },
//       net->parameters(), {images, targets});
//
// GradSampleHooks is Opacus's GradSampleModule (opacus 1.3.0, the release
// the reference's `opacus>=1.1.2` resolved to at its commit): each layer's
// forward records its input, a hook on its output receives the output
// gradient during backward and turns both into the layer's per-sample
// parameter gradients in one batched computation with Opacus's grad-sampler
// formulas (unfold + batched matmul for Conv2d, einsum for Linear,
// normalised input x output gradient for GroupNorm):
//
//   common::GradSampleHooks hooks;
//   torch::Tensor y = F::conv2d(x, w, ...);
//   hooks.Conv2d(x, y, w, /*bias=*/{}, geometry);  // before y is modified
//   ... loss.backward() ...
//   torch::Tensor per_sample = hooks.GradSample(w);  // [N, *w.shape]
#ifndef TORCHBENCH_MODELS_COMMON_PER_SAMPLE_GRADIENTS_H_
#define TORCHBENCH_MODELS_COMMON_PER_SAMPLE_GRADIENTS_H_

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

namespace torchbench::common {

// A loss of one sample: `sample` holds one slice (batch dimension removed)
// of each batched input.
using SampleLoss =
    std::function<torch::Tensor(const std::vector<torch::Tensor>& params,
                                const std::vector<torch::Tensor>& sample)>;

// vmap(grad(loss), in_dims=(None, 0, ..., 0))(params, *batched): the
// gradient of `loss` with respect to every parameter, per sample, each
// [batch, *param.shape]. As torch.func.grad does, every argument is wrapped
// for the grad level and only `params` are made differentiable; the vmap
// level runs with randomness="error" (the default).
std::vector<torch::Tensor> VmapGrad(const SampleLoss& loss,
                                    const std::vector<torch::Tensor>& params,
                                    const std::vector<torch::Tensor>& batched);

struct Conv2dGeometry {
  std::vector<int64_t> kernel_size;
  std::vector<int64_t> stride = {1, 1};
  std::vector<int64_t> padding = {0, 0};
  std::vector<int64_t> dilation = {1, 1};
};

// Opacus's GradSampleModule hooks with loss_reduction="mean" and
// batch_first=True: output gradients are multiplied by the batch size, so
// the per-sample gradients are those of each sample's own loss. Per-sample
// gradients of a parameter used by several layers are summed, as Opacus's
// create_or_accumulate_grad_sample does. Record only in training with grad
// mode on (Opacus's capture_activations_hook skips the rest).
class GradSampleHooks {
 public:
  // Each records `input` and hooks `output` (the layer's result, before any
  // in-place op on it changes its version).
  void Conv2d(const torch::Tensor& input, const torch::Tensor& output,
              const torch::Tensor& weight, const torch::Tensor& bias,
              const Conv2dGeometry& geometry);
  void Linear(const torch::Tensor& input, const torch::Tensor& output,
              const torch::Tensor& weight, const torch::Tensor& bias);
  void GroupNorm(const torch::Tensor& input, const torch::Tensor& output,
                 const torch::Tensor& weight, const torch::Tensor& bias,
                 int64_t num_groups, double eps);

  // The per-sample gradient of `param` after backward; throws if none.
  torch::Tensor GradSample(const torch::Tensor& param) const;
  // Drops every per-sample gradient (DPOptimizer.zero_grad's
  // p.grad_sample = None).
  void Clear() { grad_samples_.clear(); }

 private:
  void Accumulate(const torch::Tensor& param, torch::Tensor grad_sample);

  std::unordered_map<const void*, torch::Tensor> grad_samples_;
};

// DP-SGD's per-sample clipping, as both references write it: per-sample
// norms over all parameters, factors max_norm / (norm + 1e-6) clamped to
// at most 1, and the factor-weighted sum over the batch per parameter
// (einsum("i,i...")). `norms` (optional) receives the per-sample norms.
std::vector<torch::Tensor> ClipAndAccumulate(
    const std::vector<torch::Tensor>& grad_samples, double max_norm,
    torch::Tensor* norms = nullptr);

}  // namespace torchbench::common

#endif  // TORCHBENCH_MODELS_COMMON_PER_SAMPLE_GRADIENTS_H_
