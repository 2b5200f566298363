// torchvision's SqueezeNet 1.1 (torchvision/models/squeezenet.py). Eval is
// TorchBench's TorchVisionModel step; train is the model's own
// (torchbenchmark/models/squeezenet1_1/__init__.py at 43ca0857): 16
// micro-batches of forward + backward, then one step of an Adam made anew on
// every call.
#include <torch/nn/functional/loss.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <memory>
#include <vector>

#include "common/families.h"
#include "common/image_classifier.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace squeezenet1_1_model {
namespace {

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel,
                       int64_t stride = 1, int64_t padding = 0) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(padding));
}

torch::nn::ReLU Relu() {
  return torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true));
}

torch::nn::MaxPool2d Pool() {
  return torch::nn::MaxPool2d(
      torch::nn::MaxPool2dOptions(3).stride(2).ceil_mode(true));
}

class FireImpl : public torch::nn::Module {
 public:
  FireImpl(int64_t inplanes, int64_t squeeze_planes, int64_t expand1x1_planes,
           int64_t expand3x3_planes)
      : squeeze_(register_module("squeeze", Conv(inplanes, squeeze_planes, 1))),
        expand1x1_(register_module("expand1x1",
                                   Conv(squeeze_planes, expand1x1_planes, 1))),
        expand3x3_(register_module(
            "expand3x3", Conv(squeeze_planes, expand3x3_planes, 3, 1, 1))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor s = squeeze_(x).relu_();
    return torch::cat({expand1x1_(s).relu_(), expand3x3_(s).relu_()}, 1);
  }

 private:
  torch::nn::Conv2d squeeze_;
  torch::nn::Conv2d expand1x1_;
  torch::nn::Conv2d expand3x3_;
};
TORCH_MODULE(Fire);

// Parameterless layers sit in the Sequentials so parameters keep
// torchvision's indices (features.3.squeeze.weight, classifier.1.weight).
class SqueezeNetImpl : public torch::nn::Module {
 public:
  explicit SqueezeNetImpl(int64_t num_classes = 1000, double dropout = 0.5)
      : features_(register_module(
            "features",
            torch::nn::Sequential(
                Conv(3, 64, 3, 2), Relu(), Pool(), Fire(64, 16, 64, 64),
                Fire(128, 16, 64, 64), Pool(), Fire(128, 32, 128, 128),
                Fire(256, 32, 128, 128), Pool(), Fire(256, 48, 192, 192),
                Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
                Fire(512, 64, 256, 256)))),
        final_conv_(Conv(512, num_classes, 1)),
        classifier_(register_module(
            "classifier",
            torch::nn::Sequential(
                torch::nn::Dropout(dropout), final_conv_, Relu(),
                torch::nn::AdaptiveAvgPool2d(
                    torch::nn::AdaptiveAvgPool2dOptions({1, 1}))))) {
    InitWeights();
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return classifier_->forward(features_->forward(x)).flatten(1);
  }

 private:
  // torchvision's init: the final conv N(0, 0.01), every other conv
  // kaiming_uniform_ with its defaults; all biases zero.
  void InitWeights() {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      auto* conv = m->as<torch::nn::Conv2d>();
      if (conv == nullptr) continue;
      if (conv == final_conv_.get()) {
        torch::nn::init::normal_(conv->weight, 0.0, 0.01);
      } else {
        torch::nn::init::kaiming_uniform_(conv->weight);
      }
      torch::nn::init::zeros_(conv->bias);
    }
  }

  torch::nn::Sequential features_;
  torch::nn::Conv2d final_conv_;
  torch::nn::Sequential classifier_;
};
TORCH_MODULE(SqueezeNet);

// squeezenet1_1's own train(). Construction mirrors TorchVisionModel's
// __init__ for test="train", whose side effects (one forward of the
// train()-mode model, the rand_like draws) shape the RNG stream.
class SqueezeNetTrain final : public Model, public FidelityCheck {
 public:
  static constexpr int kEpochSize = 16;  // self.epoch_size

  explicit SqueezeNetTrain(const ModelConfig& config)
      : optimizer_path_(config.optimizer) {
    net_->to(config.device);
    // The family's example_outputs, real_input and real_output are unused by
    // this train(), but the reference allocates (device memory) and draws
    // (RNG stream) them all.
    in_ = common::MakeTorchVisionInputs(net_, config, {3, 224, 224});
  }

  // Returns the last micro-batch's loss (the reference returns nothing).
  torch::Tensor Step() override {
    optim::Adam optimizer(net_->parameters(), optim::AdamOptions{.lr = 1e-3},
                          optimizer_path_);
    optimizer.ZeroGrad();
    torch::Tensor loss;
    for (int i = 0; i < kEpochSize; ++i) {
      torch::Tensor pred = net_->forward(in_.example_input);
      torch::Tensor y =
          torch::empty(
              {pred.size(0)},
              torch::TensorOptions().dtype(torch::kLong).device(pred.device()))
              .random_(pred.size(1));
      loss = torch::nn::functional::cross_entropy(pred, y);
      Backward(loss);
    }
    optimizer.Step();
    return loss.detach();
  }

  torch::nn::Module& module() override { return *net_; }

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs) override {
    TORCH_CHECK(inputs.size() == 1, "an image classifier takes one batch");
    return net_->forward(inputs[0]);
  }

 private:
  OptimizerPath optimizer_path_;
  SqueezeNet net_;
  common::TorchVisionInputs in_;
};

std::unique_ptr<Model> MakeSqueezeNet(const ModelConfig& config) {
  if (config.mode == Mode::kTrain) {
    return std::make_unique<SqueezeNetTrain>(config);
  }
  return std::make_unique<common::TorchVisionClassifier<SqueezeNet>>(
      config, SqueezeNet());
}

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    TorchVisionSpec({.name = "squeezenet1_1",
                     // 32 images x 16 micro-batches stand for the original
                     // batch of 512.
                     .train_batch_size = 32,  // DEFAULT_TRAIN_BSIZE
                     .eval_batch_size = 16,   // DEFAULT_EVAL_BSIZE
                     // pinned torchvision squeezenet1_1(weights=None), counted
                     // in Python (sum(p.numel() ...)); no buffers.
                     .reference_parameters = 1235496,
                     .reference_buffers = 0}),
    MakeSqueezeNet);

}  // namespace squeezenet1_1_model
}  // namespace torchbench
