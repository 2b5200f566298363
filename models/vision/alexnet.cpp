// torchvision's AlexNet (torchvision/models/alexnet.py, the "one weird
// trick" variant of arXiv 1404.5997) with TorchBench's TorchVisionModel
// train/eval steps (models/common/image_classifier.h).
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "common/families.h"
#include "common/image_classifier.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace alexnet_model {
namespace {

torch::nn::ReLU Relu() {
  return torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true));
}

torch::nn::MaxPool2d Pool() {
  return torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(3).stride(2));
}

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                       int64_t padding) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(padding));
}

// Parameterless layers sit in the Sequentials too, so the parameters keep
// torchvision's indices (features.3.weight, classifier.6.bias, ...).
// LibTorch's default Conv2d/Linear init is PyTorch's, which torchvision
// keeps for AlexNet.
class AlexNetImpl : public torch::nn::Module {
 public:
  explicit AlexNetImpl(int64_t num_classes = 1000, double dropout = 0.5)
      : features_(register_module(
            "features",
            torch::nn::Sequential(Conv(3, 64, 11, 4, 2), Relu(), Pool(),
                                  Conv(64, 192, 5, 1, 2), Relu(), Pool(),
                                  Conv(192, 384, 3, 1, 1), Relu(),
                                  Conv(384, 256, 3, 1, 1), Relu(),
                                  Conv(256, 256, 3, 1, 1), Relu(), Pool()))),
        classifier_(register_module(
            "classifier",
            torch::nn::Sequential(torch::nn::Dropout(dropout),
                                  torch::nn::Linear(256 * 6 * 6, 4096), Relu(),
                                  torch::nn::Dropout(dropout),
                                  torch::nn::Linear(4096, 4096), Relu(),
                                  torch::nn::Linear(4096, num_classes)))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = features_->forward(x);
    out = torch::adaptive_avg_pool2d(out, {6, 6}).flatten(1);
    return classifier_->forward(out);
  }

 private:
  torch::nn::Sequential features_;
  torch::nn::Sequential classifier_;
};
TORCH_MODULE(AlexNet);

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    TorchVisionSpec({.name = "alexnet",
                     .train_batch_size = 128,  // DEFAULT_TRAIN_BSIZE
                     .eval_batch_size = 128,   // DEFAULT_EVAL_BSIZE
                     // pinned torchvision alexnet(weights=None), counted in
                     // Python (sum(p.numel() ...)); no buffers.
                     .reference_parameters = 61100840,
                     .reference_buffers = 0}),
    common::MakeTorchVisionClassifier<AlexNet>([] { return AlexNet(); }));

}  // namespace alexnet_model
}  // namespace torchbench
