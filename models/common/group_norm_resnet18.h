// torchvision's resnet18 with every BatchNorm2d replaced by
// GroupNorm(min(32, c), c), the network of the two DP-SGD references:
// functorch_dp_cifar10 builds it with norm_layer=lambda c: GroupNorm(min(c,
// 32), c), opacus_cifar10 gets it from Opacus's ModuleValidator.fix
// (GroupNorm(min(32, c), c, affine=True) in each BatchNorm's place).
//
// forward(x) is the module's own forward. Forward(x, params, hooks) runs
// it on an explicit parameter list in parameters() order (torch.func's
// functional_call, for VmapGrad) and, with `hooks`, records every Conv2d,
// GroupNorm and Linear for Opacus-style per-sample gradients. Parameter
// names are torchvision's (conv1.weight, bn1.weight, layer1.0.conv1.weight,
// layer2.0.downsample.1.bias, fc.weight, ...).
#ifndef TORCHBENCH_MODELS_COMMON_GROUP_NORM_RESNET18_H_
#define TORCHBENCH_MODELS_COMMON_GROUP_NORM_RESNET18_H_

#include <torch/nn/functional/conv.h>
#include <torch/nn/functional/linear.h>
#include <torch/nn/functional/normalization.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/per_sample_gradients.h"

namespace torchbench::common {

namespace group_norm_resnet18_internal {

inline torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel,
                              int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(kernel / 2)
                               .bias(false));
}

inline torch::nn::GroupNorm Norm(int64_t channels) {
  return torch::nn::GroupNorm(
      torch::nn::GroupNormOptions(std::min<int64_t>(32, channels), channels));
}

// torchvision's BasicBlock, for its parameter names; the root's Forward runs
// it.
class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride)
      : in(in), out(out), stride(stride) {
    register_module("conv1", Conv(in, out, 3, stride));
    register_module("bn1", Norm(out));
    register_module("conv2", Conv(out, out, 3, 1));
    register_module("bn2", Norm(out));
    if (stride != 1 || in != out) {
      register_module("downsample", torch::nn::Sequential(
                                        Conv(in, out, 1, stride), Norm(out)));
    }
  }
  bool has_downsample() const { return stride != 1 || in != out; }

  int64_t in, out, stride;
};
TORCH_MODULE(BasicBlock);

}  // namespace group_norm_resnet18_internal

class GroupNormResNet18Impl : public torch::nn::Module {
 public:
  explicit GroupNormResNet18Impl(int64_t num_classes) {
    namespace internal = group_norm_resnet18_internal;
    register_module(
        "conv1",
        torch::nn::Conv2d(
            torch::nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(
                false)));
    register_module("bn1", internal::Norm(64));
    int64_t in = 64;
    for (int64_t stage = 0; stage < 4; ++stage) {
      const int64_t out = 64 << stage;
      torch::nn::ModuleList layer;
      for (int64_t b = 0; b < 2; ++b) {
        internal::BasicBlock block(in, out, b == 0 && stage > 0 ? 2 : 1);
        blocks_.push_back(block);
        layer->push_back(block);
        in = out;
      }
      register_module("layer" + std::to_string(stage + 1), layer);
    }
    register_module("fc", torch::nn::Linear(512, num_classes));
    // torchvision's init: kaiming_normal_(fan_out, relu) for convolutions,
    // GroupNorm weight 1 and bias 0 (LibTorch's default, as Opacus's fresh
    // GroupNorms), Linear left at its default (PyTorch's).
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0.0,
                                         torch::kFanOut, torch::kReLU);
      }
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return Forward(x, parameters(), nullptr);
  }

  // The forward on `params` (parameters() order); `hooks` (optional)
  // records each layer for per-sample gradients.
  torch::Tensor Forward(const torch::Tensor& x,
                        const std::vector<torch::Tensor>& params,
                        GradSampleHooks* hooks) const {
    Cursor c{params, hooks};
    torch::Tensor out = c.Conv(x, {7, 7}, 2, 3);
    out = c.Norm(out).relu_();
    out = torch::max_pool2d(out, /*kernel_size=*/3, /*stride=*/2,
                            /*padding=*/1);
    for (const auto& block : blocks_) {
      torch::Tensor h = c.Conv(out, {3, 3}, block->stride, 1);
      h = c.Norm(h).relu_();
      h = c.Norm(c.Conv(h, {3, 3}, 1, 1));
      torch::Tensor identity = out;
      if (block->has_downsample()) {
        identity = c.Norm(c.Conv(out, {1, 1}, block->stride, 0));
      }
      out = (h += identity).relu_();
    }
    out = torch::adaptive_avg_pool2d(out, {1, 1}).flatten(1);
    const torch::Tensor& w = c.Next();
    const torch::Tensor& b = c.Next();
    torch::Tensor logits = torch::nn::functional::linear(out, w, b);
    if (c.Recording(logits)) hooks->Linear(out, logits, w, b);
    TORCH_CHECK(c.index == params.size(), "GroupNormResNet18: ", params.size(),
                " parameters given, ", c.index, " used");
    return logits;
  }

 private:
  // Walks the parameter list in registration order, recording each layer
  // into `hooks` where Opacus's capture hooks would (training, grad mode).
  struct Cursor {
    const std::vector<torch::Tensor>& params;
    GradSampleHooks* hooks;
    size_t index = 0;

    const torch::Tensor& Next() { return params.at(index++); }
    bool Recording(const torch::Tensor& output) const {
      return hooks != nullptr && output.requires_grad();
    }
    torch::Tensor Conv(const torch::Tensor& x, std::vector<int64_t> kernel,
                       int64_t stride, int64_t padding) {
      const torch::Tensor& w = Next();
      torch::Tensor y = torch::nn::functional::conv2d(
          x, w,
          torch::nn::functional::Conv2dFuncOptions().stride(stride).padding(
              padding));
      if (Recording(y)) {
        Conv2dGeometry geometry;
        geometry.kernel_size = std::move(kernel);
        geometry.stride = {stride, stride};
        geometry.padding = {padding, padding};
        hooks->Conv2d(x, y, w, /*bias=*/{}, geometry);
      }
      return y;
    }
    torch::Tensor Norm(const torch::Tensor& x) {
      const torch::Tensor& w = Next();
      const torch::Tensor& b = Next();
      const int64_t groups = std::min<int64_t>(32, x.size(1));
      torch::Tensor y = torch::nn::functional::group_norm(
          x, torch::nn::functional::GroupNormFuncOptions(groups)
                 .weight(w)
                 .bias(b)
                 .eps(1e-5));
      if (Recording(y)) hooks->GroupNorm(x, y, w, b, groups, 1e-5);
      return y;
    }
  };

  std::vector<group_norm_resnet18_internal::BasicBlock> blocks_;
};
TORCH_MODULE(GroupNormResNet18);

}  // namespace torchbench::common

#endif  // TORCHBENCH_MODELS_COMMON_GROUP_NORM_RESNET18_H_
