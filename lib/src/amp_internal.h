// File: amp_internal.h (internal: the harness's side of amp.h, not installed)
//
// The scope each harness step runs in (autocast, the step's GradScaler) and
// what the optimizers read of it.
#ifndef TORCHBENCH_SRC_AMP_INTERNAL_H_
#define TORCHBENCH_SRC_AMP_INTERNAL_H_

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <optional>

#include "torchbench/amp.h"
#include "torchbench/model.h"

namespace torchbench {

// torch.autocast(device_type, dtype, enabled) as an RAII scope: sets the
// thread's autocast state for `device_type`, and restores it (clearing the
// cast cache when the outermost scope ends) on destruction.
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device_type, bool enabled,
                c10::ScalarType dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_type_;
  bool previous_enabled_;
  c10::ScalarType previous_dtype_;
};

// The harness's per-step precision scope. For amp precisions it enables
// autocast on `config.device`; for amp_fp16 Train with a non-null `scaler`
// it makes it the step's GradScaler (Backward scales, optimizers unscale and
// check). Finish() ends the step: it updates the scaler and throws when an
// amp Train step never called Backward (its gradients would bypass the AMP
// path) or scaled a loss whose gradients nothing unscaled (an update by hand
// would have used scaled gradients).
class StepPrecision {
 public:
  StepPrecision(const ModelConfig& config, GradScaler* scaler);
  ~StepPrecision();
  StepPrecision(const StepPrecision&) = delete;
  StepPrecision& operator=(const StepPrecision&) = delete;

  void Finish();

 private:
  const ModelConfig& config_;
  std::optional<AutocastScope> autocast_;
  GradScaler* scaler_ = nullptr;
  StepPrecision* previous_ = nullptr;
  int backward_calls_ = 0;
  bool backward_waived_ = false;
  friend class OutsideAutocast;
  friend void Backward(const torch::Tensor&, bool);
  friend void StepHasNoBackward();
  friend GradScaler* ActiveGradScaler();
};

// The GradScaler of the running step, or nullptr.
GradScaler* ActiveGradScaler();

}  // namespace torchbench

#endif  // TORCHBENCH_SRC_AMP_INTERNAL_H_
