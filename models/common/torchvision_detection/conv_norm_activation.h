// File: models/common/torchvision_detection/conv_norm_activation.h
//
// torchvision.ops.misc.Conv2dNormActivation as the detection heads use it
// (norm_layer=None): a Sequential of one biased conv, plus a ReLU unless
// activation_layer=None, so that parameters are named "<block>.0.weight".
// A Sequential subclass with a plain forward() so it can sit inside another
// Sequential (LibTorch's AnyModule cannot hold a bare Sequential).
#ifndef TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_CONV_NORM_ACTIVATION_H_
#define TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_CONV_NORM_ACTIVATION_H_

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/types.h>

#include <cstdint>

namespace torchbench::torchvision_detection {

class ConvNormActivationImpl : public torch::nn::SequentialImpl {
 public:
  ConvNormActivationImpl(int64_t in, int64_t out, int64_t kernel, bool relu) {
    push_back(torch::nn::Conv2d(
        torch::nn::Conv2dOptions(in, out, kernel).padding(kernel / 2)));
    if (relu) {
      push_back(torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    return torch::nn::SequentialImpl::forward(std::move(x));
  }
};
TORCH_MODULE(ConvNormActivation);

}  // namespace torchbench::torchvision_detection

#endif  // TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_CONV_NORM_ACTIVATION_H_
