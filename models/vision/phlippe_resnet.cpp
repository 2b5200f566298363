// TorchBench's phlippe_resnet: the UvA deep-learning course CIFAR ResNet
// (torchbenchmark/models/phlippe_resnet/__init__.py at 43ca0857, which
// defines the network itself; there is no package to compare with), with its
// own SGD train step.
#include <torch/nn/functional/loss.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <memory>
#include <vector>

#include "common/image_classifier.h"
#include "torchbench/amp.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace phlippe_resnet_model {
namespace {

// ResNetModel.__init__'s defaults, which the benchmark uses.
struct CifarResNetConfig {
  int64_t num_classes = 10;
  std::vector<int64_t> num_blocks = {3, 3, 3};
  std::vector<int64_t> c_hidden = {16, 32, 64};
};

torch::nn::Conv2d Conv3x3(int64_t in, int64_t out, int64_t stride = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3)
                               .padding(1)
                               .stride(stride)
                               .bias(false));
}

// The course's ResNetBlock: conv-BN-ReLU-conv-BN plus the input, then ReLU.
// A subsampling block halves the resolution with stride 2 and projects the
// input with a strided 1x1 conv (with bias).
class ResNetBlockImpl : public torch::nn::Module {
 public:
  ResNetBlockImpl(int64_t c_in, bool subsample, int64_t c_out) {
    if (!subsample) c_out = c_in;
    net_ = register_module(
        "net", torch::nn::Sequential(Conv3x3(c_in, c_out, subsample ? 2 : 1),
                                     torch::nn::BatchNorm2d(c_out),
                                     torch::nn::ReLU(), Conv3x3(c_out, c_out),
                                     torch::nn::BatchNorm2d(c_out)));
    if (subsample) {
      downsample_ = register_module(
          "downsample",
          torch::nn::Conv2d(
              torch::nn::Conv2dOptions(c_in, c_out, 1).stride(2)));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor z = net_->forward(x);
    return torch::relu(z + (downsample_ ? downsample_(x) : x));
  }

 private:
  torch::nn::Sequential net_{nullptr};
  torch::nn::Conv2d downsample_{nullptr};
};
TORCH_MODULE(ResNetBlock);

class CifarResNetImpl : public torch::nn::Module {
 public:
  explicit CifarResNetImpl(const CifarResNetConfig& cfg = {}) {
    const auto& c = cfg.c_hidden;
    input_net_ = register_module(
        "input_net",
        torch::nn::Sequential(Conv3x3(3, c[0]), torch::nn::BatchNorm2d(c[0]),
                              torch::nn::ReLU()));
    for (size_t group = 0; group < cfg.num_blocks.size(); ++group) {
      for (int64_t i = 0; i < cfg.num_blocks[group]; ++i) {
        // The first block of every group but the first subsamples.
        const bool subsample = i == 0 && group > 0;
        blocks_->push_back(
            ResNetBlock(c[subsample ? group - 1 : group], subsample, c[group]));
      }
    }
    register_module("blocks", blocks_);
    output_net_ = register_module(
        "output_net",
        torch::nn::Sequential(torch::nn::AdaptiveAvgPool2d(
                                  torch::nn::AdaptiveAvgPool2dOptions({1, 1})),
                              torch::nn::Flatten(),
                              torch::nn::Linear(c.back(), cfg.num_classes)));
    InitParams();
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return output_net_->forward(blocks_->forward(input_net_->forward(x)));
  }

 private:
  // _init_params with act_fn_name "relu": kaiming_normal_(mode="fan_out") on
  // conv weights, BN weight 1 / bias 0; the downsample conv biases and the
  // Linear keep PyTorch's defaults, which LibTorch shares.
  void InitParams() {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0.0,
                                         torch::kFanOut, torch::kReLU);
      } else if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
        torch::nn::init::ones_(bn->weight);
        torch::nn::init::zeros_(bn->bias);
      }
    }
  }

  torch::nn::Sequential input_net_{nullptr};
  torch::nn::Sequential blocks_;
  torch::nn::Sequential output_net_{nullptr};
};
TORCH_MODULE(CifarResNet);

}  // namespace

// Counts: the reference's ResNetModel() (its __init__.py at 43ca0857, run
// from a scratch copy with pinned torch), counted in Python (sum(p.numel()
// ...) over parameters() and buffers()). No channels-last: the reference
// Model has no enable_channels_last(). The golden file holds outputs, loss,
// gradients and two optimizer steps of the reference's own code on filled
// weights (tools/golden/adapters/phlippe_resnet.py). The optimizer is the
// reference's SGD(lr 0.1, momentum 0.9, weight decay 1e-4).
TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "phlippe_resnet",
         .domain = "vision",
         .task = "image classification",
         .reference = "TorchBench phlippe_resnet (UvA DL course CIFAR ResNet)",
         .train_batch_size = 128,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 128,   // DEFAULT_EVAL_BSIZE
         .reference_parameters = 272378,
         .reference_buffers = 1395,
         .checks = {.golden_file = "phlippe_resnet.golden"}}),
    common::MakePhlippeClassifier<CifarResNet>(
        [] { return CifarResNet(); },
        [](std::vector<torch::Tensor> params, OptimizerPath path) {
          return std::unique_ptr<optim::Optimizer>(std::make_unique<optim::Sgd>(
              std::move(params),
              optim::SgdOptions{
                  .lr = 0.1, .momentum = 0.9, .weight_decay = 1e-4},
              path));
        }));

}  // namespace phlippe_resnet_model
}  // namespace torchbench
