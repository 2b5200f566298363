// Each Update follows torch 2.14's torch/optim/<name>.py line by line
// (_single_tensor_<name> and _multi_tensor_<name>, capturable=False,
// differentiable=False, maximize=False), so both paths round as PyTorch's do.
// Step counts are host doubles where PyTorch keeps CPU scalar tensors; the
// values used (beta ** step, ...) are the same.
#include "torchbench/optim.h"

#include <ATen/Functions.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>
#include <torch/utils.h>

#include <cmath>
#include <map>
#include <string_view>
#include <utility>

#include "amp_internal.h"
#include "torchbench/amp.h"

namespace torchbench {

OptimizerPath ResolveOptimizerPath(OptimizerPath requested,
                                   const c10::Device& device) {
  if (requested != OptimizerPath::kDefault) return requested;
  return device.is_cuda() ? OptimizerPath::kForeach : OptimizerPath::kSingle;
}

namespace optim {
namespace {

thread_local unsigned stepped_paths = 0;

std::vector<torch::Tensor> Pick(const std::vector<torch::Tensor>& all,
                                const std::vector<size_t>& idx) {
  std::vector<torch::Tensor> out;
  out.reserve(idx.size());
  for (size_t i : idx) out.push_back(all[i]);
  return out;
}

std::vector<torch::Tensor> Grads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  out.reserve(params.size());
  for (const auto& p : params) out.push_back(p.grad());
  return out;
}

std::vector<at::Scalar> Scalars(const std::vector<double>& values) {
  return {values.begin(), values.end()};
}

// torch.optim's weight decay: L2 (grad + wd * p, a new tensor) or, when
// `decoupled` (AdamW, RAdam's decoupled_weight_decay), p *= 1 - lr * wd
// before the update. Returns the gradient the update uses.
torch::Tensor WeightDecay(torch::Tensor& param, const torch::Tensor& grad,
                          double lr, double wd, bool decoupled) {
  if (wd == 0) return grad;
  if (!decoupled) return grad.add(param, wd);
  param.mul_(1 - lr * wd);
  return grad;
}

std::vector<torch::Tensor> WeightDecay(std::vector<torch::Tensor>& params,
                                       std::vector<torch::Tensor> grads,
                                       double lr, double wd, bool decoupled) {
  if (wd == 0) return grads;
  if (!decoupled) return at::_foreach_add(grads, params, wd);
  at::_foreach_mul_(params, 1 - lr * wd);
  return grads;
}

}  // namespace

namespace internal {
unsigned TakeSteppedPaths() { return std::exchange(stepped_paths, 0u); }
}  // namespace internal

std::vector<ParamGroup> OneGroup(std::vector<torch::Tensor> params, double lr,
                                 double weight_decay) {
  std::vector<ParamGroup> groups(1);
  groups[0].params = std::move(params);
  groups[0].lr = lr;
  groups[0].weight_decay = weight_decay;
  return groups;
}

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups,
                     OptimizerPath requested)
    : name_(std::move(name)),
      record_name_("Optimizer.step#" + name_ + ".step"),
      groups_(std::move(groups)) {
  c10::Device device = c10::kCPU;
  for (const auto& g : groups_) {
    if (!g.params.empty()) {
      device = g.params.front().device();
      break;
    }
  }
  path_ = ResolveOptimizerPath(requested, device);
}

void Optimizer::ZeroGrad() {
  for (auto& g : groups_) {
    for (auto& p : g.params) p.mutable_grad().reset();
  }
}

void Optimizer::SetLr(double lr) {
  for (auto& g : groups_) g.lr = lr;
}

void Optimizer::Step() {
  RECORD_USER_SCOPE(std::string_view(record_name_));
  torch::NoGradGuard no_grad;
  if (GradScaler* scaler = ActiveGradScaler()) {
    std::vector<torch::Tensor> grads;
    for (const auto& g : groups_) {
      for (const auto& p : g.params) {
        if (p.grad().defined()) grads.push_back(p.grad());
      }
    }
    if (!scaler->UnscaleAndCheck(grads)) return;
  }
  stepped_paths |= 1u << static_cast<unsigned>(path_);
  for (size_t g = 0; g < groups_.size(); ++g) {
    std::vector<size_t> with_grad;
    const auto& params = groups_[g].params;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].grad().defined()) with_grad.push_back(i);
    }
    if (!with_grad.empty()) UpdateGroup(g, with_grad);
  }
}

std::vector<std::vector<size_t>> Optimizer::ByDeviceAndDtype(
    size_t g, const std::vector<size_t>& with_grad) const {
  std::map<std::pair<std::string, int>, std::vector<size_t>> buckets;
  for (size_t i : with_grad) {
    const auto& p = groups_[g].params[i];
    buckets[{p.device().str(), static_cast<int>(p.scalar_type())}].push_back(i);
  }
  std::vector<std::vector<size_t>> out;
  for (auto& [key, idx] : buckets) out.push_back(std::move(idx));
  return out;
}

// ---------------------------------------------------------------- SGD

Sgd::Sgd(std::vector<torch::Tensor> params, SgdOptions options,
         OptimizerPath path)
    : Sgd(OneGroup(std::move(params), options.lr, options.weight_decay),
          options, path) {}

Sgd::Sgd(std::vector<ParamGroup> groups, SgdOptions options, OptimizerPath path)
    : Optimizer("SGD", std::move(groups), path), options_(options) {
  for (const auto& g : param_groups()) momentum_.emplace_back(g.params.size());
}

void Sgd::UpdateGroup(size_t g, const std::vector<size_t>& with_grad) {
  const ParamGroup& group = param_groups()[g];
  const double lr = group.lr;
  const double wd = group.weight_decay;
  const double momentum = options_.momentum;
  auto& bufs_all = momentum_[g];
  if (path() == OptimizerPath::kSingle) {
    for (size_t i : with_grad) {
      torch::Tensor param = group.params[i];
      torch::Tensor grad = WeightDecay(param, param.grad(), lr, wd, false);
      if (momentum != 0) {
        torch::Tensor& buf = bufs_all[i];
        if (!buf.defined()) {
          buf = grad.detach().clone();
        } else {
          buf.mul_(momentum).add_(grad, 1 - options_.dampening);
        }
        grad = options_.nesterov ? grad.add(buf, momentum) : buf;
      }
      param.add_(grad, -lr);
    }
    return;
  }
  for (const auto& idx : ByDeviceAndDtype(g, with_grad)) {
    std::vector<torch::Tensor> params = Pick(group.params, idx);
    std::vector<torch::Tensor> grads =
        WeightDecay(params, Grads(params), lr, wd, false);
    if (momentum != 0) {
      bool all_have_buffers = true;
      for (size_t i : idx) all_have_buffers &= bufs_all[i].defined();
      std::vector<torch::Tensor> bufs;
      if (all_have_buffers) {
        bufs = Pick(bufs_all, idx);
        at::_foreach_mul_(bufs, momentum);
        at::_foreach_add_(bufs, grads, 1 - options_.dampening);
      } else {
        for (size_t k = 0; k < idx.size(); ++k) {
          torch::Tensor& buf = bufs_all[idx[k]];
          if (!buf.defined()) {
            buf = grads[k].detach().clone();
          } else {
            buf.mul_(momentum).add_(grads[k], 1 - options_.dampening);
          }
          bufs.push_back(buf);
        }
      }
      if (options_.nesterov) {
        at::_foreach_add_(grads, bufs, momentum);
      } else {
        grads = bufs;
      }
    }
    bool has_sparse_grad = false;
    for (const auto& grad : grads) has_sparse_grad |= grad.is_sparse();
    if (has_sparse_grad) {
      // The _foreach_ ops take no sparse tensors.
      for (size_t k = 0; k < params.size(); ++k) params[k].add_(grads[k], -lr);
    } else {
      at::_foreach_add_(params, grads, -lr);
    }
  }
}

// ---------------------------------------------------------------- Adam

Adam::Adam(std::vector<torch::Tensor> params, AdamOptions options,
           OptimizerPath path)
    : Adam(OneGroup(std::move(params), options.lr, options.weight_decay),
           options, path) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions options,
           OptimizerPath path)
    : Optimizer(options.decoupled_weight_decay ? "AdamW" : "Adam",
                std::move(groups), path),
      options_(options) {
  for (const auto& g : param_groups()) state_.emplace_back(g.params.size());
}

void Adam::UpdateGroup(size_t g, const std::vector<size_t>& with_grad) {
  const ParamGroup& group = param_groups()[g];
  const double lr = group.lr;
  const double wd = group.weight_decay;
  const double beta1 = options_.beta1;
  const double beta2 = options_.beta2;
  auto& states = state_[g];
  for (size_t i : with_grad) {
    State& s = states[i];
    if (!s.exp_avg.defined()) {
      s.exp_avg = torch::zeros_like(group.params[i]);
      s.exp_avg_sq = torch::zeros_like(group.params[i]);
      if (options_.amsgrad) s.max_exp_avg_sq = torch::zeros_like(s.exp_avg);
    }
  }
  if (path() == OptimizerPath::kSingle) {
    for (size_t i : with_grad) {
      torch::Tensor param = group.params[i];
      State& s = states[i];
      s.step += 1;
      const torch::Tensor grad = WeightDecay(param, param.grad(), lr, wd,
                                             options_.decoupled_weight_decay);
      s.exp_avg.lerp_(grad, 1 - beta1);
      s.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      const double bias_correction1 = 1 - std::pow(beta1, s.step);
      const double bias_correction2 = 1 - std::pow(beta2, s.step);
      const double step_size = lr / bias_correction1;
      const double bias_correction2_sqrt = std::sqrt(bias_correction2);
      torch::Tensor denom;
      if (options_.amsgrad) {
        at::maximum_out(s.max_exp_avg_sq, s.max_exp_avg_sq, s.exp_avg_sq);
        denom = (s.max_exp_avg_sq.sqrt() / bias_correction2_sqrt)
                    .add_(options_.eps);
      } else {
        denom =
            (s.exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(options_.eps);
      }
      param.addcdiv_(s.exp_avg, denom, -step_size);
    }
    return;
  }
  for (const auto& idx : ByDeviceAndDtype(g, with_grad)) {
    std::vector<torch::Tensor> params = Pick(group.params, idx);
    std::vector<torch::Tensor> grads = Grads(params);
    std::vector<torch::Tensor> exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
    std::vector<double> bias_correction2_sqrt, step_size;
    for (size_t i : idx) {
      State& s = states[i];
      exp_avgs.push_back(s.exp_avg);
      exp_avg_sqs.push_back(s.exp_avg_sq);
      if (options_.amsgrad) max_exp_avg_sqs.push_back(s.max_exp_avg_sq);
      s.step += 1;
      step_size.push_back(-(lr / (1 - std::pow(beta1, s.step))));
      bias_correction2_sqrt.push_back(std::sqrt(1 - std::pow(beta2, s.step)));
    }
    grads = WeightDecay(params, std::move(grads), lr, wd,
                        options_.decoupled_weight_decay);
    at::_foreach_lerp_(exp_avgs, grads, 1 - beta1);
    at::_foreach_mul_(exp_avg_sqs, beta2);
    at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
    std::vector<torch::Tensor> denom;
    if (options_.amsgrad) {
      at::_foreach_maximum_(max_exp_avg_sqs, exp_avg_sqs);
      denom = at::_foreach_sqrt(max_exp_avg_sqs);
    } else {
      denom = at::_foreach_sqrt(exp_avg_sqs);
    }
    at::_foreach_div_(denom, Scalars(bias_correction2_sqrt));
    at::_foreach_add_(denom, options_.eps);
    at::_foreach_addcdiv_(params, exp_avgs, denom, Scalars(step_size));
  }
}

// ---------------------------------------------------------------- RMSprop

Rmsprop::Rmsprop(std::vector<torch::Tensor> params, RmspropOptions options,
                 OptimizerPath path)
    : Optimizer("RMSprop",
                OneGroup(std::move(params), options.lr, options.weight_decay),
                path),
      options_(options) {
  for (const auto& g : param_groups()) state_.emplace_back(g.params.size());
}

void Rmsprop::UpdateGroup(size_t g, const std::vector<size_t>& with_grad) {
  const ParamGroup& group = param_groups()[g];
  const double lr = group.lr;
  const double wd = group.weight_decay;
  const double alpha = options_.alpha;
  const double momentum = options_.momentum;
  auto& states = state_[g];
  for (size_t i : with_grad) {
    State& s = states[i];
    if (!s.square_avg.defined()) {
      s.square_avg = torch::zeros_like(group.params[i]);
      if (momentum > 0) s.momentum_buffer = torch::zeros_like(s.square_avg);
      if (options_.centered) s.grad_avg = torch::zeros_like(s.square_avg);
    }
  }
  if (path() == OptimizerPath::kSingle) {
    for (size_t i : with_grad) {
      torch::Tensor param = group.params[i];
      const torch::Tensor grad =
          WeightDecay(param, param.grad(), lr, wd, false);
      State& s = states[i];
      s.square_avg.mul_(alpha).addcmul_(grad, grad, 1 - alpha);
      torch::Tensor avg;
      if (options_.centered) {
        s.grad_avg.lerp_(grad, 1 - alpha);
        avg = s.square_avg.addcmul(s.grad_avg, s.grad_avg, -1).sqrt_();
      } else {
        avg = s.square_avg.sqrt();
      }
      avg = avg.add_(options_.eps);
      if (momentum > 0) {
        s.momentum_buffer.mul_(momentum).addcdiv_(grad, avg);
        param.add_(s.momentum_buffer, -lr);
      } else {
        param.addcdiv_(grad, avg, -lr);
      }
    }
    return;
  }
  for (const auto& idx : ByDeviceAndDtype(g, with_grad)) {
    std::vector<torch::Tensor> params = Pick(group.params, idx);
    std::vector<torch::Tensor> grads = Grads(params);
    std::vector<torch::Tensor> square_avgs, grad_avgs, bufs;
    for (size_t i : idx) {
      square_avgs.push_back(states[i].square_avg);
      if (options_.centered) grad_avgs.push_back(states[i].grad_avg);
      if (momentum > 0) bufs.push_back(states[i].momentum_buffer);
    }
    grads = WeightDecay(params, std::move(grads), lr, wd, false);
    at::_foreach_mul_(square_avgs, alpha);
    at::_foreach_addcmul_(square_avgs, grads, grads, 1 - alpha);
    std::vector<torch::Tensor> avg;
    if (options_.centered) {
      at::_foreach_lerp_(grad_avgs, grads, 1 - alpha);
      avg = at::_foreach_addcmul(square_avgs, grad_avgs, grad_avgs, -1);
      at::_foreach_sqrt_(avg);
      at::_foreach_add_(avg, options_.eps);
    } else {
      avg = at::_foreach_sqrt(square_avgs);
      at::_foreach_add_(avg, options_.eps);
    }
    if (momentum > 0) {
      at::_foreach_mul_(bufs, momentum);
      at::_foreach_addcdiv_(bufs, grads, avg);
      at::_foreach_add_(params, bufs, -lr);
    } else {
      at::_foreach_addcdiv_(params, grads, avg, -lr);
    }
  }
}

// ---------------------------------------------------------------- RAdam

Radam::Radam(std::vector<torch::Tensor> params, RadamOptions options,
             OptimizerPath path)
    : Optimizer("RAdam",
                OneGroup(std::move(params), options.lr, options.weight_decay),
                path),
      options_(options) {
  for (const auto& g : param_groups()) state_.emplace_back(g.params.size());
}

void Radam::UpdateGroup(size_t g, const std::vector<size_t>& with_grad) {
  const ParamGroup& group = param_groups()[g];
  const double lr = group.lr;
  const double wd = group.weight_decay;
  const double beta1 = options_.beta1;
  const double beta2 = options_.beta2;
  const double rho_inf = 2 / (1 - beta2) - 1;
  auto& states = state_[g];
  for (size_t i : with_grad) {
    if (!states[i].exp_avg.defined()) {
      states[i].exp_avg = torch::zeros_like(group.params[i]);
      states[i].exp_avg_sq = torch::zeros_like(group.params[i]);
    }
  }
  auto rect_of = [&](double rho_t) {
    return std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                     ((rho_inf - 4) * (rho_inf - 2) * rho_t));
  };
  if (path() == OptimizerPath::kSingle) {
    for (size_t i : with_grad) {
      torch::Tensor param = group.params[i];
      State& s = states[i];
      s.step += 1;
      const double step = s.step;
      const torch::Tensor grad = WeightDecay(param, param.grad(), lr, wd,
                                             options_.decoupled_weight_decay);
      s.exp_avg.lerp_(grad, 1 - beta1);
      s.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      const double bias_correction1 = 1 - std::pow(beta1, step);
      const double bias_correction2 = 1 - std::pow(beta2, step);
      const torch::Tensor bias_corrected_exp_avg = s.exp_avg / bias_correction1;
      const double rho_t =
          rho_inf - 2 * step * std::pow(beta2, step) / bias_correction2;
      if (rho_t > 5.0) {
        const torch::Tensor adaptive_lr =
            std::sqrt(bias_correction2) /
            s.exp_avg_sq.sqrt().add_(options_.eps);
        param.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect_of(rho_t),
                   -1.0);
      } else {
        param.add_(bias_corrected_exp_avg * lr, -1.0);
      }
    }
    return;
  }
  for (const auto& idx : ByDeviceAndDtype(g, with_grad)) {
    std::vector<torch::Tensor> params = Pick(group.params, idx);
    std::vector<torch::Tensor> grads = Grads(params);
    std::vector<torch::Tensor> exp_avgs, exp_avg_sqs;
    std::vector<double> unrect_step_size, bias_correction2;
    for (size_t i : idx) {
      State& s = states[i];
      exp_avgs.push_back(s.exp_avg);
      exp_avg_sqs.push_back(s.exp_avg_sq);
      s.step += 1;
      const double step = s.step;
      const double rho_t = rho_inf - 2 * step * std::pow(beta2, step) /
                                         (1 - std::pow(beta2, step));
      const double rect = rho_t > 5 ? rect_of(rho_t) : 0;
      const double unrectified = rect > 0 ? 0 : 1.0;
      const double bc1 = 1 - std::pow(beta1, step);
      unrect_step_size.push_back((lr * unrectified / bc1) * -1);
      bias_correction2.push_back(std::sqrt(1 - std::pow(beta2, step)) *
                                 (lr * rect / bc1) * -1);
    }
    grads = WeightDecay(params, std::move(grads), lr, wd,
                        options_.decoupled_weight_decay);
    at::_foreach_lerp_(exp_avgs, grads, 1 - beta1);
    at::_foreach_mul_(exp_avg_sqs, beta2);
    at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
    std::vector<torch::Tensor> buffer = at::_foreach_sqrt(exp_avg_sqs);
    at::_foreach_add_(buffer, options_.eps);
    at::_foreach_div_(buffer, Scalars(bias_correction2));
    at::_foreach_reciprocal_(buffer);
    at::_foreach_add_(buffer, Scalars(unrect_step_size));
    at::_foreach_addcmul_(params, exp_avgs, buffer);
  }
}

}  // namespace optim
}  // namespace torchbench
