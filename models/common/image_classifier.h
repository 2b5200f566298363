// The two TorchBench image-classifier families' benchmark steps, shared by
// every torchvision and timm model file; a model file only defines its
// network and registers, e.g.
//
//   TORCHBENCH_REGISTER_MODEL(
//       TorchVisionSpec({.name = "resnet50", ...}),
//       MakeTorchVisionClassifier<ResNet>([] { return ResNet(options); }));
#ifndef TORCHBENCH_MODELS_COMMON_IMAGE_CLASSIFIER_H_
#define TORCHBENCH_MODELS_COMMON_IMAGE_CLASSIFIER_H_

#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/optimizers.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"

namespace torchbench::common {

// Converts every 4-D parameter and buffer to channels-last in place (what
// `module.to(memory_format=torch.channels_last)` does in Python).
inline void ToChannelsLast(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) {
    if (p.dim() == 4) {
      p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
    }
  }
  for (auto& b : module.buffers()) {
    if (b.dim() == 4) {
      b.set_data(b.contiguous(torch::MemoryFormat::ChannelsLast));
    }
  }
}

// The tensors TorchBench's TorchVisionModel.__init__ makes
// (util/framework/vision/model_factory.py at 43ca0857), in its RNG order:
// example_inputs = randn(B, C, H, W); for Train also example_outputs =
// rand_like(model(x)) (after one forward of the train()-mode model, which
// moves every BN running stat once), real_input = rand_like(x) and
// real_output = rand_like(example_outputs). Converted to channels-last as
// enable_channels_last() does after __init__, and to the precision's dtype
// as enable_fp16_half() does (drawn in fp32, then converted).
struct TorchVisionInputs {
  torch::Tensor example_input;
  torch::Tensor
      example_output;  // Only the reference's CUDA-graph path reads it.
  torch::Tensor real_input;
  torch::Tensor real_target;
};

template <typename Net>
TorchVisionInputs MakeTorchVisionInputs(
    Net& net, const ModelConfig& config,
    const std::vector<int64_t>& image_shape) {
  TorchVisionInputs in;
  std::vector<int64_t> shape = {config.batch_size};
  shape.insert(shape.end(), image_shape.begin(), image_shape.end());
  in.example_input =
      torch::randn(shape, torch::TensorOptions().device(config.device));
  if (config.mode == Mode::kTrain) {
    torch::Tensor output;
    {
      // Without autograd: the same output and running stats, less memory.
      torch::NoGradGuard no_grad;
      net->train();
      output = net->forward(in.example_input);
    }
    in.example_output = torch::rand_like(output);
    in.real_input = torch::rand_like(in.example_input);
    in.real_target = torch::rand_like(in.example_output);
  }
  if (config.channels_last) {
    ToChannelsLast(*net);
    for (torch::Tensor* t : {&in.example_input, &in.real_input}) {
      if (t->defined()) *t = t->contiguous(torch::MemoryFormat::ChannelsLast);
    }
  }
  for (torch::Tensor* t :
       {&in.example_input, &in.real_input, &in.real_target}) {
    if (t->defined()) *t = t->to(config.dtype());
  }
  return in;
}

// TorchBench's TorchVisionModel steps: eval is model(example_inputs); train
// is zero_grad, forward on real_input, CrossEntropyLoss against the soft
// targets real_output, backward, Adam(lr 1e-3) step. `Net` is a module
// holder whose forward takes one image batch.
template <typename Net>
class TorchVisionClassifier final : public Model, public FidelityCheck {
 public:
  TorchVisionClassifier(const ModelConfig& config, Net net,
                        std::vector<int64_t> image_shape = {3, 224, 224})
      : mode_(config.mode), net_(std::move(net)) {
    net_->to(config.device);
    in_ = MakeTorchVisionInputs(net_, config, image_shape);
    if (mode_ == Mode::kTrain) {
      net_->train();
      optimizer_ = std::make_unique<optim::Adam>(
          net_->parameters(), optim::AdamOptions{.lr = 1e-3}, config.optimizer);
    } else {
      net_->eval();
    }
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) return net_->forward(in_.example_input);
    optimizer_->ZeroGrad();
    torch::Tensor pred = net_->forward(in_.real_input);
    torch::Tensor loss;
    {
      // train() computes the loss after its amp block, on pred as it is.
      OutsideAutocast outside;
      // Class-probability targets of pred's shape (not class indices).
      loss = torch::nn::functional::cross_entropy(pred, in_.real_target);
    }
    Backward(loss);
    optimizer_->Step();
    return loss.detach();
  }

  torch::nn::Module& module() override { return *net_; }

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs) override {
    TORCH_CHECK(inputs.size() == 1, "an image classifier takes one batch");
    return net_->forward(inputs[0]);
  }

 private:
  Mode mode_;
  Net net_;
  TorchVisionInputs in_;
  std::unique_ptr<optim::Adam> optimizer_;
};

// Returns a factory building `make_net()` into a TorchVisionClassifier.
template <typename Net>
ModelFactory MakeTorchVisionClassifier(std::function<Net()> make_net,
                                       std::vector<int64_t> image_shape = {
                                           3, 224, 224}) {
  return [make_net,
          image_shape](const ModelConfig& config) -> std::unique_ptr<Model> {
    return std::make_unique<TorchVisionClassifier<Net>>(config, make_net(),
                                                        image_shape);
  };
}

// timm's create_optimizer(opt="sgd", lr=1e-4, momentum=0.9,
// weight_decay=1e-4) as TorchBench's TimmConfig calls it: SGD with Nesterov
// momentum, weight decay only on parameters with more than one dimension
// whose name is not "*.bias" and not in the model's no_weight_decay() list.
inline std::unique_ptr<optim::Sgd> MakeTimmSgd(
    torch::nn::Module& module, const std::set<std::string>& no_weight_decay,
    OptimizerPath path) {
  constexpr double kLr = 1e-4;
  return std::make_unique<optim::Sgd>(
      TimmParamGroups(module, no_weight_decay, kLr, /*weight_decay=*/1e-4),
      optim::SgdOptions{.lr = kLr, .momentum = 0.9, .nesterov = true}, path);
}

// TorchBench's TimmModel (util/framework/timm/model_factory.py at
// 43ca0857): inputs randn(B, *default_cfg["input_size"]); train is
// zero_grad, forward, a fresh random int target per step
// (empty(B).random_(num_classes), part of the reference's step),
// CrossEntropyLoss, backward, timm SGD step; eval is forward.
template <typename Net>
class TimmClassifier final : public Model, public FidelityCheck {
 public:
  struct Options {
    std::vector<int64_t> input_size = {3, 224, 224};
    int64_t num_classes = 1000;
    std::set<std::string> no_weight_decay;  // model.no_weight_decay()
  };

  TimmClassifier(const ModelConfig& config, Net net, Options options)
      : mode_(config.mode),
        num_classes_(options.num_classes),
        net_(std::move(net)) {
    std::vector<int64_t> shape = {config.batch_size};
    shape.insert(shape.end(), options.input_size.begin(),
                 options.input_size.end());
    example_input_ =
        torch::randn(shape, torch::TensorOptions().device(config.device));
    net_->to(config.device);
    if (mode_ == Mode::kTrain) {
      net_->train();
      optimizer_ =
          MakeTimmSgd(*net_, options.no_weight_decay, config.optimizer);
    } else {
      net_->eval();
    }
    if (config.channels_last) {
      ToChannelsLast(*net_);
      example_input_ =
          example_input_.contiguous(torch::MemoryFormat::ChannelsLast);
    }
    example_input_ = example_input_.to(config.dtype());
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) return net_->forward(example_input_);
    optimizer_->ZeroGrad();
    torch::Tensor output = net_->forward(example_input_);
    torch::Tensor target =
        torch::empty(
            {output.size(0)},
            torch::TensorOptions().device(output.device()).dtype(torch::kLong))
            .random_(num_classes_);
    torch::Tensor loss;
    {
      // _step_train computes the loss after its amp block, on output as is.
      OutsideAutocast outside;
      loss = torch::nn::functional::cross_entropy(output, target);
    }
    Backward(loss);
    optimizer_->Step();
    return loss.detach();
  }

  torch::nn::Module& module() override { return *net_; }

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs) override {
    TORCH_CHECK(inputs.size() == 1, "an image classifier takes one batch");
    return net_->forward(inputs[0]);
  }

 private:
  Mode mode_;
  int64_t num_classes_;
  Net net_;
  torch::Tensor example_input_;
  std::unique_ptr<optim::Sgd> optimizer_;
};

// Returns a factory building `make_net()` into a TimmClassifier.
template <typename Net>
ModelFactory MakeTimmClassifier(
    std::function<Net()> make_net,
    typename TimmClassifier<Net>::Options options = {}) {
  return [make_net,
          options](const ModelConfig& config) -> std::unique_ptr<Model> {
    return std::make_unique<TimmClassifier<Net>>(config, make_net(), options);
  };
}

// TorchBench's phlippe_* CIFAR models (torchbenchmark/models/phlippe_*/
// __init__.py at 43ca0857): inputs randn(B,3,32,32) and labels
// randint(0, 10); train is model.train(), CE, backward, step, zero_grad
// (in that order); eval is model.eval() and forward. Only the optimizer
// differs between them, so `make_optimizer` builds it from the parameters.
template <typename Net>
class PhlippeClassifier final : public Model,
                                public GoldenCheck,
                                public FidelityCheck {
 public:
  using OptimizerFactory = std::function<std::unique_ptr<optim::Optimizer>(
      std::vector<torch::Tensor>, OptimizerPath)>;

  PhlippeClassifier(const ModelConfig& config, Net net,
                    const OptimizerFactory& make_optimizer)
      : mode_(config.mode), net_(std::move(net)) {
    net_->to(config.device);
    const auto options = torch::TensorOptions().device(config.device);
    images_ = torch::randn({config.batch_size, 3, 32, 32}, options);
    targets_ =
        torch::randint(0, 10, {config.batch_size}, options.dtype(torch::kLong));
    images_ = images_.to(config.dtype());
    optimizer_ = make_optimizer(net_->parameters(), config.optimizer);
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) {
      net_->eval();
      return net_->forward(images_);
    }
    return TrainStep();
  }

  // The reference's eval() and two train() calls on filled inputs, as
  // tools/golden/adapters/phlippe_resnet.py records them.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    const auto options = images_.options();
    images_ = DeterministicTensor("images", images_.sizes()).to(options);
    targets_ = DeterministicIntegers("targets", targets_.sizes(), 0, 10)
                   .to(targets_.device());
    std::map<std::string, torch::Tensor> out = recorder_.Capture([&] {
      {
        torch::NoGradGuard no_grad;
        net_->eval();
        recorder_.Record("eval_output", net_->forward(images_));
      }
      TrainStep();
    });
    TrainStep();
    RecordEdgeParameters(*net_, "after_2_steps:", /*gradients=*/false, &out);
    return out;
  }

  torch::nn::Module& module() override { return *net_; }

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs) override {
    TORCH_CHECK(inputs.size() == 1, "a CIFAR classifier takes one batch");
    return net_->forward(inputs[0]);
  }

 private:
  // The reference's train(); under a golden check it records the output,
  // loss and edge gradients as they are before the optimizer step.
  torch::Tensor TrainStep() {
    net_->train();
    torch::Tensor output = net_->forward(images_);
    torch::Tensor loss = torch::nn::functional::cross_entropy(output, targets_);
    Backward(loss);
    if (recorder_.recording()) {
      recorder_.Record("output", output);
      recorder_.Record("loss", loss);
      std::map<std::string, torch::Tensor> grads;
      RecordEdgeParameters(*net_, "grad:", /*gradients=*/true, &grads);
      for (const auto& [key, grad] : grads) recorder_.Record(key, grad);
    }
    optimizer_->Step();
    optimizer_->ZeroGrad();
    return loss.detach();
  }

  Mode mode_;
  Net net_;
  torch::Tensor images_;
  torch::Tensor targets_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  GoldenRecorder recorder_;
};

// Returns a factory building `make_net()` into a PhlippeClassifier.
template <typename Net>
ModelFactory MakePhlippeClassifier(
    std::function<Net()> make_net,
    typename PhlippeClassifier<Net>::OptimizerFactory make_optimizer) {
  return [make_net,
          make_optimizer](const ModelConfig& config) -> std::unique_ptr<Model> {
    return std::make_unique<PhlippeClassifier<Net>>(config, make_net(),
                                                    make_optimizer);
  };
}

}  // namespace torchbench::common

#endif  // TORCHBENCH_MODELS_COMMON_IMAGE_CLASSIFIER_H_
