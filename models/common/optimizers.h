// Optimizers and schedules that TorchBench models vendor and LibTorch lacks.
//
//   common::VendoredRAdam optimizer(net->parameters(), {.lr = 1e-4});
//   optimizer.ZeroGrad();
//   torchbench::Backward(loss);
//   optimizer.Step();
#ifndef TORCHBENCH_MODELS_COMMON_OPTIMIZERS_H_
#define TORCHBENCH_MODELS_COMMON_OPTIMIZERS_H_

#include <torch/nn/module.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "torchbench/amp.h"
#include "torchbench/optim.h"

namespace torchbench::common {

// timm's param_groups_weight_decay as create_optimizer_v2 applies it (what
// common/image_classifier.h's MakeTimmSgd does for TimmModel): a group
// without weight decay for parameters with at most one dimension, "*.bias"
// and names in `no_weight_decay`, then a group with `weight_decay`, both
// at `lr`.
inline std::vector<optim::ParamGroup> TimmParamGroups(
    torch::nn::Module& module, const std::set<std::string>& no_weight_decay,
    double lr, double weight_decay) {
  std::vector<torch::Tensor> decay;
  std::vector<torch::Tensor> no_decay;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    if (!p.value().requires_grad()) continue;
    const std::string& name = p.key();
    const bool is_bias =
        name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    if (p.value().dim() <= 1 || is_bias || no_weight_decay.count(name) > 0) {
      no_decay.push_back(p.value());
    } else {
      decay.push_back(p.value());
    }
  }
  return {{.params = std::move(no_decay), .lr = lr, .weight_decay = 0.0},
          {.params = std::move(decay), .lr = lr, .weight_decay = weight_decay}};
}

// torch.nn.utils.clip_grad_norm_ as the pinned torch runs it: per-tensor norms
// (_foreach_norm where PyTorch has foreach kernels), the clip factor clamped
// to 1 and multiplied in without reading the norm back (LibTorch's own
// clip_grad_norm_ returns it as a double, a host sync the reference lacks).
inline torch::Tensor ClipGradNorm(const std::vector<torch::Tensor>& parameters,
                                  double max_norm) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return {};
  // Under a GradScaler the reference clips after scaler.unscale_.
  UnscaleGradients(grads);
  const bool foreach = grads.front().is_cuda();
  std::vector<torch::Tensor> norms;
  if (foreach) {
    norms = at::_foreach_norm(grads, 2);
  } else {
    for (const auto& g : grads) norms.push_back(torch::linalg_vector_norm(g));
  }
  torch::Tensor total_norm = torch::linalg_vector_norm(torch::stack(norms));
  // Python's max_norm / tensor is reciprocal() * max_norm.
  torch::Tensor clip_coef = (total_norm + 1e-6).reciprocal() * max_norm;
  torch::Tensor clip_coef_clamped = torch::clamp(clip_coef, std::nullopt, 1.0);
  if (foreach) {
    at::_foreach_mul_(grads, clip_coef_clamped);
  } else {
    for (auto& g : grads) g.mul_(clip_coef_clamped);
  }
  return total_norm;
}

// The Transformer paper's warm-up schedule, which BERT_pytorch's and
// attention_is_all_you_need_pytorch's ScheduledOptim and speech_transformer's
// TransformerOptimizer each vendor: before step `step` (1, 2, ...) every
// group's lr becomes scale * d_model^-0.5 * min(step^-0.5,
// step * warmup^-1.5) (scale: 1, lr_mul, k), then Adam steps.
inline void NoamScheduledStep(optim::Adam& adam, int64_t step, double scale,
                              int64_t d_model, int64_t warmup_steps) {
  const double n = static_cast<double>(step);
  const double lr =
      scale * std::pow(static_cast<double>(d_model), -0.5) *
      std::min(std::pow(n, -0.5),
               n * std::pow(static_cast<double>(warmup_steps), -1.5));
  adam.SetLr(lr);
  adam.Step();
}

// The RAdam (Liu et al. 2019) that TorchBench's tts_angular vendors
// (torchbenchmark/models/tts_angular/angular_tts_main.py at 43ca0857, from
// Coqui/Mozilla TTS), which torch.optim.RAdam does not reproduce: it
// rectifies from N_sma >= 5 (torch: rho_t > 5), its weight decay is
// decoupled (p -= wd * lr * p) and applied only when an update happens, and
// below the threshold it degenerates to SGD with momentum,
// p -= lr * m / (1 - beta1^t), when degenerated_to_sgd (the default). Its eps
// is added to the uncorrected sqrt(v); the (1 - beta2^t) correction sits in
// the step size. The reference caches (N_sma, step_size) per step number in a
// ring of ten entries shared by a parameter group; the cached values equal
// the ones recomputed here, so the cache is left out.
class VendoredRAdam final : public optim::Optimizer {
 public:
  struct Options {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0;
    bool degenerated_to_sgd = true;
  };

  // Always the per-parameter loop: the reference's own code is one, on
  // every device, whatever --torchbench_optimizer asks.
  VendoredRAdam(std::vector<torch::Tensor> params, Options options)
      : Optimizer("RAdam",
                  optim::OneGroup(std::move(params), options.lr,
                                  options.weight_decay),
                  OptimizerPath::kSingle),
        options_(options),
        states_(param_groups().front().params.size()) {}

 private:
  void UpdateGroup(size_t g, const std::vector<size_t>& with_grad) override {
    const optim::ParamGroup& group = param_groups()[g];
    const double beta1 = options_.beta1;
    const double beta2 = options_.beta2;
    const double lr = group.lr;
    const double weight_decay = group.weight_decay;
    for (size_t i : with_grad) {
      torch::Tensor p = group.params[i];
      const torch::Tensor grad = p.grad();
      State& state = states_[i];
      if (state.step == 0) {
        state.exp_avg = torch::zeros_like(p);
        state.exp_avg_sq = torch::zeros_like(p);
      }
      state.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      state.exp_avg.mul_(beta1).add_(grad, 1 - beta1);
      state.step += 1;

      // Python floats, i.e. doubles, in the reference's order.
      const double step = static_cast<double>(state.step);
      const double beta2_t = std::pow(beta2, step);
      const double n_sma_max = 2 / (1 - beta2) - 1;
      const double n_sma = n_sma_max - 2 * step * beta2_t / (1 - beta2_t);
      const double bias_correction1 = 1 - std::pow(beta1, step);
      double step_size = -1;
      if (n_sma >= 5) {
        step_size =
            std::sqrt((1 - beta2_t) * (n_sma - 4) / (n_sma_max - 4) *
                      (n_sma - 2) / n_sma * n_sma_max / (n_sma_max - 2)) /
            bias_correction1;
      } else if (options_.degenerated_to_sgd) {
        step_size = 1.0 / bias_correction1;
      }

      if (n_sma >= 5) {
        if (weight_decay != 0) p.add_(p, -weight_decay * lr);
        torch::Tensor denom = state.exp_avg_sq.sqrt().add_(options_.eps);
        p.addcdiv_(state.exp_avg, denom, -step_size * lr);
      } else if (step_size > 0) {
        if (weight_decay != 0) p.add_(p, -weight_decay * lr);
        p.add_(state.exp_avg, -step_size * lr);
      }
    }
  }

  struct State {
    int64_t step = 0;
    torch::Tensor exp_avg;
    torch::Tensor exp_avg_sq;
  };

  Options options_;
  std::vector<State> states_;
};

}  // namespace torchbench::common

#endif  // TORCHBENCH_MODELS_COMMON_OPTIMIZERS_H_
