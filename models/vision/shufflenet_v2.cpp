// torchvision's ShuffleNetV2 (torchvision/models/shufflenetv2.py) with
// TorchBench's TorchVisionModel train/eval steps. shufflenet_v2_x1_0 is
// stages_repeats {4, 8, 4} and stages_out_channels {24, 116, 232, 464, 1024}.
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <string>
#include <vector>

#include "common/families.h"
#include "common/image_classifier.h"
#include "common/mobile_blocks.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace shufflenet_v2_model {
namespace {

using common::Activation;
using common::ActivationModule;

struct ShuffleNetV2Options {
  TORCH_ARG(std::vector<int64_t>, stages_repeats) = std::vector<int64_t>{4, 8,
                                                                         4};
  TORCH_ARG(std::vector<int64_t>, stages_out_channels) = std::vector<int64_t>{
      24, 116, 232, 464, 1024};
  TORCH_ARG(int64_t, num_classes) = 1000;
};

// ShuffleNetV2 leaves every layer at PyTorch's default init (no init loop),
// which LibTorch's modules reproduce.
torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                       int64_t groups = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(kernel / 2)
                               .groups(groups)
                               .bias(false));
}

torch::nn::BatchNorm2d Norm(int64_t channels) {
  return torch::nn::BatchNorm2d(channels);
}

// torchvision's channel_shuffle: view as (B, groups, C / groups, H, W),
// swap the two channel axes, and make it contiguous again (which also turns
// a channels-last input into a contiguous output, as in the reference).
torch::Tensor ChannelShuffle(const torch::Tensor& x, int64_t groups) {
  const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  return x.view({b, groups, c / groups, h, w})
      .transpose(1, 2)
      .contiguous()
      .view({b, c, h, w});
}

class ShuffleBlockImpl : public torch::nn::Module {
 public:
  ShuffleBlockImpl(int64_t inp, int64_t oup, int64_t stride) : stride_(stride) {
    TORCH_CHECK(stride >= 1 && stride <= 3, "illegal stride value");
    const int64_t branch = oup / 2;
    TORCH_CHECK(stride > 1 || inp == branch * 2,
                "stride 1 needs inp == oup // 2 << 1");
    // A stride-1 block's branch1 is an empty Sequential: no parameters.
    if (stride > 1) {
      branch1_ = register_module(
          "branch1", torch::nn::Sequential(
                         Conv(inp, inp, 3, stride, /*groups=*/inp), Norm(inp),
                         Conv(inp, branch, 1, 1), Norm(branch),
                         ActivationModule(Activation::kReLU)));
    }
    branch2_ = register_module(
        "branch2", torch::nn::Sequential(
                       Conv(stride > 1 ? inp : branch, branch, 1, 1),
                       Norm(branch), ActivationModule(Activation::kReLU),
                       Conv(branch, branch, 3, stride, /*groups=*/branch),
                       Norm(branch), Conv(branch, branch, 1, 1), Norm(branch),
                       ActivationModule(Activation::kReLU)));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out;
    if (stride_ == 1) {
      std::vector<torch::Tensor> halves = x.chunk(2, /*dim=*/1);
      out = torch::cat({halves[0], branch2_->forward(halves[1])}, 1);
    } else {
      out = torch::cat({branch1_->forward(x), branch2_->forward(x)}, 1);
    }
    return ChannelShuffle(out, 2);
  }

 private:
  int64_t stride_;
  torch::nn::Sequential branch1_{nullptr};
  torch::nn::Sequential branch2_{nullptr};
};
TORCH_MODULE(ShuffleBlock);

class ShuffleNetV2Impl : public torch::nn::Module {
 public:
  explicit ShuffleNetV2Impl(const ShuffleNetV2Options& o) {
    TORCH_CHECK(o.stages_repeats().size() == 3,
                "expected stages_repeats as list of 3 positive ints");
    TORCH_CHECK(o.stages_out_channels().size() == 5,
                "expected stages_out_channels as list of 5 positive ints");
    int64_t channels = o.stages_out_channels()[0];
    conv1_ = register_module(
        "conv1", torch::nn::Sequential(Conv(3, channels, 3, 2), Norm(channels),
                                       ActivationModule(Activation::kReLU)));
    for (size_t s = 0; s < 3; ++s) {
      const int64_t out = o.stages_out_channels()[s + 1];
      torch::nn::Sequential stage(ShuffleBlock(channels, out, 2));
      for (int64_t i = 1; i < o.stages_repeats()[s]; ++i) {
        stage->push_back(ShuffleBlock(out, out, 1));
      }
      stages_.push_back(
          register_module("stage" + std::to_string(s + 2), stage));
      channels = out;
    }
    const int64_t last = o.stages_out_channels()[4];
    conv5_ = register_module(
        "conv5", torch::nn::Sequential(Conv(channels, last, 1, 1), Norm(last),
                                       ActivationModule(Activation::kReLU)));
    fc_ = register_module("fc", torch::nn::Linear(last, o.num_classes()));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = conv1_->forward(x);
    out = torch::max_pool2d(out, /*kernel_size=*/3, /*stride=*/2,
                            /*padding=*/1);
    for (auto& stage : stages_) out = stage->forward(out);
    out = conv5_->forward(out).mean({2, 3});  // global pool
    return fc_(out);
  }

 private:
  torch::nn::Sequential conv1_{nullptr};
  std::vector<torch::nn::Sequential> stages_;
  torch::nn::Sequential conv5_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ShuffleNetV2);

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    TorchVisionSpec({.name = "shufflenet_v2_x1_0",
                     .train_batch_size = 128,  // DEFAULT_TRAIN_BSIZE
                     .eval_batch_size = 64,    // DEFAULT_EVAL_BSIZE
                     // pinned torchvision shufflenet_v2_x1_0(weights=None),
                     // counted in Python (sum(p.numel() ...) over parameters()
                     // and buffers(); 56 BatchNorm2d layers' running stats and
                     // num_batches_tracked).
                     .reference_parameters = 2278604,
                     .reference_buffers = 16236}),
    common::MakeTorchVisionClassifier<ShuffleNetV2>([] {
      return ShuffleNetV2(ShuffleNetV2Options());
    }));

}  // namespace shufflenet_v2_model
}  // namespace torchbench
