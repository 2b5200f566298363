// TorchBench's functorch_dp_cifar10 (torchbenchmark/models/
// functorch_dp_cifar10/__init__.py at 43ca0857): DP-SGD on torchvision's
// resnet18 with norm_layer = GroupNorm(min(c, 32), c). The reference keeps
// resnet18's default num_classes=1000 although the targets are CIFAR-10's
// randint(0, 10): so does this port.
//
// One Train call is the reference's train(): the net in train mode, a copy
// of its parameters (make_functional_with_buffers' deepcopy), per-sample
// gradients vmap(grad(compute_loss), (None, None, 0, 0)) with
// compute_loss the CrossEntropyLoss of one unsqueezed image and target,
// then clip_and_accumulate_and_add_noise(max_per_sample_grad_norm=1.0,
// noise_multiplier=1.0): per-sample norms over all parameters, clip factors
// 1 / (norm + 1e-6) clamped to 1, the factor-weighted sum per parameter,
// plus torch.normal(0, 1.0, shape) noise drawn for every parameter in
// parameters() order (default dtype, the default generator), then
// grad = (noise + sum) / batch_size; Adam(lr 1e-3) steps and zero_grad()
// sets the gradients to None. The reference's train() returns nothing; this
// returns the per-sample gradient norms it computed. One Eval call is the
// reference's eval(): the net in eval mode on the images under no_grad
// (GroupNorm has no running statistics, so eval and train mode agree).
//
// The per-sample gradients come from LibTorch's own function transforms
// (common::VmapGrad: ATen's functorch vmap and grad levels, the C++ that
// torch.func drives), so the batched backward is PyTorch's vmap one, not a
// rewrite. Differences from the reference: the noised gradient is cast to
// its parameter's dtype (under fp16/bf16 the float32 noise makes it
// float32, which the reference would assign to a half parameter's .grad and
// PyTorch refuses); under amp_bf16 the step calls StepHasNoBackward() (no
// loss.backward(): the grad transform differentiates), and amp_fp16 Train
// is refused (no loss for a GradScaler to scale).
#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/version.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/dp_cifar10.h"
#include "common/families.h"
#include "common/group_norm_resnet18.h"
#include "common/per_sample_gradients.h"
#include "torchbench/amp.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace functorch_dp_cifar10_model {
namespace {

namespace F = torch::nn::functional;

constexpr double kMaxPerSampleGradNorm = 1.0;

class FunctorchDpCifar10 final : public common::DpCifar10Model {
 public:
  explicit FunctorchDpCifar10(const ModelConfig& config)
      : DpCifar10Model(config), net_(/*num_classes=*/1000) {
    Init(config);
  }

  torch::nn::Module& module() override { return *net_; }

 private:
  torch::Tensor EvalForward() override { return net_->forward(images_); }

  torch::Tensor TrainStep() override {
    StepHasNoBackward();
    net_->train();
    std::vector<torch::Tensor> params = net_->parameters();
    // make_functional_with_buffers deep-copies the net on every call and
    // vmap(grad) differentiates the copy's parameters (equal values): the
    // copy is made here too.
    std::vector<torch::Tensor> copies;
    copies.reserve(params.size());
    for (const auto& p : params) copies.push_back(p.detach().clone());
    std::vector<torch::Tensor> sample_grads = common::VmapGrad(
        [this](const std::vector<torch::Tensor>& p,
               const std::vector<torch::Tensor>& sample) {
          return F::cross_entropy(
              net_->Forward(sample[0].unsqueeze(0), p, nullptr),
              sample[1].unsqueeze(0));
        },
        copies, {images_, targets_});
    for (auto& g : sample_grads) g = g.detach();
    const int64_t batch_size = images_.size(0);
    torch::Tensor norms;
    std::vector<torch::Tensor> grads =
        common::ClipAndAccumulate(sample_grads, kMaxPerSampleGradNorm, &norms);
    const double stddev = kMaxPerSampleGradNorm * noise_multiplier_;
    std::vector<torch::Tensor> noises;
    noises.reserve(grads.size());
    for (const auto& g : grads) {
      noises.push_back(
          torch::normal(0.0, stddev, g.sizes(), /*generator=*/std::nullopt,
                        torch::TensorOptions().device(g.device())));
    }
    for (size_t i = 0; i < params.size(); ++i) {
      params[i].mutable_grad() =
          ((noises[i] + grads[i]) / batch_size).to(params[i].scalar_type());
    }
    recorder_.Record("sample_norms", norms);
    recorder_.Record("grad_sample:conv1.weight", sample_grads.front());
    recorder_.Record("grad_sample:fc.bias", sample_grads.back());
    RecordEdgeGradients();
    optimizer_->Step();
    optimizer_->ZeroGrad();
    return norms;
  }

  common::GroupNormResNet18 net_;
};

// LibTorch 2.11 and 2.12 throw inside functorch here: the batching rule of
// native_group_norm's double backward misplaces the batch dimension
// (models/libtorch_releases.md). Train is skipped there with that reason,
// not run to an error; Python's torch.func on the same wheels computes it.
ModelSpec WithoutTrainBeforeLibTorch213(ModelSpec spec) {
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 13
  spec = WithUnsupportedPrecisions(
      std::move(spec),
      {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16,
       Precision::kAmpBf16},
      "LibTorch " TORCH_VERSION
      "'s functorch cannot batch native_group_norm's double backward under "
      "vmap(grad) (fixed in 2.13)",
      /*cpu_only=*/false, Mode::kTrain);
#endif
  return spec;
}

}  // namespace

// Counts: sum(p.numel() ...) over the reference's Model(test="train").model
// (pinned torch, pinned torchvision): resnet18 with 1000 classes; GroupNorm
// has no buffers.
TORCHBENCH_REGISTER_MODEL(
    WithoutTrainBeforeLibTorch213(ModelSpec(
        {.name = "functorch_dp_cifar10",
         .domain = "other",
         .task = "differentially private training (per-sample gradients)",
         .reference = "TorchBench functorch_dp_cifar10 (torchvision resnet18 "
                      "with GroupNorm, functorch vmap(grad))",
         .train_batch_size = 64,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 64,   // DEFAULT_EVAL_BSIZE
         .reference_parameters = 11689512,
         .reference_buffers = 0,
         .unsupported_precisions =
             {{.precision = Precision::kAmpFp16,
               .reason = "train() has no loss.backward(): the gradients come "
                         "from the grad transform, so there is no loss for a "
                         "GradScaler to scale",
               .mode = Mode::kTrain}},
         .checks = {.golden_file = "functorch_dp_cifar10.golden"}})),
    MakeModel<FunctorchDpCifar10>());

}  // namespace functorch_dp_cifar10_model
}  // namespace torchbench
