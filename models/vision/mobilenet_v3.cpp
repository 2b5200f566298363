// torchvision's MobileNetV3 (torchvision/models/mobilenetv3.py) with
// TorchBench's TorchVisionModel train/eval steps. Only the "large"
// configuration is registered; "small" is another MobileNetV3Options table.
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <vector>

#include "common/families.h"
#include "common/image_classifier.h"
#include "common/mobile_blocks.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace mobilenet_v3_model {
namespace {

using common::Activation;
using common::ConvNormActivation;
using common::ConvNormActivationOptions;
using common::InvertedResidual;
using common::InvertedResidualLayout;
using common::InvertedResidualOptions;

// torchvision's InvertedResidualConfig (before width_mult scaling).
struct BneckConfig {
  int64_t input_channels;
  int64_t kernel;
  int64_t expanded_channels;
  int64_t out_channels;
  bool use_se;
  bool use_hs;  // activation "HS" (hardswish) rather than "RE" (ReLU)
  int64_t stride;
  int64_t dilation;
};

struct MobileNetV3Options {
  TORCH_ARG(std::vector<BneckConfig>, setting);
  TORCH_ARG(int64_t, last_channel) = 1280;
  TORCH_ARG(double, width_mult) = 1.0;
  TORCH_ARG(int64_t, num_classes) = 1000;
  TORCH_ARG(double, dropout) = 0.2;
};

// _mobilenet_v3_conf("mobilenet_v3_large") with reduced_tail and dilated
// False.
MobileNetV3Options LargeOptions() {
  return MobileNetV3Options()
      .setting({{16, 3, 16, 16, false, false, 1, 1},
                {16, 3, 64, 24, false, false, 2, 1},
                {24, 3, 72, 24, false, false, 1, 1},
                {24, 5, 72, 40, true, false, 2, 1},
                {40, 5, 120, 40, true, false, 1, 1},
                {40, 5, 120, 40, true, false, 1, 1},
                {40, 3, 240, 80, false, true, 2, 1},
                {80, 3, 200, 80, false, true, 1, 1},
                {80, 3, 184, 80, false, true, 1, 1},
                {80, 3, 184, 80, false, true, 1, 1},
                {80, 3, 480, 112, true, true, 1, 1},
                {112, 3, 672, 112, true, true, 1, 1},
                {112, 5, 672, 160, true, true, 2, 1},
                {160, 5, 960, 160, true, true, 1, 1},
                {160, 5, 960, 160, true, true, 1, 1}})
      .last_channel(1280);
}

class MobileNetV3Impl : public torch::nn::Module {
 public:
  explicit MobileNetV3Impl(const MobileNetV3Options& o) {
    TORCH_CHECK(!o.setting().empty(), "MobileNetV3 needs a block setting");
    auto adjust = [&o](int64_t channels) {
      return common::MakeDivisible(channels * o.width_mult(), 8);
    };
    // norm_layer = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01).
    const common::NormSettings norm{/*eps=*/1e-3, /*momentum=*/0.01};
    torch::nn::Sequential features(ConvNormActivation(
        ConvNormActivationOptions(3, adjust(o.setting().front().input_channels))
            .stride(2)
            .activation(Activation::kHardswish)
            .norm(norm)));
    for (const BneckConfig& c : o.setting()) {
      const int64_t expanded = adjust(c.expanded_channels);
      features->push_back(InvertedResidual(
          InvertedResidualOptions(adjust(c.input_channels), expanded,
                                  adjust(c.out_channels))
              .kernel_size(c.kernel)
              .stride(c.stride)
              .dilation(c.dilation)
              .activation(c.use_hs ? Activation::kHardswish : Activation::kReLU)
              .se_channels(c.use_se ? common::MakeDivisible(expanded / 4, 8)
                                    : 0)
              .se_scale_activation(Activation::kHardsigmoid)
              .norm(norm)
              .layout(InvertedResidualLayout::kNested)
              .container("block")));
    }
    const int64_t lastconv_in = adjust(o.setting().back().out_channels);
    const int64_t lastconv_out = 6 * lastconv_in;
    features->push_back(
        ConvNormActivation(ConvNormActivationOptions(lastconv_in, lastconv_out)
                               .kernel_size(1)
                               .activation(Activation::kHardswish)
                               .norm(norm)));
    features_ = register_module("features", features);
    classifier_ = register_module(
        "classifier",
        torch::nn::Sequential(
            torch::nn::Linear(lastconv_out, o.last_channel()),
            common::ActivationModule(Activation::kHardswish, /*inplace=*/true),
            torch::nn::Dropout(
                torch::nn::DropoutOptions(o.dropout()).inplace(true)),
            torch::nn::Linear(o.last_channel(), o.num_classes())));
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
TORCH_MODULE(MobileNetV3);

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    TorchVisionSpec({.name = "mobilenet_v3_large",
                     .train_batch_size = 32,  // DEFAULT_TRAIN_BSIZE
                     .eval_batch_size = 32,   // DEFAULT_EVAL_BSIZE
                     // pinned torchvision mobilenet_v3_large(weights=None),
                     // counted in Python (sum(p.numel() ...) over parameters()
                     // and buffers(); 46 BatchNorm2d layers' running stats and
                     // num_batches_tracked).
                     .reference_parameters = 5483032,
                     .reference_buffers = 24446}),
    common::MakeTorchVisionClassifier<MobileNetV3>([] {
      return MobileNetV3(LargeOptions());
    }));

}  // namespace mobilenet_v3_model
}  // namespace torchbench
