#include "torchbench/amp.h"

#include <ATen/autocast_mode.h>
#include <ATen/ops/_amp_foreach_non_finite_check_and_unscale.h>
#include <ATen/ops/_amp_update_scale.h>
#include <c10/util/Exception.h>
#include <torch/autograd.h>

#include <map>
#include <string>

#include "amp_internal.h"

namespace torchbench {
namespace {

thread_local StepPrecision* active_step = nullptr;

}  // namespace

AutocastScope::AutocastScope(c10::DeviceType device_type, bool enabled,
                             c10::ScalarType dtype)
    : device_type_(device_type),
      previous_enabled_(at::autocast::is_autocast_enabled(device_type)),
      previous_dtype_(at::autocast::get_autocast_dtype(device_type)) {
  at::autocast::set_autocast_dtype(device_type_, dtype);
  at::autocast::set_autocast_enabled(device_type_, enabled);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_type_, previous_enabled_);
  at::autocast::set_autocast_dtype(device_type_, previous_dtype_);
}

GradScaler::GradScaler(Options options) : options_(options) {}

torch::Tensor GradScaler::Scale(const torch::Tensor& loss) {
  if (!scale_.defined()) {
    const auto on = torch::TensorOptions().device(loss.device());
    scale_ = torch::full({}, options_.init_scale, on.dtype(torch::kFloat));
    growth_tracker_ = torch::zeros({}, on.dtype(torch::kInt));
  }
  scaled_since_update_ = true;
  return loss * scale_.to(loss.device(), /*non_blocking=*/true);
}

std::set<size_t> GradScaler::UnscaleOnce(
    const std::vector<torch::Tensor>& grads) {
  TORCH_CHECK(scaled_since_update_,
              "GradScaler: gradients unscaled under amp_fp16 without a "
              "scaled loss (the model's Train step must call "
              "torchbench::Backward)");
  torch::NoGradGuard no_grad;
  std::set<size_t> checks;
  std::vector<torch::Tensor> fresh;
  for (const auto& grad : grads) {
    const auto it = unscaled_.find(grad.unsafeGetTensorImpl());
    if (it != unscaled_.end()) {
      checks.insert(it->second);
    } else {
      fresh.push_back(grad);
    }
  }
  if (fresh.empty()) return checks;
  // The reciprocal in double, as GradScaler.unscale_ does.
  const torch::Tensor inv_scale =
      scale_.to(torch::kDouble).reciprocal().to(torch::kFloat);
  // Per (device, dtype) group, as _foreach kernels take them; one found_inf
  // per device, as unscale_ keeps them.
  std::map<std::pair<std::string, int>, std::vector<torch::Tensor>> groups;
  std::map<std::string, size_t> found_inf_index;
  for (const auto& grad : fresh) {
    // A sparse gradient is unscaled through its values, as GradScaler does
    // (coalesced first when fp16, whose duplicate indices could overflow).
    torch::Tensor g = grad;
    if (g.is_sparse()) {
      if (g.scalar_type() == torch::kHalf) {
        g = g.coalesce();
        const_cast<torch::Tensor&>(grad).set_data(g);
      }
      g = g._values();
    }
    const std::string device = g.device().str();
    auto [it, inserted] = found_inf_index.try_emplace(device, 0);
    if (inserted) {
      it->second = found_infs_.size();
      found_infs_.push_back(torch::zeros(
          {}, torch::TensorOptions().dtype(torch::kFloat).device(g.device())));
    }
    unscaled_[grad.unsafeGetTensorImpl()] = it->second;
    checks.insert(it->second);
    groups[{device, static_cast<int>(g.scalar_type())}].push_back(g);
  }
  for (auto& [key, list] : groups) {
    const c10::Device device = list.front().device();
    at::_amp_foreach_non_finite_check_and_unscale_(
        list, found_infs_[found_inf_index.at(key.first)],
        inv_scale.to(device, /*non_blocking=*/true));
  }
  return checks;
}

void GradScaler::Unscale(const std::vector<torch::Tensor>& grads) {
  UnscaleOnce(grads);
}

bool GradScaler::UnscaleAndCheck(const std::vector<torch::Tensor>& grads) {
  double found = 0;
  for (size_t i : UnscaleOnce(grads)) found += found_infs_[i].item<double>();
  last_step_skipped_ = found != 0;
  return !last_step_skipped_;
}

void GradScaler::Update() {
  scaled_since_update_ = false;
  unscaled_.clear();
  if (found_infs_.empty()) return;
  torch::NoGradGuard no_grad;
  torch::Tensor combined = found_infs_.front().to(scale_.device());
  for (size_t i = 1; i < found_infs_.size(); ++i) {
    combined += found_infs_[i].to(scale_.device());
  }
  at::_amp_update_scale_(scale_, growth_tracker_, combined,
                         options_.growth_factor, options_.backoff_factor,
                         options_.growth_interval);
  found_infs_.clear();
}

double GradScaler::scale() const {
  return scale_.defined() ? scale_.item<double>() : options_.init_scale;
}

StepPrecision::StepPrecision(const ModelConfig& config, GradScaler* scaler)
    : config_(config), previous_(active_step) {
  if (const auto dtype = AutocastDtype(config.precision)) {
    autocast_.emplace(config.device.type(), /*enabled=*/true, *dtype);
    if (config.mode == Mode::kTrain &&
        config.precision == Precision::kAmpFp16) {
      scaler_ = scaler;
    }
  }
  active_step = this;
}

StepPrecision::~StepPrecision() { active_step = previous_; }

void StepPrecision::Finish() {
  if (scaler_ != nullptr) {
    TORCH_CHECK(!scaler_->scaled_but_not_unscaled(),
                "amp_fp16 Train scaled the loss but nothing unscaled its "
                "gradients: an update the model makes by hand must call "
                "torchbench::UnscaleGradients (amp.h) first");
    scaler_->Update();
  }
  if (autocast_ && config_.mode == Mode::kTrain && backward_calls_ == 0 &&
      !backward_waived_) {
    TORCH_CHECK(false, PrecisionName(config_.precision),
                " Train needs the model's step to call torchbench::Backward "
                "(amp.h), which this step never did");
  }
}

void StepHasNoBackward() {
  if (active_step != nullptr) active_step->backward_waived_ = true;
}

void Backward(const torch::Tensor& loss, bool retain_graph) {
  StepPrecision* step = active_step;
  torch::Tensor scaled = loss;
  if (step != nullptr) {
    ++step->backward_calls_;
    if (step->scaler_ != nullptr) scaled = step->scaler_->Scale(loss);
  }
  // Gradients flow outside autocast, as torch.autocast's docs recommend;
  // the recorded graph already holds the dtypes autocast chose.
  OutsideAutocast outside;
  scaled.backward({}, retain_graph);
}

struct OutsideAutocast::Off {
  explicit Off(c10::DeviceType type)
      : scope(type, /*enabled=*/false, at::autocast::get_autocast_dtype(type)) {
  }
  AutocastScope scope;
};

OutsideAutocast::OutsideAutocast() {
  const StepPrecision* step = active_step;
  if (step == nullptr || !step->autocast_) return;
  off_ = std::make_unique<Off>(step->config_.device.type());
}

OutsideAutocast::~OutsideAutocast() = default;

GradScaler* ActiveGradScaler() {
  return active_step != nullptr ? active_step->scaler_ : nullptr;
}

void UnscaleGradients(const std::vector<torch::Tensor>& grads) {
  if (GradScaler* scaler = ActiveGradScaler()) scaler->Unscale(grads);
}

}  // namespace torchbench
