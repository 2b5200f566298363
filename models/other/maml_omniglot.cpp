// TorchBench's maml_omniglot (torchbenchmark/models/maml_omniglot at
// 43ca0857, adapted from facebookresearch/higher's examples/maml-omniglot.py):
// second-order MAML with the `higher` library on an nn.Sequential
// (Conv2d(1|64, 64, 3) - BatchNorm2d(momentum=1) - ReLU - MaxPool2d(2)) x 3,
// Flatten, Linear(64, 5).
//
// One Train call is the reference's train(): a fresh Adam (lr 1e-3) on the
// net's parameters, zero_grad, then for each of the 32 tasks
// higher.innerloop_ctx(net, SGD(lr 0.1), copy_initial_weights=False): the
// fast weights start as clones of the parameters (in the graph), 5
// differentiable SGD steps on the support loss (DifferentiableSGD: the
// gradients taken with create_graph, p - 0.1 * g), then the query loss's
// backward, which accumulates the second-order meta-gradient into the
// parameters; then one Adam step. The patched module runs BatchNorm in
// train mode on per-task copies of the running statistics (higher's
// buffer_sync clones them), which it moves and drops; the net's own buffers
// never change. Train returns the last task's query loss (the reference
// returns nothing). One Eval call is the reference's eval(): the net in eval
// mode (running statistics) on the first task's support images, under
// no_grad.
//
// Inputs: the reference loads batch.pt, a Git-LFS Omniglot meta-batch the
// checkout lacks; common::SyntheticOmniglotMetaBatch stands in for it with
// the higher example's shapes (x_spt 32x25x1x28x28, y_spt 32x25, x_qry
// 32x75x1x28x28, y_qry 32x75: 5-way, 5-shot, 15 queries) and binary
// stroke-like images (see functional_convnet.h). The batch size (32) is
// nominal: ALLOW_CUSTOMIZE_BSIZE = False and nothing reads it; the task
// count is the batch file's.
//
// The fast-weight forward is common::FunctionalConvNet, the same conv,
// batch_norm, relu_ and max_pool2d ops as the patched nn modules.
// ModelConfig::small_inputs (the CPU smoke and precision tests) runs 1 of
// the 32 tasks: the per-task loop is unchanged.
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
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace maml_omniglot_model {
namespace {

namespace F = torch::nn::functional;

class MamlOmniglot final : public common::OmniglotMamlModel {
 public:
  explicit MamlOmniglot(const ModelConfig& config)
      : OmniglotMamlModel(
            config,
            torch::nn::BatchNormOptions(64).momentum(1.0).affine(true)) {}

 private:
  // Model.train(). A golden check records each task's query loss, the last
  // task's query logits, and the edge gradients (before the Adam step) and
  // parameters (after it).
  torch::Tensor TrainStep() override {
    const std::vector<torch::Tensor> params = net_->parameters();
    optim::Adam meta_opt(params, optim::AdamOptions{.lr = kMetaLr},
                         optimizer_path_);
    const int64_t task_num = x_spt_.size(0);
    meta_opt.ZeroGrad();
    torch::Tensor qry_loss;
    for (int64_t i = 0; i < task_num; ++i) {
      // innerloop_ctx: fast weights cloned in the graph, running statistics
      // cloned out of it.
      std::vector<torch::Tensor> fast;
      for (const torch::Tensor& p : params) fast.push_back(p.clone());
      common::BatchNormRunningStats stats = CloneRunningStats();
      for (int k = 0; k < kInnerIter; ++k) {
        const torch::Tensor spt_logits =
            fnet_.Forward(x_spt_[i], fast, &stats, /*training=*/true);
        const torch::Tensor spt_loss = F::cross_entropy(spt_logits, y_spt_[i]);
        fast = common::InnerSgdStep(spt_loss, fast, kInnerLr,
                                    /*create_graph=*/true);
      }
      const torch::Tensor qry_logits =
          fnet_.Forward(x_qry_[i], fast, &stats, /*training=*/true);
      qry_loss = F::cross_entropy(qry_logits, y_qry_[i]);
      Backward(qry_loss);
      if (recorder_.recording()) {
        recorder_.Record("qry_loss." + std::to_string(i), qry_loss);
        recorder_.Record("qry_logits", qry_logits);
      }
    }
    RecordEdges("grad:", /*gradients=*/true);
    meta_opt.Step();
    RecordEdges("after_step:", /*gradients=*/false);
    return qry_loss.detach();
  }

  common::BatchNormRunningStats CloneRunningStats() {
    common::BatchNormRunningStats stats;
    stats.momentum = 1.0;
    for (const auto& b : net_->named_buffers(/*recurse=*/true)) {
      const std::string& key = b.key();
      torch::Tensor copy = b.value().detach().clone();
      if (key.ends_with("running_mean")) {
        stats.mean.push_back(copy);
      } else if (key.ends_with("running_var")) {
        stats.var.push_back(copy);
      } else {
        stats.num_batches_tracked.push_back(copy);
      }
    }
    return stats;
  }
};

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "maml_omniglot",
         .domain = "other",
         .task =
             "meta-learning (second-order MAML with higher, Omniglot 5-way)",
         .reference =
             "TorchBench maml_omniglot (facebookresearch/higher example)",
         // DEFAULT_TRAIN_BSIZE (nominal: the task count)
         .train_batch_size = 32,
         .eval_batch_size = 32,  // DEFAULT_EVAL_BSIZE (nominal)
         .fixed_batch_size = true,
         // sum(p.numel() ...) over the reference's nn.Sequential (pinned
         // torch): 640 + 2 * 36928 + 3 * 128 + 325; buffers: three
         // BatchNorms' mean, var and num_batches_tracked (3 * 129).
         .reference_parameters = 75205,
         .reference_buffers = 387,
         // Golden file made with higher 0.2.1.
         .checks = {.golden_file = "maml_omniglot.golden"}}),
    MakeModel<MamlOmniglot>());

}  // namespace maml_omniglot_model
}  // namespace torchbench
