// TorchBench's moco (torchbenchmark/models/moco/__init__.py at 43ca0857,
// with its copy of facebookresearch/moco: moco/builder.py and
// main_moco.py's adjust_learning_rate): MoCo v1 (mlp=False) with two
// torchvision resnet50(num_classes=128) encoders, the key encoder a
// momentum (m 0.999) copy of the query encoder, a 128 x 32000 queue of
// negative keys (randn, L2-normalised per column), temperature 0.07, the
// shuffling BN trick (batch shuffle before the key encoder, unshuffle
// after), wrapped in DistributedDataParallel of world size 1.
//
// One Train call is train(): adjust_learning_rate (lr 0.03 in epoch 0),
// then for each of two batches: forward (query and key features, the
// momentum update, shuffle/unshuffle, logits over the positive key and the
// 32000 queued ones, enqueue of the keys), CrossEntropyLoss against label
// 0, zero_grad, backward, SGD(lr 0.03, momentum 0.9, weight decay 1e-4)
// step. One Eval call is eval(): the same two forwards, under no_grad but in
// training mode, as the reference never calls .eval(): BatchNorm uses batch
// statistics and updates its running ones, the key encoder moves and the
// queue takes the keys. The Eval output is the last batch's logits.
//
// Inputs: the reference reads no dataset; its four randn(B, 3, 224, 224)
// batches (query and key views of two steps) are drawn on the host and
// moved, as here. The batch shuffle's randperm is drawn on the host and
// moved, as the reference's torch.randperm(n).cuda().
//
// TorchBench runs moco on CUDA only (its __init__ raises on the CPU, for
// DDP and all_gather); this port runs on both.
//
// The distributed parts, at world size 1:
//  - concat_all_gather (ones_like(x), all_gather into it, cat) and
//    torch.distributed.broadcast(idx_shuffle, src=0) go through a real c10d
//    process group of one (torchbench/process_group.h): Gloo on the CPU,
//    NCCL on CUDA where the build has it, as init_process_group makes them
//    for TorchBench's world of one. get_rank() is 0.
//  - DDP: its construction-time broadcast of parameters and buffers, its
//    per-forward buffer broadcast (Train only: DDP syncs buffers when grad
//    is enabled) and its per-backward gradient all-reduce averaged over one
//    rank leave every value unchanged; they are not performed, so the port
//    leaves out their copies of the 23.8M gradients and 4.1M-element queue.
//
// ModelConfig::small_inputs (the CPU smoke and precision tests) makes the
// images 64x64 instead of 224x224: every layer runs, the last feature map
// is 2x2 instead of 7x7.
#include <torch/nn/functional/loss.h>
#include <torch/nn/functional/normalization.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/torchvision_resnet.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/process_group.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace moco_model {
namespace {

namespace F = torch::nn::functional;
using torchvision_resnet::ResNet;
using torchvision_resnet::ResNetOptions;

constexpr int64_t kImageSize = 224;
constexpr int64_t kSmallImageSize = 64;
constexpr int64_t kDim = 128;      // moco_dim
constexpr int64_t kQueue = 32000;  // moco_k
constexpr double kMomentum = 0.999;
constexpr double kTemperature = 0.07;
constexpr double kLr = 0.03;
constexpr int64_t kBatchesPerCall = 2;
constexpr uint64_t kGoldenSeed = 31415;

F::NormalizeFuncOptions L2(int64_t dim) {
  return F::NormalizeFuncOptions().dim(dim);
}

ResNetOptions Resnet50() {
  return ResNetOptions().layers({3, 4, 6, 3}).num_classes(kDim);
}

// MoCo(resnet50, dim=128, K=32000, m=0.999, T=0.07, mlp=False).
class MocoImpl : public torch::nn::Module {
 public:
  MocoImpl()
      : encoder_q_(register_module("encoder_q", ResNet(Resnet50()))),
        encoder_k_(register_module("encoder_k", ResNet(Resnet50()))) {
    torch::NoGradGuard no_grad;
    const auto q = encoder_q_->parameters();
    const auto k = encoder_k_->parameters();
    for (size_t i = 0; i < q.size(); ++i) {
      k[i].copy_(q[i]);
      k[i].set_requires_grad(false);
    }
    queue_ = register_buffer("queue",
                             F::normalize(torch::randn({kDim, kQueue}), L2(0)));
    queue_ptr_ = register_buffer("queue_ptr", torch::zeros({1}, torch::kLong));
  }

  struct Output {
    torch::Tensor logits;  // (N, 1 + K)
    torch::Tensor labels;  // (N,) zeros
  };

  // The process group the collectives go through (one per instance).
  void set_process_group(c10::intrusive_ptr<c10d::Backend> group) {
    group_ = std::move(group);
  }

  Output forward(const torch::Tensor& im_q, const torch::Tensor& im_k) {
    torch::Tensor q = F::normalize(encoder_q_->forward(im_q), L2(1));
    torch::Tensor k;
    {
      torch::NoGradGuard no_grad;
      MomentumUpdateKeyEncoder();
      auto [shuffled, idx_unshuffle] = BatchShuffle(im_k);
      k = F::normalize(encoder_k_->forward(shuffled), L2(1));
      k = BatchUnshuffle(k, idx_unshuffle);
    }
    torch::Tensor l_pos = torch::einsum("nc,nc->n", {q, k}).unsqueeze(-1);
    torch::Tensor l_neg =
        torch::einsum("nc,ck->nk", {q, queue_.clone().detach()});
    torch::Tensor logits = torch::cat({l_pos, l_neg}, /*dim=*/1);
    logits.div_(kTemperature);
    torch::Tensor labels =
        torch::zeros({logits.size(0)}, torch::kLong).to(logits.device());
    DequeueAndEnqueue(k);
    return {logits, labels};
  }

 private:
  // concat_all_gather: [ones_like(x)] * world_size, all_gather, cat.
  torch::Tensor ConcatAllGather(const torch::Tensor& tensor) {
    std::vector<std::vector<torch::Tensor>> gathered{
        {torch::ones_like(tensor)}};
    std::vector<torch::Tensor> input{tensor};
    group_->allgather(gathered, input)->wait();
    return torch::cat(gathered[0], /*dim=*/0);
  }

  // param_k.data = param_k.data * m + param_q.data * (1 - m).
  void MomentumUpdateKeyEncoder() {
    const auto q = encoder_q_->parameters();
    const auto k = encoder_k_->parameters();
    for (size_t i = 0; i < q.size(); ++i) {
      k[i].set_data(k[i].data() * kMomentum + q[i].data() * (1.0 - kMomentum));
    }
  }

  // _batch_shuffle_ddp at rank 0 of 1.
  std::pair<torch::Tensor, torch::Tensor> BatchShuffle(const torch::Tensor& x) {
    const int64_t batch_size_this = x.size(0);
    torch::Tensor x_gather = ConcatAllGather(x);
    const int64_t batch_size_all = x_gather.size(0);
    const int64_t num_gpus = batch_size_all / batch_size_this;
    std::vector<torch::Tensor> idx_shuffle{
        torch::randperm(batch_size_all, torch::kLong).to(x.device())};
    group_->broadcast(idx_shuffle)->wait();  // src=0
    torch::Tensor idx_unshuffle = torch::argsort(idx_shuffle[0]);
    torch::Tensor idx_this = idx_shuffle[0].view({num_gpus, -1})[0];
    return {x_gather.index({idx_this}), idx_unshuffle};
  }

  // _batch_unshuffle_ddp at rank 0 of 1.
  torch::Tensor BatchUnshuffle(const torch::Tensor& x,
                               const torch::Tensor& idx_unshuffle) {
    const int64_t batch_size_this = x.size(0);
    torch::Tensor x_gather = ConcatAllGather(x);
    const int64_t num_gpus = x_gather.size(0) / batch_size_this;
    return x_gather.index({idx_unshuffle.view({num_gpus, -1})[0]});
  }

  void DequeueAndEnqueue(const torch::Tensor& k) {
    torch::Tensor keys = ConcatAllGather(k);
    const int64_t batch_size = keys.size(0);
    // int(self.queue_ptr): the reference's host sync.
    const int64_t ptr = queue_ptr_.item<int64_t>();
    TORCH_CHECK(kQueue % batch_size == 0, "MoCo: K=", kQueue,
                " must be a multiple of the batch size ", batch_size);
    queue_.slice(1, ptr, ptr + batch_size).copy_(keys.t());
    queue_ptr_[0] = (ptr + batch_size) % kQueue;
  }

  ResNet encoder_q_;
  ResNet encoder_k_;
  torch::Tensor queue_;
  torch::Tensor queue_ptr_;
  c10::intrusive_ptr<c10d::Backend> group_;
};
TORCH_MODULE(Moco);

class MocoBenchmark final : public Model, public GoldenCheck {
 public:
  explicit MocoBenchmark(const ModelConfig& config)
      : mode_(config.mode), moco_(Moco()) {
    TORCH_CHECK(kQueue % config.batch_size == 0, "MoCo: K=", kQueue,
                " must be a multiple of the batch size ", config.batch_size);
    moco_->to(config.device);
    auto group = CreateWorldOfOne(config.device);
    TORCH_CHECK(group.ok(), "moco: ", group.status().ToString());
    moco_->set_process_group(*std::move(group));
    optimizer_ = std::make_unique<optim::Sgd>(
        moco_->parameters(),
        optim::SgdOptions{.lr = kLr, .momentum = 0.9, .weight_decay = 1e-4},
        config.optimizer);
    // The reference leaves the module in training mode in both tests.
    moco_->train();
    const int64_t size = config.small_inputs ? kSmallImageSize : kImageSize;
    for (int64_t i = 0; i < 2 * kBatchesPerCall; ++i) {
      batches_.push_back(torch::randn({config.batch_size, 3, size, size})
                             .to(config.device, config.dtype()));
    }
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) {
      torch::Tensor logits;
      for (int64_t i = 0; i < kBatchesPerCall; ++i) {
        logits = moco_->forward(batches_[2 * i], batches_[2 * i + 1]).logits;
      }
      return logits;
    }
    return TrainStep();
  }

  torch::nn::Module& module() override { return *moco_; }

  // Two Model.train() batches on filled weights, queue and 64x64 images
  // after a seeded generator (the shuffles' randperm), as
  // tools/golden/adapters/moco.py records them: the first batch's logits,
  // labels, loss and edge gradients of the query encoder, then the edge
  // parameters of both encoders, the queue and its pointer after the call.
  //
  // In float64, filled in float64 as the adapter does: on filled weights the
  // backward through batch-2 BatchNorms amplifies float32 rounding to 4e-3
  // relative in the first conv's gradient (measured against the reference).
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    {
      // Python's .double(): floating tensors only (queue_ptr and the
      // BatchNorm counters stay int64, so the fill leaves them alone).
      torch::NoGradGuard no_grad;
      for (auto& t : moco_->parameters()) t.set_data(t.to(torch::kDouble));
      for (auto& t : moco_->buffers()) {
        if (t.is_floating_point()) t.set_data(t.to(torch::kDouble));
      }
    }
    DeterministicFill(*moco_);
    const int64_t batch = batches_[0].size(0);
    for (int64_t i = 0; i < 2 * kBatchesPerCall; ++i) {
      batches_[i] = DeterministicTensor(
          "images." + std::to_string(i),
          {batch, 3, kSmallImageSize, kSmallImageSize}, torch::kDouble);
    }
    torch::manual_seed(kGoldenSeed);
    std::map<std::string, torch::Tensor> out =
        recorder_.Capture([&] { TrainStep(); });
    for (const auto& p : moco_->named_parameters(/*recurse=*/true)) {
      const std::string& name = p.key();
      if (name == "encoder_q.conv1.weight" || name == "encoder_q.fc.bias" ||
          name == "encoder_k.conv1.weight" || name == "encoder_k.fc.bias") {
        out["after_step:" + name] = p.value().detach().clone();
      }
    }
    for (const auto& b : moco_->named_buffers(/*recurse=*/true)) {
      if (b.key() == "queue" || b.key() == "queue_ptr" ||
          b.key() == "encoder_q.bn1.running_mean") {
        out["after_step:" + b.key()] = b.value().detach().clone();
      }
    }
    return out;
  }

 private:
  // Model.train(). A golden check records the first batch's outputs, loss
  // and the query encoder's edge gradients before its SGD step. Returns the
  // last loss (the reference returns nothing).
  torch::Tensor TrainStep() {
    moco_->train();
    optimizer_->SetLr(kLr);  // adjust_learning_rate(optimizer, 0, opt)
    torch::Tensor loss;
    for (int64_t i = 0; i < kBatchesPerCall; ++i) {
      MocoImpl::Output output =
          moco_->forward(batches_[2 * i], batches_[2 * i + 1]);
      loss = F::cross_entropy(output.logits, output.labels);
      optimizer_->ZeroGrad();
      Backward(loss);
      if (recorder_.recording() && i == 0) {
        recorder_.Record("output.0", output.logits.clone());
        recorder_.Record("output.1", output.labels.clone());
        recorder_.Record("loss", loss);
        for (const auto& p : moco_->named_parameters(/*recurse=*/true)) {
          if (p.key() == "encoder_q.conv1.weight" ||
              p.key() == "encoder_q.fc.bias") {
            recorder_.Record("grad:" + p.key(), p.value().grad().clone());
          }
        }
      }
      optimizer_->Step();
    }
    return loss.detach();
  }

  Mode mode_;
  Moco moco_;
  std::unique_ptr<optim::Sgd> optimizer_;
  // Query and key views of the two batches, in the reference's order.
  std::vector<torch::Tensor> batches_;
  GoldenRecorder recorder_;
};

}  // namespace

// Counts: sum(p.numel() ...) over MoCo(resnet50, 128, 32000, 0.999, 0.07,
// mlp=False) as __init__.py builds it (pinned torch, pinned torchvision):
// two resnet50(num_classes=128) (the key encoder's too, though it takes no
// gradients); buffers: each encoder's 53 BatchNorms, the 128 x 32000 queue
// and the one-element queue_ptr.
TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "moco",
         .domain = "other",
         .task = "self-supervised contrastive learning",
         .reference = "TorchBench moco (facebookresearch/moco v1, ResNet-50)",
         .train_batch_size = 32,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 32,   // DEFAULT_EVAL_BSIZE
         .reference_parameters = 2 * 23770304,
         .reference_buffers = 2 * 53173 + kDim * kQueue + 1,
         // TorchBench's metadata.yaml (tests/golden/cudnn_flags.txt).
         .train_cudnn = {.benchmark = true},
         .eval_cudnn = {.benchmark = true},
         .checks = {.golden_file = "moco.golden",
                    .test_batch_size = 2,
                    .eval_changes_state =
                        "the reference's eval() runs MoCo's training-mode "
                        "forward under no_grad: BatchNorm running statistics, "
                        "the momentum-updated key encoder, the queue and its "
                        "pointer change"}}),
    MakeModel<MocoBenchmark>());

}  // namespace moco_model
}  // namespace torchbench
