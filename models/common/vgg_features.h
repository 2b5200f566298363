// File: models/common/vgg_features.h
//
// torchvision's VGG feature extractor (torchvision/models/vgg.py's
// make_layers without batch norm), shared by vgg16 and by Super_SloMo's
// perceptual loss (its first 22 layers, up to conv4_3). ReLUs and pools sit
// in the Sequential so the convolutions keep torchvision's indices
// (features.0, features.2, ...).
#ifndef TORCHBENCH_MODELS_COMMON_VGG_FEATURES_H_
#define TORCHBENCH_MODELS_COMMON_VGG_FEATURES_H_

#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
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

// make_layers(config, batch_norm=False), cut after its first `max_layers`
// layers (Python's features[:max_layers]).
inline torch::nn::Sequential MakeFeatures(
    const std::vector<int64_t>& config,
    size_t max_layers = std::numeric_limits<size_t>::max()) {
  torch::nn::Sequential features;
  int64_t in = 3;
  for (int64_t v : config) {
    if (v == kMaxPool) {
      features->push_back(
          torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2)));
    } else {
      features->push_back(
          torch::nn::Conv2d(torch::nn::Conv2dOptions(in, v, 3).padding(1)));
      if (features->size() < max_layers) {
        features->push_back(
            torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)));
      }
      in = v;
    }
    if (features->size() >= max_layers) break;
  }
  return features;
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
