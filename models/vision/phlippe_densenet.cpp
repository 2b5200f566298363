// TorchBench's phlippe_densenet: the UvA deep-learning course DenseNet for
// CIFAR-10 (torchbenchmark/models/phlippe_densenet/__init__.py at 43ca0857,
// which defines the network itself; there is no package to compare with),
// with its own AdamW train step.
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
namespace phlippe_densenet_model {
namespace {

// DenseNet.__init__'s defaults, which the benchmark uses.
struct DenseNetConfig {
  int64_t num_classes = 10;
  std::vector<int64_t> num_layers = {6, 6, 6, 6};
  int64_t bn_size = 2;
  int64_t growth_rate = 16;
};

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel,
                       bool bias = false) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, kernel).padding(kernel / 2).bias(bias));
}

// BN-ReLU-1x1 conv-BN-ReLU-3x3 conv, its growth_rate new channels put in
// front of the input's.
class DenseLayerImpl : public torch::nn::Module {
 public:
  DenseLayerImpl(int64_t c_in, int64_t bn_size, int64_t growth_rate)
      : net_(register_module(
            "net", torch::nn::Sequential(
                       torch::nn::BatchNorm2d(c_in), torch::nn::ReLU(),
                       Conv(c_in, bn_size * growth_rate, 1),
                       torch::nn::BatchNorm2d(bn_size * growth_rate),
                       torch::nn::ReLU(),
                       Conv(bn_size * growth_rate, growth_rate, 3)))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    return torch::cat({net_->forward(x), x}, 1);
  }

 private:
  torch::nn::Sequential net_;
};
TORCH_MODULE(DenseLayer);

class DenseBlockImpl : public torch::nn::Module {
 public:
  DenseBlockImpl(int64_t c_in, int64_t num_layers, int64_t bn_size,
                 int64_t growth_rate) {
    for (int64_t i = 0; i < num_layers; ++i) {
      block_->push_back(
          DenseLayer(c_in + i * growth_rate, bn_size, growth_rate));
    }
    register_module("block", block_);
  }

  torch::Tensor forward(const torch::Tensor& x) { return block_->forward(x); }

 private:
  torch::nn::Sequential block_;
};
TORCH_MODULE(DenseBlock);

class TransitionLayerImpl : public torch::nn::Module {
 public:
  TransitionLayerImpl(int64_t c_in, int64_t c_out)
      : transition_(register_module(
            "transition", torch::nn::Sequential(
                              torch::nn::BatchNorm2d(c_in), torch::nn::ReLU(),
                              Conv(c_in, c_out, 1),
                              torch::nn::AvgPool2d(
                                  torch::nn::AvgPool2dOptions(2).stride(2))))) {
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return transition_->forward(x);
  }

 private:
  torch::nn::Sequential transition_;
};
TORCH_MODULE(TransitionLayer);

class DenseNetImpl : public torch::nn::Module {
 public:
  explicit DenseNetImpl(const DenseNetConfig& cfg = {}) {
    int64_t c_hidden = cfg.growth_rate * cfg.bn_size;
    input_net_ = register_module(
        "input_net",
        torch::nn::Sequential(Conv(3, c_hidden, 3, /*bias=*/true)));
    for (size_t i = 0; i < cfg.num_layers.size(); ++i) {
      blocks_->push_back(DenseBlock(c_hidden, cfg.num_layers[i], cfg.bn_size,
                                    cfg.growth_rate));
      c_hidden += cfg.num_layers[i] * cfg.growth_rate;
      if (i + 1 < cfg.num_layers.size()) {
        blocks_->push_back(TransitionLayer(c_hidden, c_hidden / 2));
        c_hidden /= 2;
      }
    }
    register_module("blocks", blocks_);
    output_net_ = register_module(
        "output_net", torch::nn::Sequential(
                          torch::nn::BatchNorm2d(c_hidden), torch::nn::ReLU(),
                          torch::nn::AdaptiveAvgPool2d(
                              torch::nn::AdaptiveAvgPool2dOptions({1, 1})),
                          torch::nn::Flatten(),
                          torch::nn::Linear(c_hidden, cfg.num_classes)));
    InitParams();
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return output_net_->forward(blocks_->forward(input_net_->forward(x)));
  }

 private:
  // _init_params with act_fn_name "relu": kaiming_normal_ (fan_in) on conv
  // weights, BN weight 1 / bias 0; conv biases and Linear keep PyTorch's
  // defaults, which LibTorch shares.
  void InitParams() {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0.0, torch::kFanIn,
                                         torch::kReLU);
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
TORCH_MODULE(DenseNet);

}  // namespace

// Counts: the reference's DenseNet() (its __init__.py at 43ca0857, run from
// a scratch copy with pinned torch), counted in Python (sum(p.numel() ...)
// over parameters() and buffers()). No channels-last: the reference Model
// has no enable_channels_last(). The golden file holds outputs, loss,
// gradients and two optimizer steps of the reference's own code on filled
// weights (tools/golden/adapters/phlippe_densenet.py). The optimizer is the
// reference's AdamW(lr 1e-3, weight decay 1e-4).
TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "phlippe_densenet",
         .domain = "vision",
         .task = "image classification",
         .reference = "TorchBench phlippe_densenet (UvA DL course DenseNet)",
         .train_batch_size = 128,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 128,   // DEFAULT_EVAL_BSIZE
         .reference_parameters = 239146,
         .reference_buffers = 7972,
         .checks = {.golden_file = "phlippe_densenet.golden"}}),
    common::MakePhlippeClassifier<DenseNet>(
        [] { return DenseNet(); },
        [](std::vector<torch::Tensor> params, OptimizerPath path) {
          return std::unique_ptr<optim::Optimizer>(
              std::make_unique<optim::Adam>(
                  std::move(params),
                  optim::AdamOptions{.lr = 1e-3,
                                     .weight_decay = 1e-4,
                                     .decoupled_weight_decay = true},
                  path));
        }));

}  // namespace phlippe_densenet_model
}  // namespace torchbench
