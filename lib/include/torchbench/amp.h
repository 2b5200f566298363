// File: torchbench/amp.h
//
// Automatic mixed precision as PyTorch users run it, for the harness's
// amp_fp16 / amp_bf16 precisions: an autocast region (torch.autocast has no
// C++ counterpart), a GradScaler with torch.amp.GradScaler's semantics, and
// the one call models make for backward:
//
//   torch::Tensor loss = criterion(net->forward(x), y);  // under autocast
//   torchbench::Backward(loss);  // scaled under amp_fp16, outside autocast
//   optimizer.Step();            // unscales; skips the update on Inf/NaN
//
// The harness runs each amp step inside its precision scope: the whole
// step is under autocast (TorchBench wraps eval and the forward stage of
// train this way; the optimizer's ops are on no autocast list), backward
// runs outside it as PyTorch's AMP recipe says, and so does what a model
// puts in an OutsideAutocast scope (a loss its reference computes after the
// autocast block). TorchBench's amp Train has no
// GradScaler unless the model's own enable_amp() adds one, so only those
// models (ModelSpec::amp_grad_scaler) scale the loss under amp_fp16 Train:
// their optimizers unscale (GradScaler.unscale_) and skip on Inf/NaN, and
// gradient clipping calls UnscaleGradients first, as the reference clips
// after scaler.unscale_.
#ifndef TORCHBENCH_AMP_H_
#define TORCHBENCH_AMP_H_

#include <c10/core/ScalarType.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "torchbench/model.h"

namespace torchbench {

// torch.amp.GradScaler with its defaults: the loss is multiplied by a scale
// (2^16 at first); before an optimizer steps, its gradients are multiplied by
// 1/scale and checked for Inf/NaN, and the step is skipped when any is found;
// once per iteration the scale halves after a skipped step, or doubles after
// `growth_interval` clean ones.
class GradScaler {
 public:
  struct Options {
    double init_scale = 65536.0;
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int64_t growth_interval = 2000;
  };
  GradScaler() : GradScaler(Options{}) {}
  explicit GradScaler(Options options);

  // scaler.scale(loss).
  torch::Tensor Scale(const torch::Tensor& loss);

  // scaler.unscale_(optimizer): multiplies `grads` by 1/scale in place and
  // records, without synchronizing, whether any is Inf/NaN. A gradient
  // already unscaled since the last Update() is left alone (unscale_ runs
  // once per optimizer and step). Throws when no loss was scaled since the
  // last Update().
  void Unscale(const std::vector<torch::Tensor>& grads);

  // Unscale, then the step check of scaler.step(optimizer), for the
  // gradients of one optimizer: returns whether the optimizer may step (no
  // Inf/NaN found by the unscaling of these gradients; synchronizes, as
  // scaler.step's .item() does).
  bool UnscaleAndCheck(const std::vector<torch::Tensor>& grads);

  // scaler.update(): applies every check since the last update. Without any
  // check (no optimizer stepped this iteration) the scale stays as it is
  // (torch.amp.GradScaler would raise).
  void Update();

  // The current scale (synchronizes); the initial scale before first use.
  double scale() const;
  // Whether the last checked optimizer step was skipped.
  bool last_step_skipped() const { return last_step_skipped_; }
  // Whether a loss was scaled since the last Update() and no gradient was
  // unscaled: an update made by hand would have used scaled gradients.
  bool scaled_but_not_unscaled() const {
    return scaled_since_update_ && unscaled_.empty();
  }

 private:
  Options options_;
  torch::Tensor scale_;           // float32 scalar on the loss's device.
  torch::Tensor growth_tracker_;  // int32 scalar.
  // Indices into found_infs_ of the checks Unscale made for `grads`.
  std::set<size_t> UnscaleOnce(const std::vector<torch::Tensor>& grads);

  std::vector<torch::Tensor> found_infs_;
  // Each gradient unscaled since the last Update(), with the index of the
  // found_inf tensor its check wrote.
  std::unordered_map<const c10::TensorImpl*, size_t> unscaled_;
  bool scaled_since_update_ = false;
  bool last_step_skipped_ = false;
};

// Within a harness amp step, autocast off on the step's device until the
// scope ends: for what a reference computes after its autocast block.
// TorchBench's TorchVisionModel and TimmModel train() run only the forward
// under autocast and the loss after it, on the half-precision output:
//
//   torch::Tensor pred = net->forward(x);  // under autocast
//   torch::Tensor loss;
//   {
//     torchbench::OutsideAutocast outside;
//     loss = F::cross_entropy(pred, y);    // as the reference: not autocast
//   }
//
// Outside an amp step it does nothing.
class OutsideAutocast {
 public:
  OutsideAutocast();
  ~OutsideAutocast();
  OutsideAutocast(const OutsideAutocast&) = delete;
  OutsideAutocast& operator=(const OutsideAutocast&) = delete;

 private:
  struct Off;  // Autocast off; restored when it is destroyed.
  std::unique_ptr<Off> off_;
};

// loss.backward() as models must call it: scaled by the active GradScaler
// (amp_fp16 Train) and run with autocast off. Outside a harness step it is
// plain loss.backward().
void Backward(const torch::Tensor& loss, bool retain_graph = false);

// Declares that the running Train step has, by the reference's design, no
// backward pass (drq's first call, which only acts and stores the
// transition), so the harness does not take the missing Backward
// for a bypassed amp path. Outside a harness step it does nothing.
void StepHasNoBackward();

// scaler.unscale_ for gradients a model reads before its optimizer steps
// (clipping, a hand-written update): with an active GradScaler, unscales
// them in place once per step (GradScaler::Unscale); otherwise does nothing.
void UnscaleGradients(const std::vector<torch::Tensor>& grads);

}  // namespace torchbench

#endif  // TORCHBENCH_AMP_H_
