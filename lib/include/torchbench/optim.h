// File: torchbench/optim.h
//
// The optimizers models step, with PyTorch's semantics and both of its code
// paths: the per-parameter loop (torch.optim's _single_tensor_*, which is
// what LibTorch's own optimizers do) and the multi-tensor path
// (_multi_tensor_*, built on at::_foreach_* ops), which PyTorch picks by
// default when every parameter is on CUDA. A Python user's Train step on a
// GPU launches a few kernels per parameter group, not per parameter; running
// LibTorch's per-parameter loop there would time a launch-bound step no
// Python user sees.
//
//   torchbench::optim::Adam adam(net->parameters(), {.lr = 1e-3},
//                                config.optimizer);
//   adam.ZeroGrad();
//   torchbench::Backward(loss);   // the harness's AMP path (amp.h)
//   adam.Step();
//
// Each Step() is one "Optimizer.step#<Name>.step" user-scope record, as in
// PyTorch's profiler traces, and runs under the harness's GradScaler when an
// amp_fp16 Train step is active (grads unscaled; the step skipped on
// Inf/NaN).
#ifndef TORCHBENCH_OPTIM_H_
#define TORCHBENCH_OPTIM_H_

#include <torch/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "torchbench/model.h"

namespace torchbench {

// Returns the path PyTorch picks for parameters on `device` when `requested`
// is kDefault (torch.optim's _default_to_fused_or_foreach: foreach on CUDA,
// the per-parameter loop elsewhere), else `requested`.
OptimizerPath ResolveOptimizerPath(OptimizerPath requested,
                                   const c10::Device& device);

namespace optim {

// Parameters stepped together with their own lr and weight decay (what
// schedulers and timm's no-decay groups change); the other hyperparameters
// belong to the optimizer.
struct ParamGroup {
  std::vector<torch::Tensor> params;
  double lr = 0;
  double weight_decay = 0;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // torch.optim.Optimizer.zero_grad() with its default set_to_none=True:
  // every grad becomes undefined, launching nothing.
  void ZeroGrad();

  // One update of every parameter that has a gradient.
  void Step();

  std::vector<ParamGroup>& param_groups() { return groups_; }
  // Sets every group's lr (what a scheduler does before step()).
  void SetLr(double lr);

  // kForeach or kSingle (never kDefault).
  OptimizerPath path() const { return path_; }
  const std::string& name() const { return name_; }

 protected:
  // `requested` is resolved against the first parameter's device. Vendored
  // optimizers pass kSingle: the reference's own loop is per-parameter.
  Optimizer(std::string name, std::vector<ParamGroup> groups,
            OptimizerPath requested);

  // Updates `params[i]` for i in `with_grad` (indices into group `g`'s
  // params that have a gradient), on the optimizer's path.
  virtual void UpdateGroup(size_t g, const std::vector<size_t>& with_grad) = 0;

  // Splits `with_grad` by (device, dtype), as torch.optim's
  // _group_tensors_by_device_and_dtype does before each foreach call.
  std::vector<std::vector<size_t>> ByDeviceAndDtype(
      size_t g, const std::vector<size_t>& with_grad) const;

 private:
  std::string name_;
  std::string record_name_;
  std::vector<ParamGroup> groups_;
  OptimizerPath path_;
};

// One parameter group holding `params` with `lr` and `weight_decay`.
std::vector<ParamGroup> OneGroup(std::vector<torch::Tensor> params, double lr,
                                 double weight_decay);

struct SgdOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

// torch.optim.SGD.
class Sgd final : public Optimizer {
 public:
  Sgd(std::vector<torch::Tensor> params, SgdOptions options,
      OptimizerPath path);
  // Groups carry their own lr and weight_decay; `options` the rest.
  Sgd(std::vector<ParamGroup> groups, SgdOptions options, OptimizerPath path);

 private:
  void UpdateGroup(size_t g, const std::vector<size_t>& with_grad) override;
  SgdOptions options_;
  std::vector<std::vector<torch::Tensor>> momentum_;  // [group][param]
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  // AdamW: p *= 1 - lr * weight_decay instead of grad += wd * p.
  bool decoupled_weight_decay = false;
};

// torch.optim.Adam, and torch.optim.AdamW with decoupled_weight_decay (whose
// default weight_decay is 1e-2: set it).
class Adam final : public Optimizer {
 public:
  Adam(std::vector<torch::Tensor> params, AdamOptions options,
       OptimizerPath path);
  Adam(std::vector<ParamGroup> groups, AdamOptions options, OptimizerPath path);

 private:
  struct State {
    double step = 0;
    torch::Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
  };
  void UpdateGroup(size_t g, const std::vector<size_t>& with_grad) override;
  AdamOptions options_;
  std::vector<std::vector<State>> state_;
};

struct RmspropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
};

// torch.optim.RMSprop.
class Rmsprop final : public Optimizer {
 public:
  Rmsprop(std::vector<torch::Tensor> params, RmspropOptions options,
          OptimizerPath path);

 private:
  struct State {
    torch::Tensor square_avg, grad_avg, momentum_buffer;
  };
  void UpdateGroup(size_t g, const std::vector<size_t>& with_grad) override;
  RmspropOptions options_;
  std::vector<std::vector<State>> state_;
};

struct RadamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;
};

// torch.optim.RAdam (not the vendored RAdam of tts_angular, which differs:
// models/common/optimizers.h).
class Radam final : public Optimizer {
 public:
  Radam(std::vector<torch::Tensor> params, RadamOptions options,
        OptimizerPath path);

 private:
  struct State {
    double step = 0;
    torch::Tensor exp_avg, exp_avg_sq;
  };
  void UpdateGroup(size_t g, const std::vector<size_t>& with_grad) override;
  RadamOptions options_;
  std::vector<std::vector<State>> state_;
};

namespace internal {
// The paths of the optimizers that stepped on this thread since the last
// call (a bit per OptimizerPath), then clears them. The harness reads it
// after a step to label what ran.
unsigned TakeSteppedPaths();
}  // namespace internal

}  // namespace optim
}  // namespace torchbench

#endif  // TORCHBENCH_OPTIM_H_
