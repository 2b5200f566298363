// TorchBench's functorch_maml_omniglot (torchbenchmark/models/
// functorch_maml_omniglot at 43ca0857, functorch's MAML-Omniglot example):
// second-order MAML written with function transforms, on maml_omniglot's
// net with BatchNorm2d(track_running_stats=False) (no buffers: batch
// statistics in train and eval mode alike).
//
// One Train call is the reference's train(): make_functional_with_buffers
// deep-copies the net, a fresh Adam (lr 1e-3) gets the copy's parameters,
// and vmap runs loss_for_task over the 32 tasks: 5 inner steps
// new_params = p - 0.1 * grad(compute_loss)(p, ...) on the support set (the
// grad transform nested in the outer autograd: second order), then the query
// loss and accuracy. The sum of the 32 query losses is backpropagated once
// and Adam steps the copy, which is then dropped: the net's own parameters
// never change (checks.train_may_not_update), and every call starts from
// the same weights. It returns that sum (the reference returns nothing). One
// Eval call is the reference's eval(): the net in eval mode (still batch
// statistics) on the first task's support images, under no_grad.
//
// LibTorch has no functorch: no vmap and no grad transform. The same math
// runs here with explicit functional parameters (common::FunctionalConvNet)
// and torch::autograd::grad(create_graph=true) for each inner step, with the
// vmap over tasks a loop whose query losses are summed before the one
// backward (so all tasks' graphs are alive at once, as under vmap). Per task
// this computes what vmap computes, but as 32 per-task kernels where vmap
// batches the tasks into one call per op.
//
// Inputs: the reference loads maml_omniglot/batch.pt, a Git-LFS Omniglot
// meta-batch the checkout lacks; common::SyntheticOmniglotMetaBatch stands in
// for it (the same stand-in as maml_omniglot: 32 tasks of 5-way, 5-shot
// 1x28x28 images with 15 queries per class). The batch size (1) is nominal:
// ALLOW_CUSTOMIZE_BSIZE = False and nothing reads it. ModelConfig::
// small_inputs (the CPU smoke and precision tests) runs 1 of the 32 tasks.
#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/functional_convnet.h"
#include "common/omniglot_maml.h"
#include "torchbench/amp.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace functorch_maml_omniglot_model {
namespace {

namespace F = torch::nn::functional;

class FunctorchMamlOmniglot final : public common::OmniglotMamlModel {
 public:
  explicit FunctorchMamlOmniglot(const ModelConfig& config)
      : OmniglotMamlModel(
            config,
            torch::nn::BatchNormOptions(64).affine(true).track_running_stats(
                false)) {}

 private:
  // Model.train(). A golden check records the per-task query losses and
  // accuracies, and the copy's edge gradients and edge parameters after the
  // Adam step.
  torch::Tensor TrainStep() override {
    // make_functional_with_buffers: a deep copy's parameters, new leaves.
    std::vector<torch::Tensor> params;
    for (const torch::Tensor& p : net_->parameters()) {
      params.push_back(p.detach().clone().requires_grad_(true));
    }
    optim::Adam meta_opt(params, optim::AdamOptions{.lr = kMetaLr},
                         optimizer_path_);
    const int64_t task_num = x_spt_.size(0);
    const int64_t querysz = x_qry_.size(1);
    meta_opt.ZeroGrad();
    std::vector<torch::Tensor> qry_losses;
    std::vector<torch::Tensor> qry_accs;
    for (int64_t i = 0; i < task_num; ++i) {
      // loss_for_task.
      std::vector<torch::Tensor> new_params = params;
      for (int k = 0; k < kInnerIter; ++k) {
        const torch::Tensor loss =
            F::cross_entropy(fnet_.Forward(x_spt_[i], new_params), y_spt_[i]);
        new_params = common::InnerSgdStep(loss, new_params, kInnerLr,
                                          /*create_graph=*/true);
      }
      const torch::Tensor qry_logits = fnet_.Forward(x_qry_[i], new_params);
      qry_losses.push_back(F::cross_entropy(qry_logits, y_qry_[i]));
      qry_accs.push_back((qry_logits.argmax(1) == y_qry_[i]).sum() / querysz);
    }
    const torch::Tensor total = torch::stack(qry_losses).sum();
    Backward(total);
    if (recorder_.recording()) {
      recorder_.Record("qry_losses", torch::stack(qry_losses));
      recorder_.Record("qry_accs", torch::stack(qry_accs).to(torch::kDouble));
      recorder_.Record("grad:0.weight", params.front().grad().clone());
      recorder_.Record("grad:13.bias", params.back().grad().clone());
    }
    meta_opt.Step();
    if (recorder_.recording()) {
      recorder_.Record("after_step:0.weight", params.front().detach().clone());
      recorder_.Record("after_step:13.bias", params.back().detach().clone());
    }
    return total.detach();
  }
};

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "functorch_maml_omniglot",
         .domain = "other",
         .task = "meta-learning (second-order MAML with functorch, Omniglot)",
         .reference = "TorchBench functorch_maml_omniglot (functorch "
                      "MAML-Omniglot example)",
         .train_batch_size = 1,  // DEFAULT_TRAIN_BSIZE (nominal)
         .eval_batch_size = 1,   // DEFAULT_EVAL_BSIZE (nominal)
         .fixed_batch_size = true,
         // sum(p.numel() ...) over the reference's nn.Sequential (pinned
         // torch): maml_omniglot's; no buffers (track_running_stats=False).
         .reference_parameters = 75205,
         .reference_buffers = 0,
         .checks = {.golden_file = "functorch_maml_omniglot.golden",
                    .train_may_not_update =
                        "the reference's train() steps Adam on "
                        "make_functional_with_buffers' deep copy of the net "
                        "and drops it: the net itself never changes"}}),
    MakeModel<FunctorchMamlOmniglot>());

}  // namespace functorch_maml_omniglot_model
}  // namespace torchbench
