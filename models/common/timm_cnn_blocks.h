// Building blocks shared by the timm CNN ports (timm_regnet, timm_resnest,
// timm_vovnet): timm.layers' ConvNormAct, SEModule and ClassifierHead, with
// the installed timm's submodule names so Python state_dicts load by name.
#ifndef TORCHBENCH_MODELS_COMMON_TIMM_CNN_BLOCKS_H_
#define TORCHBENCH_MODELS_COMMON_TIMM_CNN_BLOCKS_H_

#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>

namespace torchbench::common {

// timm.layers.get_padding for a symmetric ("" padding) conv.
inline int64_t TimmPadding(int64_t kernel, int64_t stride = 1,
                           int64_t dilation = 1) {
  return ((stride - 1) + dilation * (kernel - 1)) / 2;
}

struct ConvNormActOptions {
  ConvNormActOptions(int64_t in, int64_t out, int64_t kernel)
      : in_(in), out_(out), kernel_(kernel) {}
  TORCH_ARG(int64_t, in);
  TORCH_ARG(int64_t, out);
  TORCH_ARG(int64_t, kernel);
  TORCH_ARG(int64_t, stride) = 1;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(int64_t, dilation) = 1;
  // False for timm's apply_act=False (the BN's act is Identity).
  TORCH_ARG(bool, apply_act) = true;
};

// timm.layers.ConvNormAct with BatchNormAct2d and ReLU: parameters are
// conv.weight (no bias) and bn.*; the activation lives inside timm's bn and
// has no state.
class ConvNormActImpl : public torch::nn::Module {
 public:
  explicit ConvNormActImpl(const ConvNormActOptions& o)
      : apply_act_(o.apply_act()),
        conv(register_module(
            "conv",
            torch::nn::Conv2d(
                torch::nn::Conv2dOptions(o.in(), o.out(), o.kernel())
                    .stride(o.stride())
                    .padding(TimmPadding(o.kernel(), o.stride(), o.dilation()))
                    .dilation(o.dilation())
                    .groups(o.groups())
                    .bias(false)))),
        bn(register_module("bn", torch::nn::BatchNorm2d(o.out()))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = bn(conv(x));
    return apply_act_ ? torch::relu(out) : out;
  }

 private:
  bool apply_act_;

 public:
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
};
TORCH_MODULE(ConvNormAct);

// timm.layers.SEModule with a given reduced width, no norm, ReLU and sigmoid
// gate: x * sigmoid(fc2(relu(fc1(mean_hw(x))))).
class SEModuleImpl : public torch::nn::Module {
 public:
  SEModuleImpl(int64_t channels, int64_t rd_channels)
      : fc1(register_module("fc1", torch::nn::Conv2d(torch::nn::Conv2dOptions(
                                       channels, rd_channels, 1)))),
        fc2(register_module("fc2", torch::nn::Conv2d(torch::nn::Conv2dOptions(
                                       rd_channels, channels, 1)))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor se = x.mean({2, 3}, /*keepdim=*/true);
    se = fc2(torch::relu(fc1(se)));
    return x * torch::sigmoid(se);
  }

  torch::nn::Conv2d fc1;
  torch::nn::Conv2d fc2;
};
TORCH_MODULE(SEModule);

// timm.layers.ClassifierHead with pool_type="avg" and drop_rate 0: global
// average pool, flatten, head.fc.
class ClassifierHeadImpl : public torch::nn::Module {
 public:
  ClassifierHeadImpl(int64_t in_features, int64_t num_classes)
      : fc(register_module("fc", torch::nn::Linear(in_features, num_classes))) {
  }

  torch::Tensor forward(const torch::Tensor& x) { return fc(x.mean({2, 3})); }

  torch::nn::Linear fc;
};
TORCH_MODULE(ClassifierHead);

// Re-initialises every Conv2d weight of `module` as timm's ResNet and VovNet
// do: kaiming_normal_(mode="fan_out", nonlinearity="relu").
inline void KaimingNormalFanOutConvs(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& m : module.modules(/*include_self=*/false)) {
    if (auto* conv = m->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0.0, torch::kFanOut,
                                       torch::kReLU);
    }
  }
}

}  // namespace torchbench::common

#endif  // TORCHBENCH_MODELS_COMMON_TIMM_CNN_BLOCKS_H_
