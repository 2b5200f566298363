// File: models/common/vgg_features.h
//
// torchvision's VGG feature extractor (torchvision/models/vgg.py's
// make_layers), shared by vgg16 and by Super_SloMo's perceptual loss (its
// first 22 layers, up to conv4_3), both without batch norm, and by doctr's
// CRNN (vgg16_bn_r: with batch norm and rectangular pools). ReLUs and pools sit
// in the Sequential so the convolutions keep torchvision's indices
// (features.0, features.2, ...).
#ifndef TORCHBENCH_MODELS_COMMON_VGG_FEATURES_H_
#define TORCHBENCH_MODELS_COMMON_VGG_FEATURES_H_

#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/pooling.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace torchbench {
namespace vgg {

// An entry of a configuration that is a 2x2 max pool rather than a 3x3
// convolution's output channels.
inline constexpr int64_t kMaxPool = 0;

// torchvision's cfgs["D"] (vgg16).
inline const std::vector<int64_t>& Vgg16Config() {
  static const std::vector<int64_t> config = {
      64,       64,  kMaxPool, 128, 128,      kMaxPool, 256, 256, 256,
      kMaxPool, 512, 512,      512, kMaxPool, 512,      512, 512, kMaxPool};
  return config;
}

// What MakeFeatures builds besides the configuration.
struct FeaturesOptions {
  // Cut after this many layers (Python's features[:max_layers]).
  TORCH_ARG(size_t, max_layers) = std::numeric_limits<size_t>::max();
  // make_layers(config, batch_norm=True): conv, BatchNorm2d, ReLU.
  TORCH_ARG(bool, batch_norm) = false;
  // doctr's vgg16_bn_r: its last `rect_pools` max pools are MaxPool2d((2,
  // 1)), which halve the height only.
  TORCH_ARG(int64_t, rect_pools) = 0;
};

// torchvision's make_layers(config, batch_norm), as FeaturesOptions changes
// it.
inline torch::nn::Sequential MakeFeatures(const std::vector<int64_t>& config,
                                          const FeaturesOptions& options = {}) {
  torch::nn::Sequential features;
  const auto full = [&] { return features->size() >= options.max_layers(); };
  int64_t pools = 0;
  for (int64_t v : config) pools += v == kMaxPool ? 1 : 0;
  int64_t in = 3;
  int64_t pool = 0;
  for (int64_t v : config) {
    if (v == kMaxPool) {
      const bool rect = pool++ >= pools - options.rect_pools();
      const int64_t kernel_width = rect ? 1 : 2;
      features->push_back(
          torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions({2, kernel_width})
                                   .stride({2, kernel_width})));
    } else {
      features->push_back(
          torch::nn::Conv2d(torch::nn::Conv2dOptions(in, v, 3).padding(1)));
      if (options.batch_norm() && !full()) {
        features->push_back(torch::nn::BatchNorm2d(v));
      }
      if (!full()) {
        features->push_back(
            torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)));
      }
      in = v;
    }
    if (full()) break;
  }
  return features;
}

// make_layers(config, batch_norm=False), cut after its first `max_layers`
// layers (Python's features[:max_layers]).
inline torch::nn::Sequential MakeFeatures(const std::vector<int64_t>& config,
                                          size_t max_layers) {
  return MakeFeatures(config, FeaturesOptions().max_layers(max_layers));
}

// torchvision's init_weights=True initialisation of the convolutions
// (taken when no weights are given).
inline void InitConvolutions(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& m : module.modules(/*include_self=*/false)) {
    if (auto* conv = m->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0.0, torch::kFanOut,
                                       torch::kReLU);
      torch::nn::init::zeros_(conv->bias);
    }
  }
}

}  // namespace vgg
}  // namespace torchbench

#endif  // TORCHBENCH_MODELS_COMMON_VGG_FEATURES_H_
