// torchvision's MobileNetV2 (torchvision/models/mobilenetv2.py), shared by
// mobilenet_v2 and mobilenet_v2_quantized_qat (which prepares this network
// for quantization-aware training).
#ifndef TORCHBENCH_MODELS_COMMON_TORCHVISION_MOBILENET_V2_H_
#define TORCHBENCH_MODELS_COMMON_TORCHVISION_MOBILENET_V2_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "common/mobile_blocks.h"

namespace torchbench::torchvision_mobilenet_v2 {

using common::Activation;
using common::ConvNormActivation;
using common::ConvNormActivationOptions;
using common::InvertedResidual;
using common::InvertedResidualLayout;
using common::InvertedResidualOptions;

struct MobileNetV2Options {
  TORCH_ARG(int64_t, num_classes) = 1000;
  TORCH_ARG(double, width_mult) = 1.0;
  TORCH_ARG(int64_t, round_nearest) = 8;
  TORCH_ARG(double, dropout) = 0.2;
};

// The default inverted_residual_setting: expansion t, channels c, repeats
// n, first stride s.
struct StageSetting {
  int64_t t, c, n, s;
};
constexpr std::array<StageSetting, 7> kStages = {{{1, 16, 1, 1},
                                                  {6, 24, 2, 2},
                                                  {6, 32, 3, 2},
                                                  {6, 64, 4, 2},
                                                  {6, 96, 3, 1},
                                                  {6, 160, 3, 2},
                                                  {6, 320, 1, 1}}};

class MobileNetV2Impl : public torch::nn::Module {
 public:
  explicit MobileNetV2Impl(const MobileNetV2Options& o) {
    auto divisible = [&o](double v) {
      return common::MakeDivisible(v, o.round_nearest());
    };
    int64_t input_channel = divisible(32 * o.width_mult());
    const int64_t last_channel =
        divisible(1280 * std::max(1.0, o.width_mult()));
    torch::nn::Sequential features(
        ConvNormActivation(ConvNormActivationOptions(3, input_channel)
                               .stride(2)
                               .activation(Activation::kReLU6)));
    for (const StageSetting& stage : kStages) {
      const int64_t output_channel = divisible(stage.c * o.width_mult());
      for (int64_t i = 0; i < stage.n; ++i) {
        // hidden_dim = int(round(inp * expand_ratio)).
        const int64_t hidden = input_channel * stage.t;
        features->push_back(InvertedResidual(
            InvertedResidualOptions(input_channel, hidden, output_channel)
                .stride(i == 0 ? stage.s : 1)
                .activation(Activation::kReLU6)
                .layout(InvertedResidualLayout::kNestedProjectFlat)
                .container("conv")));
        input_channel = output_channel;
      }
    }
    features->push_back(ConvNormActivation(
        ConvNormActivationOptions(input_channel, last_channel)
            .kernel_size(1)
            .activation(Activation::kReLU6)));
    features_ = register_module("features", features);
    classifier_ = register_module(
        "classifier", torch::nn::Sequential(
                          torch::nn::Dropout(o.dropout()),
                          torch::nn::Linear(last_channel, o.num_classes())));
    common::InitMobileWeights(*this, common::LinearInit::kNormal001);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = features_->forward(x);
    out = torch::adaptive_avg_pool2d(out, {1, 1}).flatten(1);
    return classifier_->forward(out);
  }

 private:
  torch::nn::Sequential features_{nullptr};
  torch::nn::Sequential classifier_{nullptr};
};
TORCH_MODULE(MobileNetV2);

}  // namespace torchbench::torchvision_mobilenet_v2

#endif  // TORCHBENCH_MODELS_COMMON_TORCHVISION_MOBILENET_V2_H_
