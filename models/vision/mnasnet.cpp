// torchvision's MNASNet B1 (torchvision/models/mnasnet.py) with TorchBench's
// TorchVisionModel train/eval steps. mnasnet1_0 is MNASNetOptions().alpha(1).
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <array>
#include <vector>

#include "common/families.h"
#include "common/image_classifier.h"
#include "common/mobile_blocks.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace mnasnet_model {
namespace {

using common::Activation;
using common::ConvNormActivation;
using common::ConvNormActivationOptions;
using common::InvertedResidual;
using common::InvertedResidualLayout;
using common::InvertedResidualOptions;

// _BN_MOMENTUM: TensorFlow's decay 0.9997 in PyTorch's convention.
constexpr double kBnMomentum = 1 - 0.9997;

struct MNASNetOptions {
  TORCH_ARG(double, alpha) = 1.0;
  TORCH_ARG(int64_t, num_classes) = 1000;
  TORCH_ARG(double, dropout) = 0.2;
};

// _round_to_multiple_of(val, divisor, round_up_bias=0.9).
int64_t RoundToMultipleOf(double val, int64_t divisor) {
  const int64_t new_val = std::max<int64_t>(
      divisor, static_cast<int64_t>(val + divisor / 2.0) / divisor * divisor);
  return new_val >= 0.9 * val ? new_val : new_val + divisor;
}

// One _stack(...) argument list: kernel, first stride, expansion, repeats.
struct StackSetting {
  int64_t kernel, stride, expansion, repeats;
};
constexpr std::array<StackSetting, 6> kStacks = {{{3, 2, 3, 3},
                                                  {5, 2, 3, 3},
                                                  {5, 2, 6, 3},
                                                  {3, 1, 6, 2},
                                                  {5, 2, 6, 4},
                                                  {3, 1, 6, 1}}};

class MNASNetImpl : public torch::nn::Module {
 public:
  explicit MNASNetImpl(const MNASNetOptions& o) {
    TORCH_CHECK(o.alpha() > 0.0, "alpha must be positive");
    std::array<int64_t, 8> depths = {32, 16, 24, 40, 80, 96, 192, 320};
    for (int64_t& d : depths) d = RoundToMultipleOf(d * o.alpha(), 8);
    const common::NormSettings norm{/*eps=*/1e-5, kBnMomentum};

    // The stem is flat in the reference (layers.0 ... layers.7): conv-BN-ReLU,
    // depthwise conv-BN-ReLU, then a 1x1 conv-BN without activation.
    torch::nn::Sequential layers;
    for (const common::TensorSequential& stem :
         {ConvNormActivation(
              ConvNormActivationOptions(3, depths[0]).stride(2).norm(norm)),
          ConvNormActivation(ConvNormActivationOptions(depths[0], depths[0])
                                 .groups(depths[0])
                                 .norm(norm)),
          ConvNormActivation(ConvNormActivationOptions(depths[0], depths[1])
                                 .kernel_size(1)
                                 .activation(Activation::kNone)
                                 .norm(norm))}) {
      for (const torch::nn::AnyModule& m : *stem) layers->push_back(m);
    }
    for (size_t i = 0; i < kStacks.size(); ++i) {
      const StackSetting& s = kStacks[i];
      common::TensorSequential stack;
      for (int64_t r = 0; r < s.repeats; ++r) {
        const int64_t in = r == 0 ? depths[i + 1] : depths[i + 2];
        stack->push_back(InvertedResidual(
            InvertedResidualOptions(in, in * s.expansion, depths[i + 2])
                .kernel_size(s.kernel)
                .stride(r == 0 ? s.stride : 1)
                .activation(Activation::kReLU)
                .always_expand(true)
                .norm(norm)
                .layout(InvertedResidualLayout::kFlat)
                .container("layers")));
      }
      layers->push_back(stack);
    }
    const common::TensorSequential head = ConvNormActivation(
        ConvNormActivationOptions(depths[7], 1280).kernel_size(1).norm(norm));
    for (const torch::nn::AnyModule& m : *head) layers->push_back(m);
    layers_ = register_module("layers", layers);
    classifier_ = register_module(
        "classifier",
        torch::nn::Sequential(
            torch::nn::Dropout(
                torch::nn::DropoutOptions(o.dropout()).inplace(true)),
            torch::nn::Linear(1280, o.num_classes())));
    common::InitMobileWeights(*this, common::LinearInit::kKaimingUniformOut);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    // mean([2, 3]): global average pool without the 1x1 dimensions.
    torch::Tensor out = layers_->forward(x).mean({2, 3});
    return classifier_->forward(out);
  }

 private:
  torch::nn::Sequential layers_{nullptr};
  torch::nn::Sequential classifier_{nullptr};
};
TORCH_MODULE(MNASNet);

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    TorchVisionSpec({.name = "mnasnet1_0",
                     .train_batch_size = 32,  // DEFAULT_TRAIN_BSIZE
                     .eval_batch_size = 32,   // DEFAULT_EVAL_BSIZE
                     // pinned torchvision mnasnet1_0(weights=None), counted in
                     // Python (sum(p.numel() ...) over parameters() and
                     // buffers(); 52 BatchNorm2d layers' running stats and
                     // num_batches_tracked).
                     .reference_parameters = 4383312,
                     .reference_buffers = 37972}),
    common::MakeTorchVisionClassifier<MNASNet>([] {
      return MNASNet(MNASNetOptions().alpha(1.0));
    }));

}  // namespace mnasnet_model
}  // namespace torchbench
