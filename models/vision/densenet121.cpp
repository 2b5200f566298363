// torchvision's DenseNet-BC (torchvision/models/densenet.py, arXiv
// 1608.06993) as densenet121 builds it (growth 32, blocks {6, 12, 24, 16},
// 64 initial features, bn_size 4, drop_rate 0, memory_efficient=False), with
// TorchBench's TorchVisionModel train/eval steps
// (models/common/image_classifier.h).
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <string>
#include <vector>

#include "common/families.h"
#include "common/image_classifier.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace densenet121_model {
namespace {

struct DenseNetOptions {
  TORCH_ARG(int64_t, growth_rate) = 32;
  TORCH_ARG(std::vector<int64_t>, block_config) = std::vector<int64_t>{6, 12,
                                                                       24, 16};
  TORCH_ARG(int64_t, num_init_features) = 64;
  TORCH_ARG(int64_t, bn_size) = 4;
  TORCH_ARG(int64_t, num_classes) = 1000;
};

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel,
                       int64_t stride = 1, int64_t padding = 0) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(padding)
                               .bias(false));
}

// drop_rate is 0 for densenet121, so the reference's dropout never runs and
// is left out.
class DenseLayerImpl : public torch::nn::Module {
 public:
  DenseLayerImpl(int64_t num_input_features, int64_t growth_rate,
                 int64_t bn_size)
      : norm1_(register_module("norm1",
                               torch::nn::BatchNorm2d(num_input_features))),
        conv1_(register_module(
            "conv1", Conv(num_input_features, bn_size * growth_rate, 1))),
        norm2_(register_module("norm2",
                               torch::nn::BatchNorm2d(bn_size * growth_rate))),
        conv2_(register_module(
            "conv2", Conv(bn_size * growth_rate, growth_rate, 3, 1, 1))) {}

  // Takes every earlier feature map and concatenates them itself, as
  // torchvision's bn_function does (one cat per layer, not a running one).
  torch::Tensor forward(const std::vector<torch::Tensor>& prev_features) {
    torch::Tensor out = torch::cat(prev_features, 1);
    out = conv1_(norm1_(out).relu_());
    return conv2_(norm2_(out).relu_());
  }

 private:
  torch::nn::BatchNorm2d norm1_;
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d norm2_;
  torch::nn::Conv2d conv2_;
};
TORCH_MODULE(DenseLayer);

class DenseBlockImpl : public torch::nn::Module {
 public:
  DenseBlockImpl(int64_t num_layers, int64_t num_input_features,
                 int64_t bn_size, int64_t growth_rate) {
    for (int64_t i = 0; i < num_layers; ++i) {
      layers_.push_back(
          register_module("denselayer" + std::to_string(i + 1),
                          DenseLayer(num_input_features + i * growth_rate,
                                     growth_rate, bn_size)));
    }
  }

  torch::Tensor forward(const torch::Tensor& init_features) {
    std::vector<torch::Tensor> features = {init_features};
    for (auto& layer : layers_) features.push_back(layer(features));
    return torch::cat(features, 1);
  }

 private:
  std::vector<DenseLayer> layers_;
};
TORCH_MODULE(DenseBlock);

class TransitionImpl : public torch::nn::Module {
 public:
  TransitionImpl(int64_t num_input_features, int64_t num_output_features)
      : norm_(register_module("norm",
                              torch::nn::BatchNorm2d(num_input_features))),
        conv_(register_module(
            "conv", Conv(num_input_features, num_output_features, 1))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    return torch::avg_pool2d(conv_(norm_(x).relu_()), /*kernel_size=*/2,
                             /*stride=*/2);
  }

 private:
  torch::nn::BatchNorm2d norm_;
  torch::nn::Conv2d conv_;
};
TORCH_MODULE(Transition);

class DenseNetImpl : public torch::nn::Module {
 public:
  explicit DenseNetImpl(const DenseNetOptions& options) {
    const int64_t init = options.num_init_features();
    features_->push_back("conv0", Conv(3, init, 7, 2, 3));
    features_->push_back("norm0", torch::nn::BatchNorm2d(init));
    features_->push_back(
        "relu0", torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)));
    features_->push_back(
        "pool0", torch::nn::MaxPool2d(
                     torch::nn::MaxPool2dOptions(3).stride(2).padding(1)));
    int64_t num_features = init;
    const std::vector<int64_t>& blocks = options.block_config();
    for (size_t i = 0; i < blocks.size(); ++i) {
      const std::string index = std::to_string(i + 1);
      features_->push_back(
          "denseblock" + index,
          DenseBlock(blocks[i], num_features, options.bn_size(),
                     options.growth_rate()));
      num_features += blocks[i] * options.growth_rate();
      if (i + 1 != blocks.size()) {
        features_->push_back("transition" + index,
                             Transition(num_features, num_features / 2));
        num_features /= 2;
      }
    }
    features_->push_back("norm5", torch::nn::BatchNorm2d(num_features));
    register_module("features", features_);
    classifier_ = register_module(
        "classifier", torch::nn::Linear(num_features, options.num_classes()));
    InitWeights();
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = features_->forward(x).relu_();
    out = torch::adaptive_avg_pool2d(out, {1, 1}).flatten(1);
    return classifier_(out);
  }

 private:
  // torchvision's "official init from torch repo": kaiming_normal_ with its
  // defaults on convs, BN weight 1 / bias 0, Linear bias 0 (its weight keeps
  // PyTorch's default, as LibTorch's does).
  void InitWeights() {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight);
      } else if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
        torch::nn::init::ones_(bn->weight);
        torch::nn::init::zeros_(bn->bias);
      } else if (auto* linear = m->as<torch::nn::Linear>()) {
        torch::nn::init::zeros_(linear->bias);
      }
    }
  }

  torch::nn::Sequential features_;
  torch::nn::Linear classifier_{nullptr};
};
TORCH_MODULE(DenseNet);

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    TorchVisionSpec({.name = "densenet121",
                     .train_batch_size = 256,  // DEFAULT_TRAIN_BSIZE
                     .eval_batch_size = 64,    // DEFAULT_EVAL_BSIZE
                     // pinned torchvision densenet121(weights=None), counted
                     // in Python (sum(p.numel() ...) over parameters() and
                     // buffers()). Buffers: 121 BatchNorm2d layers, 41824
                     // channels: 2 * 41824 running stats + 121 = 83769.
                     .reference_parameters = 7978856,
                     .reference_buffers = 83769}),
    common::MakeTorchVisionClassifier<DenseNet>([] {
      return DenseNet(DenseNetOptions());
    }));

}  // namespace densenet121_model
}  // namespace torchbench
