// TorchBench's maml (torchbenchmark/models/maml at 43ca0857: meta.py and
// learner.py, a copy of dragen1860/MAML-Pytorch): the Meta learner around a
// functional Learner net (Conv2d(3, stride 2) - ReLU - BatchNorm x 3,
// Conv2d(2) - ReLU - BatchNorm, Flatten, Linear(64, 5)), 5-way 1-shot with 15
// queries per class, 32 tasks.
//
// Train is not supported (the reference's train() raises). Eval is the
// reference's eval(): Meta.forward with the module never switched to
// .eval(), so it runs forward_train, a full meta-training step. For each of
// the 32 tasks: 5 inner SGD steps (lr 0.4) on the task's support set with
// torch.autograd.grad (no create_graph: first-order MAML, the fast weights
// track the initial weights through the update's identity term only), the
// query loss and accuracy after each (the accuracies read back with .item(),
// six host syncs per task); then the mean of the last query losses is
// backpropagated and the meta Adam (lr 1e-3, created once in __init__,
// state kept across calls) steps. It returns the query accuracies after 0..5
// inner steps (a 6-element host tensor). Gradients stay enabled in Eval
// (eval_in_nograd() is False), and every net call, the no_grad ones
// included, runs BatchNorm in training mode and moves its running
// statistics (net.vars_bn, parameters with requires_grad=False), so an Eval
// step changes parameters and running statistics (the smoke test knows).
//
// Inputs: the reference synthesises its data (use_data_file = False): x_spt
// randn(32, 5, 1, 28, 28), y_spt randint(0, 5, (32, 5)), x_qry randn(32, 75,
// 1, 28, 28), y_qry randint(0, 5, (32, 75)), drawn on the host right after
// the net's Kaiming initialisation, as here (the same calls in the same
// order from the harness's seed). The batch size (1) is nominal:
// ALLOW_CUSTOMIZE_BSIZE = False and nothing reads it.
//
// Differences: the accuracies are returned in the step's dtype (the
// reference's torch.tensor(corrects) / n is float32 whatever the precision),
// so that reduced-precision Eval returns its dtype as the harness expects.
// ModelConfig::small_inputs (the CPU smoke and precision tests) runs 2 of
// the 32 tasks: the per-task loop is unchanged.
#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/parameterlist.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/functional_convnet.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace maml_model {
namespace {

namespace F = torch::nn::functional;

// The reference's args Namespace.
constexpr int64_t kNWay = 5;
constexpr int64_t kKSpt = 1;
constexpr int64_t kKQry = 15;
constexpr int64_t kImgSz = 28;
constexpr int64_t kImgC = 1;
constexpr int64_t kTaskNum = 32;
constexpr double kMetaLr = 1e-3;
constexpr double kUpdateLr = 0.4;
constexpr int kUpdateStep = 5;
constexpr int64_t kSmallTaskNum = 2;
// Tasks of the golden check (tools/golden/adapters/maml.py).
constexpr int64_t kGoldenTaskNum = 2;

common::FunctionalConvNetOptions LearnerOptions() {
  common::FunctionalConvNetOptions options;
  options.in_channels = kImgC;
  options.n_way = kNWay;
  options.kernel_sizes = {3, 3, 3, 2};
  options.strides = {2, 2, 2, 1};
  options.relu_before_batch_norm = true;
  options.max_pool = false;
  return options;
}

// learner.py's Learner: `vars` holds the conv, BatchNorm and linear weights
// in config order, `vars_bn` the running mean and variance of each
// BatchNorm (parameters with requires_grad=False, as the reference
// registers them).
class LearnerImpl : public torch::nn::Module {
 public:
  explicit LearnerImpl(const common::FunctionalConvNetOptions& o) {
    vars = register_module("vars", torch::nn::ParameterList());
    vars_bn = register_module("vars_bn", torch::nn::ParameterList());
    int64_t in = o.in_channels;
    for (size_t b = 0; b < o.kernel_sizes.size(); ++b) {
      const int64_t k = o.kernel_sizes[b];
      torch::Tensor w = torch::ones({o.channels, in, k, k});
      torch::nn::init::kaiming_normal_(w);
      AddVar(w);
      AddVar(torch::zeros({o.channels}));
      AddVar(torch::ones({o.channels}));
      AddVar(torch::zeros({o.channels}));
      vars_bn->append(torch::zeros({o.channels}));
      vars_bn->append(torch::ones({o.channels}));
      in = o.channels;
    }
    torch::Tensor w = torch::ones({o.n_way, o.channels});
    torch::nn::init::kaiming_normal_(w);
    AddVar(w);
    AddVar(torch::zeros({o.n_way}));
  }

  torch::nn::ParameterList vars{nullptr};
  torch::nn::ParameterList vars_bn{nullptr};

 private:
  // ParameterList keeps a tensor's requires_grad; nn.Parameter sets it.
  void AddVar(torch::Tensor t) { vars->append(t.requires_grad_(true)); }
};
TORCH_MODULE(Learner);

// meta.py's Meta: the module TorchBench builds (state_dict "net.vars.<i>",
// "net.vars_bn.<i>").
class MetaImpl : public torch::nn::Module {
 public:
  MetaImpl() { net = register_module("net", Learner(LearnerOptions())); }
  Learner net{nullptr};
};
TORCH_MODULE(Meta);

class Maml final : public Model, public GoldenCheck {
 public:
  explicit Maml(const ModelConfig& config)
      : float_options_(config.float_options()),
        task_num_(config.small_inputs ? kSmallTaskNum : kTaskNum) {
    meta_->to(config.device);
    BindRunningStats();
    optimizer_ = std::make_unique<optim::Adam>(
        meta_->net->vars->parameters(), optim::AdamOptions{.lr = kMetaLr},
        config.optimizer);
    // Drawn on the host, then moved, as the reference's torch.randn(...)
    // .to(device); always all 32 tasks, so the draws stay the reference's.
    const int64_t setsz = kNWay * kKSpt;
    const int64_t querysz = kNWay * kKQry;
    x_spt_ = torch::randn({kTaskNum, setsz, kImgC, kImgSz, kImgSz});
    y_spt_ = torch::randint(0, kNWay, {kTaskNum, setsz}, torch::kLong);
    x_qry_ = torch::randn({kTaskNum, querysz, kImgC, kImgSz, kImgSz});
    y_qry_ = torch::randint(0, kNWay, {kTaskNum, querysz}, torch::kLong);
    const auto slice = torch::indexing::Slice(0, task_num_);
    x_spt_ = x_spt_.index({slice}).to(float_options_);
    y_spt_ = y_spt_.index({slice}).to(config.device);
    x_qry_ = x_qry_.index({slice}).to(float_options_);
    y_qry_ = y_qry_.index({slice}).to(config.device);
  }

  torch::Tensor Step() override { return ForwardTrain(); }

  torch::nn::Module& module() override { return *meta_; }

  // One eval() call on 2 filled tasks in float64, as
  // tools/golden/adapters/maml.py records it: the accuracies, the meta loss,
  // the last query logits, edge gradients and, after the Adam step, edge
  // weights and running statistics.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    meta_->to(torch::kDouble);  // In place: the optimizer keeps the tensors.
    BindRunningStats();
    float_options_ = float_options_.dtype(torch::kDouble);
    const int64_t setsz = kNWay * kKSpt;
    const int64_t querysz = kNWay * kKQry;
    x_spt_ = DeterministicTensor("x_spt",
                                 {kGoldenTaskNum, setsz, kImgC, kImgSz, kImgSz})
                 .to(float_options_);
    y_spt_ = DeterministicIntegers("y_spt", {kGoldenTaskNum, setsz}, 0, kNWay);
    x_qry_ = DeterministicTensor(
                 "x_qry", {kGoldenTaskNum, querysz, kImgC, kImgSz, kImgSz})
                 .to(float_options_);
    y_qry_ =
        DeterministicIntegers("y_qry", {kGoldenTaskNum, querysz}, 0, kNWay);
    std::map<std::string, torch::Tensor> out =
        recorder_.Capture([&] { recorder_.Record("accs", ForwardTrain()); });
    auto& vars = meta_->net->vars;
    const std::string last = std::to_string(vars->size() - 1);
    out["grad:net.vars.0"] = vars[0].grad().clone();
    out["grad:net.vars." + last] = vars[vars->size() - 1].grad().clone();
    out["after_step:net.vars.0"] = vars[0].detach().clone();
    out["after_step:net.vars." + last] =
        vars[vars->size() - 1].detach().clone();
    out["after_step:net.vars_bn.0"] = meta_->net->vars_bn[0].detach().clone();
    out["after_step:net.vars_bn.7"] = meta_->net->vars_bn[7].detach().clone();
    return out;
  }

 private:
  void BindRunningStats() {
    stats_ = common::BatchNormRunningStats{};  // F.batch_norm's momentum 0.1
    auto& bn = meta_->net->vars_bn;
    for (size_t i = 0; i + 1 < bn->size(); i += 2) {
      stats_.mean.push_back(bn[i]);
      stats_.var.push_back(bn[i + 1]);
    }
  }

  torch::Tensor Net(const torch::Tensor& x,
                    const std::vector<torch::Tensor>& weights) {
    return learner_.Forward(x, weights, &stats_, /*training=*/true);
  }

  // How many of `logits_q`'s argmax predictions hit `y` (a host sync).
  static int64_t Correct(const torch::Tensor& logits_q,
                         const torch::Tensor& y) {
    torch::NoGradGuard no_grad;
    const torch::Tensor pred_q = torch::softmax(logits_q, 1).argmax(1);
    return torch::eq(pred_q, y).sum().item<int64_t>();
  }

  // Meta.forward_train. A golden check records the meta loss and the last
  // task's final query logits.
  torch::Tensor ForwardTrain() {
    // eval_in_nograd() is False: the reference keeps grad mode on in eval.
    torch::AutoGradMode grad_mode(true);
    const int64_t task_num = x_spt_.size(0);
    const int64_t querysz = x_qry_.size(1);
    std::vector<torch::Tensor> losses_q(kUpdateStep + 1);
    std::vector<int64_t> corrects(kUpdateStep + 1, 0);
    const std::vector<torch::Tensor> params = meta_->net->vars->parameters();
    auto accumulate = [&losses_q](int k, const torch::Tensor& loss_q) {
      losses_q[k] = losses_q[k].defined() ? losses_q[k] + loss_q : loss_q;
    };
    torch::Tensor logits_q;
    for (int64_t i = 0; i < task_num; ++i) {
      const torch::Tensor x_spt = x_spt_[i];
      const torch::Tensor y_spt = y_spt_[i];
      const torch::Tensor x_qry = x_qry_[i];
      const torch::Tensor y_qry = y_qry_[i];
      torch::Tensor loss = F::cross_entropy(Net(x_spt, params), y_spt);
      std::vector<torch::Tensor> fast_weights =
          common::InnerSgdStep(loss, params, kUpdateLr, /*create_graph=*/false);
      {
        torch::NoGradGuard no_grad;
        logits_q = Net(x_qry, params);
        accumulate(0, F::cross_entropy(logits_q, y_qry));
        corrects[0] += Correct(logits_q, y_qry);
      }
      {
        torch::NoGradGuard no_grad;
        logits_q = Net(x_qry, fast_weights);
        accumulate(1, F::cross_entropy(logits_q, y_qry));
        corrects[1] += Correct(logits_q, y_qry);
      }
      for (int k = 1; k < kUpdateStep; ++k) {
        loss = F::cross_entropy(Net(x_spt, fast_weights), y_spt);
        fast_weights = common::InnerSgdStep(loss, fast_weights, kUpdateLr,
                                            /*create_graph=*/false);
        logits_q = Net(x_qry, fast_weights);
        accumulate(k + 1, F::cross_entropy(logits_q, y_qry));
        corrects[k + 1] += Correct(logits_q, y_qry);
      }
    }
    const torch::Tensor loss_q = losses_q.back() / task_num;
    optimizer_->ZeroGrad();
    Backward(loss_q);
    optimizer_->Step();
    recorder_.Record("loss", loss_q);
    recorder_.Record("query_logits", logits_q);
    // torch.tensor(corrects) / n: float32 as in the reference, then the
    // step's dtype.
    return (torch::tensor(corrects, torch::kLong) / (querysz * task_num))
        .to(float_options_.dtype());
  }

  torch::TensorOptions float_options_;
  int64_t task_num_;
  Meta meta_;
  common::FunctionalConvNet learner_{LearnerOptions()};
  common::BatchNormRunningStats stats_;
  std::unique_ptr<optim::Adam> optimizer_;
  torch::Tensor x_spt_, y_spt_, x_qry_, y_qry_;
  GoldenRecorder recorder_;
};

}  // namespace

// Counts: sum(p.numel() for p in Model(...).module.parameters()) (pinned
// torch): the 18 Learner.vars (91781) and the 8 vars_bn running statistics
// (512), nn.Parameters too; no buffers.
TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "maml",
         .domain = "other",
         .task = "meta-learning (first-order MAML, 5-way 1-shot, 32 tasks)",
         .reference =
             "TorchBench maml (dragen1860/MAML-Pytorch Meta + Learner)",
         .modes = {Mode::kEval},  // train() raises NotImplementedError
         .eval_batch_size = 1,    // DEFAULT_EVAL_BSIZE (nominal)
         .fixed_batch_size = true,
         .reference_parameters = 92293,
         .reference_buffers = 0,
         // TorchBench's metadata.yaml (tests/golden/cudnn_flags.txt).
         .eval_cudnn = {.deterministic = true},
         .checks = {.golden_file = "maml.golden",
                    .eval_changes_state =
                        "maml's eval() is Meta.forward_train, a full "
                        "meta-training step: the meta Adam updates net.vars "
                        "and every train-mode BatchNorm call moves "
                        "net.vars_bn"}}),
    MakeModel<Maml>());

}  // namespace maml_model
}  // namespace torchbench
