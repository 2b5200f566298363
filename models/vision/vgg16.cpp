// torchvision's VGG (torchvision/models/vgg.py) in configuration "D"
// without batch norm, i.e. vgg16 (arXiv 1409.1556), with TorchBench's
// TorchVisionModel train/eval steps (models/common/image_classifier.h).
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <vector>

#include "common/families.h"
#include "common/image_classifier.h"
#include "common/vgg_features.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace vgg16_model {
namespace {

using vgg::Vgg16Config;

torch::nn::ReLU Relu() {
  return torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true));
}

class VggImpl : public torch::nn::Module {
 public:
  explicit VggImpl(const std::vector<int64_t>& config,
                   int64_t num_classes = 1000, double dropout = 0.5)
      : features_(register_module("features", vgg::MakeFeatures(config))),
        classifier_(register_module(
            "classifier",
            torch::nn::Sequential(torch::nn::Linear(512 * 7 * 7, 4096), Relu(),
                                  torch::nn::Dropout(dropout),
                                  torch::nn::Linear(4096, 4096), Relu(),
                                  torch::nn::Dropout(dropout),
                                  torch::nn::Linear(4096, num_classes)))) {
    InitWeights();
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = features_->forward(x);
    out = torch::adaptive_avg_pool2d(out, {7, 7}).flatten(1);
    return classifier_->forward(out);
  }

 private:
  // torchvision's init_weights=True branch (taken when no weights are
  // given).
  void InitWeights() {
    vgg::InitConvolutions(*this);
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* linear = m->as<torch::nn::Linear>()) {
        torch::nn::init::normal_(linear->weight, 0.0, 0.01);
        torch::nn::init::zeros_(linear->bias);
      }
    }
  }

  torch::nn::Sequential features_;
  torch::nn::Sequential classifier_;
};
TORCH_MODULE(Vgg);

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    TorchVisionSpec(
        {.name = "vgg16",
         .train_batch_size = 64,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 4,    // DEFAULT_EVAL_BSIZE
         // pinned torchvision vgg16(weights=None), counted in Python
         // (sum(p.numel() ...)); no buffers.
         .reference_parameters = 138357544,
         .reference_buffers = 0}),
    common::MakeTorchVisionClassifier<Vgg>([] { return Vgg(Vgg16Config()); }));

}  // namespace vgg16_model
}  // namespace torchbench
