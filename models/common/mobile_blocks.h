// Building blocks of torchvision's mobile classifiers (mobilenet_v2,
// mobilenet_v3, mnasnet), with torchvision's parameter names:
//
//   ConvNormActivation   torchvision.ops.misc.Conv2dNormActivation, a
//                        Sequential whose children are 0 (conv), 1 (norm)
//                        and 2 (activation).
//   SqueezeExcitation    torchvision.ops.misc.SqueezeExcitation (fc1, fc2);
//                        the child names and activations are options so
//                        timm's SqueezeExcite (conv_reduce, conv_expand, SiLU
//                        and sigmoid) is the same module.
//   InvertedResidual     pointwise expand, depthwise, optional SE, pointwise
//                        project, with the three Sequential layouts the
//                        torchvision models name their parameters by.
//   InitMobileWeights    the init loop those models end their __init__ with.
#ifndef TORCHBENCH_MODELS_COMMON_MOBILE_BLOCKS_H_
#define TORCHBENCH_MODELS_COMMON_MOBILE_BLOCKS_H_

#include <torch/nn/functional/activation.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/functional.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

namespace torchbench::common {

enum class Activation {
  kNone,
  kReLU,
  kReLU6,
  kHardswish,
  kHardsigmoid,
  kSigmoid,
  kSiLU
};

// Applies `activation`; `inplace` follows the reference module's inplace
// flag (it changes memory use, not values).
inline torch::Tensor Activate(Activation activation, torch::Tensor x,
                              bool inplace = false) {
  switch (activation) {
    case Activation::kNone:
      return x;
    case Activation::kReLU:
      return inplace ? torch::relu_(x) : torch::relu(x);
    case Activation::kReLU6:
      // nn.ReLU6 is hardtanh(x, 0, 6).
      return inplace ? torch::hardtanh_(x, 0.0, 6.0)
                     : torch::hardtanh(x, 0.0, 6.0);
    case Activation::kHardswish:
      return inplace ? torch::hardswish_(x) : torch::hardswish(x);
    case Activation::kHardsigmoid:
      return inplace ? torch::hardsigmoid_(x) : torch::hardsigmoid(x);
    case Activation::kSigmoid:
      return inplace ? torch::sigmoid_(x) : torch::sigmoid(x);
    case Activation::kSiLU:
      return inplace ? torch::silu_(x) : torch::silu(x);
  }
  return x;
}

// A parameter-free module applying `activation`, so that it can sit in a
// Sequential at the index the reference's activation module occupies.
inline torch::nn::Functional ActivationModule(Activation activation,
                                              bool inplace = true) {
  return torch::nn::Functional([activation, inplace](torch::Tensor x) {
    return Activate(activation, std::move(x), inplace);
  });
}

// A Sequential with a concrete forward, so Sequentials can nest (LibTorch's
// AnyModule cannot hold Sequential's templated forward).
class TensorSequentialImpl : public torch::nn::SequentialImpl {
 public:
  using SequentialImpl::SequentialImpl;
  torch::Tensor forward(torch::Tensor x) {
    return SequentialImpl::forward(std::move(x));
  }
};
TORCH_MODULE(TensorSequential);

// nn.BatchNorm2d's eps and momentum (mobilenet_v3 uses 1e-3 / 0.01, mnasnet
// momentum 1 - 0.9997).
struct NormSettings {
  double eps = 1e-5;
  double momentum = 0.1;
};

inline torch::nn::BatchNorm2d BatchNorm(int64_t channels,
                                        const NormSettings& norm) {
  return torch::nn::BatchNorm2d(
      torch::nn::BatchNorm2dOptions(channels).eps(norm.eps).momentum(
          norm.momentum));
}

// A bias-free 2-D convolution with torchvision's "same" padding
// (kernel - 1) / 2 * dilation.
inline torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel,
                              int64_t stride = 1, int64_t groups = 1,
                              int64_t dilation = 1, bool bias = false) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding((kernel - 1) / 2 * dilation)
                               .dilation(dilation)
                               .groups(groups)
                               .bias(bias));
}

struct ConvNormActivationOptions {
  ConvNormActivationOptions(int64_t in_channels, int64_t out_channels)
      : in_channels_(in_channels), out_channels_(out_channels) {}
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, out_channels);
  TORCH_ARG(int64_t, kernel_size) = 3;
  TORCH_ARG(int64_t, stride) = 1;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(int64_t, dilation) = 1;
  TORCH_ARG(Activation, activation) = Activation::kReLU;
  // Conv2dNormActivation's inplace=True default.
  TORCH_ARG(bool, inplace) = true;
  TORCH_ARG(NormSettings, norm) = NormSettings{};
};

// Conv2dNormActivation: conv (bias-free, as norm_layer is set), batch norm,
// then the activation unless kNone (which, as in torchvision, leaves the
// Sequential with two children).
inline TensorSequential ConvNormActivation(const ConvNormActivationOptions& o) {
  TensorSequential seq(Conv(o.in_channels(), o.out_channels(), o.kernel_size(),
                            o.stride(), o.groups(), o.dilation()),
                       BatchNorm(o.out_channels(), o.norm()));
  if (o.activation() != Activation::kNone) {
    seq->push_back(ActivationModule(o.activation(), o.inplace()));
  }
  return seq;
}

struct SqueezeExcitationOptions {
  SqueezeExcitationOptions(int64_t input_channels, int64_t squeeze_channels)
      : input_channels_(input_channels), squeeze_channels_(squeeze_channels) {}
  TORCH_ARG(int64_t, input_channels);
  TORCH_ARG(int64_t, squeeze_channels);
  TORCH_ARG(Activation, activation) = Activation::kReLU;
  TORCH_ARG(Activation, scale_activation) = Activation::kSigmoid;
  TORCH_ARG(std::string, reduce_name) = "fc1";
  TORCH_ARG(std::string, expand_name) = "fc2";
};

// scale = gate(expand(act(reduce(avgpool(x))))); returns scale * x.
class SqueezeExcitationImpl : public torch::nn::Module {
 public:
  explicit SqueezeExcitationImpl(const SqueezeExcitationOptions& options)
      : options_(options),
        reduce_(register_module(
            options.reduce_name(),
            torch::nn::Conv2d(torch::nn::Conv2dOptions(
                options.input_channels(), options.squeeze_channels(), 1)))),
        expand_(register_module(
            options.expand_name(),
            torch::nn::Conv2d(torch::nn::Conv2dOptions(
                options.squeeze_channels(), options.input_channels(), 1)))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor scale = torch::adaptive_avg_pool2d(x, {1, 1});
    scale = Activate(options_.activation(), reduce_(scale));
    scale = Activate(options_.scale_activation(), expand_(scale));
    return scale * x;
  }

 private:
  SqueezeExcitationOptions options_;
  torch::nn::Conv2d reduce_;
  torch::nn::Conv2d expand_;
};
TORCH_MODULE(SqueezeExcitation);

// How an inverted residual names its layers inside its one Sequential.
enum class InvertedResidualLayout {
  // torchvision mobilenet_v3 "block": every stage is a ConvNormActivation
  // (block.0.0.weight, ..., block.2.fc1.weight, block.3.1.weight).
  kNested,
  // torchvision mobilenet_v2 "conv": expand and depthwise are
  // ConvNormActivations, the projection a bare conv and norm
  // (conv.0.0.weight, conv.1.0.weight, conv.2.weight, conv.3.weight).
  kNestedProjectFlat,
  // torchvision mnasnet "layers": all eight modules flat (layers.0.weight,
  // layers.1.weight, ..., layers.7.weight).
  kFlat,
};

struct InvertedResidualOptions {
  InvertedResidualOptions(int64_t in_channels, int64_t expanded_channels,
                          int64_t out_channels)
      : in_channels_(in_channels),
        expanded_channels_(expanded_channels),
        out_channels_(out_channels) {}
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, expanded_channels);
  TORCH_ARG(int64_t, out_channels);
  TORCH_ARG(int64_t, kernel_size) = 3;
  TORCH_ARG(int64_t, stride) = 1;
  TORCH_ARG(int64_t, dilation) = 1;
  TORCH_ARG(Activation, activation) = Activation::kReLU6;
  // Whether the 1x1 expansion exists even when expanded == in (mnasnet
  // always expands; the mobilenets skip it then).
  TORCH_ARG(bool, always_expand) = false;
  // Squeeze-excitation after the depthwise stage when > 0.
  TORCH_ARG(int64_t, se_channels) = 0;
  TORCH_ARG(Activation, se_scale_activation) = Activation::kHardsigmoid;
  TORCH_ARG(NormSettings, norm) = NormSettings{};
  TORCH_ARG(InvertedResidualLayout, layout) = InvertedResidualLayout::kNested;
  // The Sequential's name: "block" (v3), "conv" (v2), "layers" (mnasnet).
  TORCH_ARG(std::string, container) = "block";
};

class InvertedResidualImpl : public torch::nn::Module {
 public:
  explicit InvertedResidualImpl(const InvertedResidualOptions& o)
      : use_residual_(o.stride() == 1 && o.in_channels() == o.out_channels()) {
    TORCH_CHECK(o.stride() == 1 || o.stride() == 2, "stride must be 1 or 2");
    const bool flat = o.layout() == InvertedResidualLayout::kFlat;
    const bool flat_project = o.layout() != InvertedResidualLayout::kNested;
    TensorSequential layers;
    auto add = [&layers](TensorSequential stage, bool unpack) {
      if (!unpack) {
        layers->push_back(stage);
        return;
      }
      for (const torch::nn::AnyModule& child : *stage) {
        layers->push_back(child);
      }
    };
    if (o.always_expand() || o.expanded_channels() != o.in_channels()) {
      add(ConvNormActivation(
              ConvNormActivationOptions(o.in_channels(), o.expanded_channels())
                  .kernel_size(1)
                  .activation(o.activation())
                  .norm(o.norm())),
          flat);
    }
    // torchvision's mobilenet_v3 replaces stride by dilation.
    add(ConvNormActivation(ConvNormActivationOptions(o.expanded_channels(),
                                                     o.expanded_channels())
                               .kernel_size(o.kernel_size())
                               .stride(o.dilation() > 1 ? 1 : o.stride())
                               .dilation(o.dilation())
                               .groups(o.expanded_channels())
                               .activation(o.activation())
                               .norm(o.norm())),
        flat);
    if (o.se_channels() > 0) {
      layers->push_back(SqueezeExcitation(
          SqueezeExcitationOptions(o.expanded_channels(), o.se_channels())
              .scale_activation(o.se_scale_activation())));
    }
    add(ConvNormActivation(
            ConvNormActivationOptions(o.expanded_channels(), o.out_channels())
                .kernel_size(1)
                .activation(Activation::kNone)
                .norm(o.norm())),
        flat_project);
    layers_ = register_module(o.container(), layers);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = layers_->forward(x);
    return use_residual_ ? out + x : out;
  }

 private:
  bool use_residual_;
  TensorSequential layers_{nullptr};
};
TORCH_MODULE(InvertedResidual);

enum class LinearInit {
  kNormal001,          // nn.init.normal_(w, 0, 0.01) (the mobilenets)
  kKaimingUniformOut,  // kaiming_uniform_(w, "fan_out", "sigmoid") (mnasnet)
};

// The init loop that ends torchvision's MobileNetV2/V3 and MNASNet
// __init__: convs kaiming_normal_(fan_out) with zero bias, batch norms
// ones/zeros, linears per `linear_init` with zero bias.
inline void InitMobileWeights(torch::nn::Module& root, LinearInit linear_init) {
  torch::NoGradGuard no_grad;
  for (auto& m : root.modules(/*include_self=*/false)) {
    if (auto* conv = m->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0.0, torch::kFanOut,
                                       torch::kReLU);
      if (conv->bias.defined()) torch::nn::init::zeros_(conv->bias);
    } else if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
      torch::nn::init::ones_(bn->weight);
      torch::nn::init::zeros_(bn->bias);
    } else if (auto* linear = m->as<torch::nn::Linear>()) {
      if (linear_init == LinearInit::kNormal001) {
        torch::nn::init::normal_(linear->weight, 0.0, 0.01);
      } else {
        torch::nn::init::kaiming_uniform_(linear->weight, /*a=*/0.0,
                                          torch::kFanOut, torch::kSigmoid);
      }
      torch::nn::init::zeros_(linear->bias);
    }
  }
}

// torchvision's _make_divisible (models/_utils.py): the nearest multiple of
// `divisor` at or above max(divisor, ...), never more than 10% below `v`.
inline int64_t MakeDivisible(double v, int64_t divisor) {
  int64_t new_v = std::max<int64_t>(
      divisor, static_cast<int64_t>(v + divisor / 2.0) / divisor * divisor);
  if (new_v < 0.9 * v) new_v += divisor;
  return new_v;
}

}  // namespace torchbench::common

#endif  // TORCHBENCH_MODELS_COMMON_MOBILE_BLOCKS_H_
