// TorchBench's lennard_jones (torchbenchmark/models/lennard_jones at
// 43ca0857, adapted from muhrin/milad): a 1-16-16-16-16-1 tanh MLP that
// learns the Lennard-Jones energy of a pair distance r, with forces taken
// as -dE/dr along the pair vector. Training fits energies and forces, so its
// backward differentiates through a derivative (double backward).
//
// The reference computes the per-sample derivative with
// vmap(jacrev(model))(norms): one vector-Jacobian product per sample with
// cotangent 1. The samples are independent rows of one MLP, so one batched
// autograd::grad of the outputs with a ones cotangent gives the same
// (B, 1) derivatives; it runs on a second forward of the model, as the
// reference's jacrev does, with create_graph in Train so the loss can
// backpropagate through it. In Eval the reference's torch.no_grad() does not
// reach inside jacrev (function transforms ignore an outer no_grad), so the
// derivative is computed with grad mode on there too.
//
// Inputs: deterministic, as in the reference: B distances linspace(0.5, 1.0)
// along +x, with the analytic LJ energies and forces as targets.
#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace lennard_jones_model {
namespace {

namespace F = torch::nn::functional;

constexpr double kSigma = 0.5;
constexpr double kEpsilon = 4.0;
constexpr double kLr = 1e-3;

// lennard_jones(r) and lennard_jones_force(r) of the reference.
torch::Tensor LennardJonesEnergy(const torch::Tensor& r) {
  return kEpsilon * ((kSigma / r).pow(12) - (kSigma / r).pow(6));
}

torch::Tensor LennardJonesForce(const torch::Tensor& r) {
  return -kEpsilon * ((-12 * std::pow(kSigma, 12) / r.pow(13)) +
                      (6 * std::pow(kSigma, 6) / r.pow(7)));
}

torch::nn::Sequential MakeMlp() {
  torch::nn::Sequential mlp;
  mlp->push_back(torch::nn::Linear(1, 16));
  for (int i = 0; i < 3; ++i) {
    mlp->push_back(torch::nn::Tanh());
    mlp->push_back(torch::nn::Linear(16, 16));
  }
  mlp->push_back(torch::nn::Tanh());
  mlp->push_back(torch::nn::Linear(16, 1));
  return mlp;
}

class LennardJones final : public Model, public GoldenCheck {
 public:
  explicit LennardJones(const ModelConfig& config) : mode_(config.mode) {
    model_->to(config.device);
    const torch::Tensor r = torch::linspace(0.5, 2 * kSigma, config.batch_size);
    // (B, 3): every pair vector along +x.
    drs_ = torch::outer(r, torch::tensor({1.0f, 0.0f, 0.0f}))
               .to(config.float_options());
    const torch::Tensor norms = torch::norm(drs_, 2, {1}).reshape({-1, 1});
    // The reference maps the formulas over the rows one at a time; they are
    // element-wise, so one call gives the same values.
    training_energies_ = LennardJonesEnergy(norms).reshape({-1, 1});
    training_forces_ = LennardJonesForce(norms) * drs_;  // (B, 3)
    if (mode_ == Mode::kTrain) {
      model_->train();
      optimizer_ = std::make_unique<optim::Adam>(model_->parameters(),
                                                 optim::AdamOptions{.lr = kLr},
                                                 config.optimizer);
    } else {
      model_->eval();
    }
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) return MakePrediction(/*train=*/false).first;
    optimizer_->ZeroGrad();
    const torch::Tensor loss = TrainLoss();
    Backward(loss);
    optimizer_->Step();
    return loss.detach();
  }

  torch::nn::Module& module() override { return *model_; }

  // eval()'s energies and forces, then one train() call's loss, edge
  // gradients and updated edge parameters, as
  // tools/golden/adapters/lennard_jones.py records them.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    std::map<std::string, torch::Tensor> out;
    {
      torch::NoGradGuard no_grad;
      auto [energies, forces] = MakePrediction(/*train=*/false);
      out["eval_energies"] = energies;
      out["eval_forces"] = forces;
    }
    optimizer_->ZeroGrad();
    const torch::Tensor loss = TrainLoss();
    Backward(loss);
    out["loss"] = loss.detach();
    RecordEdgeParameters(*model_, "grad:", /*gradients=*/true, &out);
    optimizer_->Step();
    RecordEdgeParameters(*model_, "after_step:", /*gradients=*/false, &out);
    return out;
  }

 private:
  torch::Tensor TrainLoss() {
    auto [energies, forces] = MakePrediction(/*train=*/true);
    return F::mse_loss(training_energies_, energies) +
           0.01 * F::mse_loss(training_forces_, forces) / 3;
  }

  // make_prediction(): the energies and the forces -dE/dr * dr / |dr|.
  std::pair<torch::Tensor, torch::Tensor> MakePrediction(bool train) {
    const torch::Tensor norms = torch::norm(drs_, 2, {1}).reshape({-1, 1});
    torch::Tensor energies = model_->forward(norms);
    torch::Tensor network_derivs;
    {
      torch::AutoGradMode grad_on(true);
      const torch::Tensor r = norms.detach().requires_grad_(true);
      const torch::Tensor e = model_->forward(r);
      network_derivs =
          torch::autograd::grad({e}, {r}, {torch::ones_like(e)},
                                /*retain_graph=*/train,
                                /*create_graph=*/train)[0];  // (B, 1)
    }
    if (!train) network_derivs = network_derivs.detach();
    torch::Tensor forces = -network_derivs * drs_ / norms;  // (B, 3)
    return {energies, forces};
  }

  Mode mode_;
  torch::nn::Sequential model_ = MakeMlp();
  torch::Tensor drs_;
  torch::Tensor training_energies_;
  torch::Tensor training_forces_;
  std::unique_ptr<optim::Adam> optimizer_;
};

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "lennard_jones",
         .domain = "science",
         .task =
             "other (physics-informed MLP: Lennard-Jones energies and forces)",
         .reference = "TorchBench lennard_jones (muhrin/milad example)",
         .train_batch_size = 1000,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 1000,   // DEFAULT_EVAL_BSIZE
         // sum(p.numel() ...) over the reference's nn.Sequential (pinned
         // torch): 1*16+16 + 3 * (16*16+16) + 16+1; no buffers.
         .reference_parameters = 865,
         .reference_buffers = 0,
         .checks = {.golden_file = "lennard_jones.golden",
                    .test_batch_size = 16}}),
    MakeModel<LennardJones>());

}  // namespace lennard_jones_model
}  // namespace torchbench
