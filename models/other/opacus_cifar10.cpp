// TorchBench's opacus_cifar10 (torchbenchmark/models/opacus_cifar10/
// __init__.py at 43ca0857): torchvision's resnet18(num_classes=10) made
// DP-compatible by Opacus's ModuleValidator.fix (each BatchNorm2d replaced by
// GroupNorm(min(32, c), c)) and trained through PrivacyEngine.make_private
// (noise_multiplier 1.0, max_grad_norm 1.0, poisson_sampling=False, the
// defaults loss_reduction="mean", secure_mode=False, no noise generator).
// Opacus 1.3.0 is the reference (what `opacus>=1.1.2` resolved to at the
// commit; tools/requirements.txt).
//
// The module is Opacus's GradSampleModule: the resnet is its `_module`, so
// the parameter names are "_module.conv1.weight", ... as in the reference's
// state_dict. One Train call is the reference's train(): forward with the
// per-layer capture hooks (common::GradSampleHooks: Opacus's hooks and its
// Conv2d / GroupNorm / Linear grad samplers, per-sample gradients computed
// during backward in one batched computation per layer),
// CrossEntropyLoss, loss.backward() (which also fills the ordinary .grad,
// as in the reference), then DPOptimizer.step(): per-sample clipping to norm
// 1.0 and summing (common::ClipAndAccumulate), torch.normal(0, 1.0, shape)
// noise per parameter in parameters() order from the default generator,
// grad = (sum + noise) / expected_batch_size (the loader's batch size), the
// wrapped Adam(lr 1e-3) step, and zero_grad() (set_to_none=False: the
// gradients are zeroed in place, per-sample gradients dropped). One Eval
// call is the reference's eval(): the net in eval mode under no_grad (no
// hooks record then). It returns the loss (the reference returns nothing).
//
// Not ported: Opacus's privacy accountant (its step hook only appends
// (noise, sample rate) to a Python list; no tensor work). The noised
// gradient is cast to its parameter's dtype: under fp16/bf16 the float32
// noise makes it float32, which the reference would assign to a half
// parameter's .grad and PyTorch refuses; under amp the bf16 per-sample sums
// plus float32 noise are float32 as in the reference. Under
// amp_fp16 the GradScaler's scaled loss reaches the per-sample gradients
// before clipping, as it would under Opacus.
#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/dp_cifar10.h"
#include "common/group_norm_resnet18.h"
#include "common/per_sample_gradients.h"
#include "torchbench/amp.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace opacus_cifar10_model {
namespace {

namespace F = torch::nn::functional;

constexpr double kMaxGradNorm = 1.0;

// Opacus's GradSampleModule as a module tree: the wrapped net is `_module`.
class GradSampleModuleImpl : public torch::nn::Module {
 public:
  GradSampleModuleImpl()
      : module_(register_module("_module", common::GroupNormResNet18(10))) {}

  torch::Tensor forward(const torch::Tensor& x,
                        common::GradSampleHooks* hooks) {
    // capture_activations_hook records only in training with grad enabled.
    const bool record = is_training() && torch::GradMode::is_enabled();
    return module_->Forward(x, module_->parameters(), record ? hooks : nullptr);
  }

 private:
  common::GroupNormResNet18 module_;
};
TORCH_MODULE(GradSampleModule);

class OpacusCifar10 final : public common::DpCifar10Model {
 public:
  explicit OpacusCifar10(const ModelConfig& config) : DpCifar10Model(config) {
    Init(config);
  }

  torch::nn::Module& module() override { return *net_; }

 private:
  torch::Tensor EvalForward() override {
    return net_->forward(images_, nullptr);
  }

  torch::Tensor TrainStep() override {
    net_->train();
    torch::Tensor output = net_->forward(images_, &hooks_);
    torch::Tensor loss = F::cross_entropy(output, targets_);
    Backward(loss);
    std::vector<torch::Tensor> params = net_->parameters();
    std::vector<torch::Tensor> grad_samples;
    grad_samples.reserve(params.size());
    for (const auto& p : params) grad_samples.push_back(hooks_.GradSample(p));
    // DPOptimizer.pre_step: clip_and_accumulate, add_noise, scale_grad.
    std::vector<torch::Tensor> summed =
        common::ClipAndAccumulate(grad_samples, kMaxGradNorm);
    const double stddev = noise_multiplier_ * kMaxGradNorm;
    for (size_t i = 0; i < params.size(); ++i) {
      torch::Tensor grad = summed[i];
      if (stddev != 0.0) {
        torch::Tensor noise = torch::normal(
            0.0, stddev, summed[i].sizes(), /*generator=*/std::nullopt,
            torch::TensorOptions().device(summed[i].device()));
        grad = grad + noise;
      }
      // make_private's expected_batch_size: int(len(dataset) * 1 /
      // len(loader)), one full batch here.
      params[i].mutable_grad() =
          grad.view_as(params[i]).to(params[i].scalar_type()) /
          static_cast<double>(images_.size(0));
    }
    recorder_.Record("output", output);
    recorder_.Record("loss", loss);
    recorder_.Record("grad_sample:_module.conv1.weight", grad_samples.front());
    recorder_.Record("grad_sample:_module.fc.bias", grad_samples.back());
    RecordEdgeGradients();
    optimizer_->Step();
    // DPOptimizer.zero_grad(set_to_none=False).
    hooks_.Clear();
    for (auto& p : params) {
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
    return loss.detach();
  }

  GradSampleModule net_;
  common::GradSampleHooks hooks_;
};

}  // namespace

// Counts: sum(p.numel() ...) over the reference's Model(test="train").model,
// the GradSampleModule (pinned torch, pinned torchvision, opacus 1.3.0): no
// parameters of the wrapper's own; no buffers (GroupNorm).
TORCHBENCH_REGISTER_MODEL(
    ModelSpec({.name = "opacus_cifar10",
               .domain = "other",
               .task = "differentially private training (Opacus)",
               .reference = "TorchBench opacus_cifar10 (torchvision resnet18, "
                            "Opacus 1.3.0 GradSampleModule + DPOptimizer)",
               .train_batch_size = 64,  // DEFAULT_TRAIN_BSIZE
               .eval_batch_size = 64,   // DEFAULT_EVAL_BSIZE
               .reference_parameters = 11181642,
               .reference_buffers = 0,
               .checks = {.golden_file = "opacus_cifar10.golden"}}),
    MakeModel<OpacusCifar10>());

}  // namespace opacus_cifar10_model
}  // namespace torchbench
