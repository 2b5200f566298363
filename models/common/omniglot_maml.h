// What maml_omniglot (higher) and functorch_maml_omniglot (torch.func)
// share around their train steps: the higher example's Omniglot conv net as
// an nn.Sequential, the meta-batch on the device (common::
// SyntheticOmniglotMetaBatch: 5-way, 5-shot, 15 queries, 32 tasks; 1 under
// ModelConfig::small_inputs), the Eval step (the net in eval mode on the
// first task's support images) and the golden check's filled tasks. Each
// model supplies its Train step, the one place the two references differ.
#ifndef TORCHBENCH_MODELS_COMMON_OMNIGLOT_MAML_H_
#define TORCHBENCH_MODELS_COMMON_OMNIGLOT_MAML_H_

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <string>

#include "common/functional_convnet.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"

namespace torchbench::common {

class OmniglotMamlModel : public Model, public GoldenCheck {
 public:
  // Both references' hyperparameters.
  static constexpr int64_t kNWay = 5;
  static constexpr int64_t kKSpt = 5;
  static constexpr int64_t kKQry = 15;
  static constexpr int64_t kTaskNum = 32;
  static constexpr int64_t kSmallTaskNum = 1;
  static constexpr int64_t kGoldenTaskNum = 2;
  static constexpr int kInnerIter = 5;
  static constexpr double kInnerLr = 1e-1;
  static constexpr double kMetaLr = 1e-3;

  // `batch_norm`: the reference net's BatchNorm2d options.
  OmniglotMamlModel(const ModelConfig& config,
                    const torch::nn::BatchNormOptions& batch_norm)
      : mode_(config.mode),
        optimizer_path_(config.optimizer),
        net_(MakeConvNetSequential(OmniglotConvNetOptions(kNWay), batch_norm)) {
    net_->to(config.device);
    const MetaBatch batch = SyntheticOmniglotMetaBatch(
        config.small_inputs ? kSmallTaskNum : kTaskNum, kNWay, kKSpt, kKQry);
    x_spt_ = batch.x_spt.to(config.float_options());
    y_spt_ = batch.y_spt.to(config.device);
    x_qry_ = batch.x_qry.to(config.float_options());
    y_qry_ = batch.y_qry.to(config.device);
    example_input_ = x_spt_[0];
    if (mode_ == Mode::kTrain) {
      net_->train();
    } else {
      net_->eval();
    }
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) return net_->forward(example_input_);
    return TrainStep();
  }

  torch::nn::Module& module() override { return *net_; }

  // eval() and one train() call on 2 filled tasks, in float64, as the
  // models' tools/golden/adapters/ record them.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    net_->to(torch::kDouble);
    const auto f64 = torch::TensorOptions().dtype(torch::kDouble);
    const int64_t setsz = kNWay * kKSpt;
    const int64_t querysz = kNWay * kKQry;
    x_spt_ = DeterministicTensor("x_spt", {kGoldenTaskNum, setsz, 1, 28, 28})
                 .to(f64);
    y_spt_ = DeterministicIntegers("y_spt", {kGoldenTaskNum, setsz}, 0, kNWay);
    x_qry_ = DeterministicTensor("x_qry", {kGoldenTaskNum, querysz, 1, 28, 28})
                 .to(f64);
    y_qry_ =
        DeterministicIntegers("y_qry", {kGoldenTaskNum, querysz}, 0, kNWay);
    return recorder_.Capture([&] {
      {
        torch::NoGradGuard no_grad;
        net_->eval();
        recorder_.Record("eval_output", net_->forward(x_spt_[0]));
      }
      net_->train();
      TrainStep();
    });
  }

 protected:
  // The reference's train(); under a golden check it also records (in
  // recorder_) what the model's golden file holds from it.
  virtual torch::Tensor TrainStep() = 0;

  // Records net_'s edge parameters (or their gradients) as
  // RecordEdgeParameters names them, when a golden check is capturing.
  void RecordEdges(const std::string& prefix, bool gradients) {
    if (!recorder_.recording()) return;
    std::map<std::string, torch::Tensor> edges;
    RecordEdgeParameters(*net_, prefix, gradients, &edges);
    for (const auto& [key, value] : edges) recorder_.Record(key, value);
  }

  Mode mode_;
  OptimizerPath optimizer_path_;
  torch::nn::Sequential net_;
  FunctionalConvNet fnet_{OmniglotConvNetOptions(kNWay)};
  torch::Tensor x_spt_, y_spt_, x_qry_, y_qry_;
  torch::Tensor example_input_;  // the first task's support images
  GoldenRecorder recorder_;
};

}  // namespace torchbench::common

#endif  // TORCHBENCH_MODELS_COMMON_OMNIGLOT_MAML_H_
