// The frame the two DP-SGD CIFAR-10 references share (functorch_dp_cifar10,
// opacus_cifar10): their inputs randn(B, 3, 32, 32) and randint(0, 10, (B,)),
// Adam(lr 1e-3) over the net's parameters, eval() as a no_grad forward of
// the net in eval mode, and the golden sequence their adapters record
// (tools/golden/adapters/functorch_dp_cifar10.py, opacus_cifar10.py):
// eval(), train() with the noise off, train() with the noise on after
// torch.manual_seed(0) on both sides (the same torch.normal calls in the same
// order draw the same numbers). A model defines its net's forward and its
// reference's train().
#ifndef TORCHBENCH_MODELS_COMMON_DP_CIFAR10_H_
#define TORCHBENCH_MODELS_COMMON_DP_CIFAR10_H_

#include <torch/nn/module.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <map>
#include <memory>
#include <string>

#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"

namespace torchbench::common {

class DpCifar10Model : public Model, public GoldenCheck {
 public:
  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) {
      module().eval();
      return EvalForward();
    }
    return TrainStep();
  }

  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    images_ =
        DeterministicTensor("images", images_.sizes()).to(images_.options());
    targets_ = DeterministicIntegers("targets", targets_.sizes(), 0, 10)
                   .to(targets_.device());
    std::map<std::string, torch::Tensor> out = recorder_.Capture([&] {
      {
        torch::NoGradGuard no_grad;
        module().eval();
        recorder_.Record("eval_output", EvalForward());
      }
      noise_multiplier_ = 0.0;
      TrainStep();
    });
    RecordEdgeParameters(module(), "after_1_step:", /*gradients=*/false, &out);
    noise_multiplier_ = 1.0;
    torch::manual_seed(0);
    TrainStep();  // Not recorded: only its parameters after it are.
    RecordEdgeParameters(module(), "after_noised_step:", /*gradients=*/false,
                         &out);
    return out;
  }

 protected:
  explicit DpCifar10Model(const ModelConfig& config) : mode_(config.mode) {}

  // Moves the net (module()) to the device and makes the inputs and the
  // optimizer, in the references' order; derived constructors call it once
  // their net exists.
  void Init(const ModelConfig& config) {
    module().to(config.device);
    const auto options = torch::TensorOptions().device(config.device);
    images_ = torch::randn({config.batch_size, 3, 32, 32}, options)
                  .to(config.dtype());
    targets_ =
        torch::randint(0, 10, {config.batch_size}, options.dtype(torch::kLong));
    optimizer_ = std::make_unique<optim::Adam>(module().parameters(),
                                               optim::AdamOptions{.lr = 1e-3},
                                               config.optimizer);
  }

  // The net's forward on images_ (eval(), and the golden eval_output).
  virtual torch::Tensor EvalForward() = 0;
  // The reference's train(); under a golden check it also records (in
  // recorder_) the keys its adapter records during the first call.
  virtual torch::Tensor TrainStep() = 0;

  // Records the edge gradients of module() as RecordEdgeParameters names
  // them ("grad:<name>"), when a golden check is capturing.
  void RecordEdgeGradients() {
    if (!recorder_.recording()) return;
    std::map<std::string, torch::Tensor> grads;
    RecordEdgeParameters(module(), "grad:", /*gradients=*/true, &grads);
    for (const auto& [key, grad] : grads) recorder_.Record(key, grad);
  }

  torch::Tensor images_;
  torch::Tensor targets_;
  std::unique_ptr<optim::Adam> optimizer_;
  double noise_multiplier_ = 1.0;
  GoldenRecorder recorder_;

 private:
  Mode mode_;
};

}  // namespace torchbench::common

#endif  // TORCHBENCH_MODELS_COMMON_DP_CIFAR10_H_
