// Pieces the SAC-family references (soft_actor_critic, drq) each define the
// same way: the tanh-squashed Normal policy distribution of torch.
// distributions with its argument validation, the orthogonal weight init and
// the targets' soft update.
#ifndef TORCHBENCH_MODELS_RL_SAC_BLOCKS_H_
#define TORCHBENCH_MODELS_RL_SAC_BLOCKS_H_

#include <torch/nn/functional/activation.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/types.h>

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace torchbench::rl {

// What torch.distributions' validation (validate_args = __debug__, on in the
// references) does with a constraint check: one bool(tensor) (a host sync on
// accelerators) and a ValueError if false.
inline void CheckConstraint(const torch::Tensor& valid, const char* what) {
  if (!valid.all().item<bool>()) {
    throw std::invalid_argument(std::string("constraint violated: ") + what);
  }
}

// weight_init of both references: nn.init.orthogonal_(weight, gain), bias
// filled with 0.
inline void OrthogonalInit(const torch::Tensor& weight,
                           const torch::Tensor& bias, double gain = 1.0) {
  torch::NoGradGuard no_grad;
  torch::nn::init::orthogonal_(weight, gain);
  if (bias.defined()) bias.fill_(0.0);
}

// soft_update(_params): every target parameter becomes
// tau * source + (1 - tau) * target, pairing parameters() in order.
inline void SoftUpdate(torch::nn::Module& target, torch::nn::Module& source,
                       double tau) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> target_params = target.parameters();
  std::vector<torch::Tensor> source_params = source.parameters();
  for (size_t i = 0; i < target_params.size(); ++i) {
    target_params[i].copy_(target_params[i] * (1.0 - tau) +
                           source_params[i] * tau);
  }
}

// SquashedNormal(loc, scale): torch.distributions' Normal(loc, scale) pushed
// through a TanhTransform with cache_size 1, as both references define it.
class SquashedNormal {
 public:
  // An rsample(): the pre-tanh draw is kept because the transform's cache
  // hands it back to log_prob instead of inverting tanh.
  struct Draw {
    torch::Tensor pre_tanh;
    torch::Tensor action;
  };

  SquashedNormal(torch::Tensor loc, torch::Tensor scale)
      : loc_(std::move(loc)), scale_(std::move(scale)) {
    // Normal.arg_constraints: loc real (not NaN), scale positive.
    CheckConstraint(loc_ == loc_, "Normal loc must be real");
    CheckConstraint(scale_ > 0.0, "Normal scale must be positive");
  }

  // SquashedNormal.mean: tanh(loc).
  torch::Tensor Mean() const { return loc_.tanh(); }

  // TransformedDistribution.sample(): Normal.sample() is torch.normal on the
  // expanded parameters, without grad.
  torch::Tensor Sample() const {
    torch::NoGradGuard no_grad;
    return at::normal(loc_, scale_).tanh();
  }

  // Normal.rsample(): loc + eps * scale, eps from empty(shape).normal_(),
  // unless a golden check hands its fixed noise in.
  Draw RSample(const torch::Tensor& fixed_eps = {}) const {
    torch::Tensor eps =
        fixed_eps.defined()
            ? fixed_eps
            : torch::empty(loc_.sizes(), loc_.options()).normal_();
    torch::Tensor x = loc_ + eps * scale_;
    return {x, x.tanh()};
  }

  // TransformedDistribution.log_prob(action) for the draw that produced it:
  // 0 - log|det J_tanh(x)| + Normal.log_prob(x).
  torch::Tensor LogProb(const Draw& draw) const {
    // The support of the squashed distribution is the closed [-1, 1].
    CheckConstraint((draw.action >= -1.0) & (draw.action <= 1.0),
                    "value must be within [-1, 1]");
    const torch::Tensor& x = draw.pre_tanh;
    // TanhTransform.log_abs_det_jacobian.
    torch::Tensor log_det =
        2.0 * (std::log(2.0) - x - torch::nn::functional::softplus(-2.0 * x));
    torch::Tensor log_prob = 0.0 - log_det;
    // Normal.log_prob, which validates x against its (real) support.
    CheckConstraint(x == x, "value must be real");
    torch::Tensor var = scale_.pow(2);
    torch::Tensor normal_log_prob = -((x - loc_).pow(2)) / (2 * var) -
                                    scale_.log() -
                                    std::log(std::sqrt(2 * std::numbers::pi));
    return log_prob + normal_log_prob;
  }

 private:
  torch::Tensor loc_;
  torch::Tensor scale_;
};

}  // namespace torchbench::rl

#endif  // TORCHBENCH_MODELS_RL_SAC_BLOCKS_H_
