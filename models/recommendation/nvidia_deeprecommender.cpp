// TorchBench's nvidia_deeprecommender (torchbenchmark/models/
// nvidia_deeprecommender at 43ca0857, a copy of NVIDIA/DeepRecommender
// a32a8a5): the collaborative-filtering AutoEncoder in the reference's "toy"
// mode, 197951 items -> 512 -> 512 -> 1024 -> 512 -> 512 -> 197951 with SELU
// after every layer (the last one too: skip_last_layer_nl is False), dropout
// 0.8 on the 1024-wide code, and an unconstrained decoder with its own
// weights.
//
// One Train call is DeepRecommenderTrainBenchmark.train(niter=1) in toy mode:
// zero_grad, forward, the masked MSE summed over rated (non-zero) entries
// and divided by their count, backward and one SGD step (lr 0.005, momentum
// 0.9). The reference also builds a MultiStepLR (milestones 24, 36, 48, 66,
// 72) that toy mode never steps, so the learning rate stays 0.005: nothing
// of it is kept. One Eval call is DeepRecommenderInferenceBenchmark.eval():
// the forward in eval mode (no dropout) under no_grad.
//
// Inputs: toy mode reads no Netflix data; its inputs are randn(B, 197951),
// drawn before the network in both modes, as here. Dense Gaussian ratings
// are all non-zero, so the mask keeps every entry.
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/linear.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/parameterlist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace nvidia_deeprecommender_model {
namespace {

namespace F = torch::nn::functional;

// getTrainBenchmarkArgs() / getBenchmarkArgs().
constexpr int64_t kItems = 197951;  // toyvocab / node_count
const std::vector<int64_t> kLayerSizes = {kItems, 512, 512, 1024};
constexpr double kDropProb = 0.8;
constexpr double kLr = 0.005;
constexpr double kMomentum = 0.9;

// nn.Parameter(t): ParameterList::append keeps a tensor's requires_grad.
torch::Tensor Parameter(torch::Tensor t) { return t.set_requires_grad(true); }

// reco_encoder/model/model.py's AutoEncoder(layer_sizes, nl_type='selu',
// is_constrained=False, dp_drop_prob=0.8, last_layer_activations=True).
class AutoEncoderImpl : public torch::nn::Module {
 public:
  AutoEncoderImpl() {
    // The reference registers drop first, then the four lists, so
    // parameters() lists encode_w, encode_b, decode_w, decode_b.
    drop_ = register_module(
        "drop", torch::nn::Dropout(torch::nn::DropoutOptions(kDropProb)));
    encode_w_ = register_module("encode_w", torch::nn::ParameterList());
    for (size_t i = 0; i + 1 < kLayerSizes.size(); ++i) {
      encode_w_->append(
          Parameter(torch::rand({kLayerSizes[i + 1], kLayerSizes[i]})));
    }
    InitWeights(*encode_w_);
    encode_b_ = register_module("encode_b", torch::nn::ParameterList());
    for (size_t i = 0; i + 1 < kLayerSizes.size(); ++i) {
      encode_b_->append(Parameter(torch::zeros({kLayerSizes[i + 1]})));
    }
    const std::vector<int64_t> reversed(kLayerSizes.rbegin(),
                                        kLayerSizes.rend());
    decode_w_ = register_module("decode_w", torch::nn::ParameterList());
    for (size_t i = 0; i + 1 < reversed.size(); ++i) {
      decode_w_->append(Parameter(torch::rand({reversed[i + 1], reversed[i]})));
    }
    InitWeights(*decode_w_);
    decode_b_ = register_module("decode_b", torch::nn::ParameterList());
    for (size_t i = 0; i + 1 < reversed.size(); ++i) {
      decode_b_->append(Parameter(torch::zeros({reversed[i + 1]})));
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    for (size_t i = 0; i < encode_w_->size(); ++i) {
      x = F::selu(F::linear(x, encode_w_->at(i), encode_b_->at(i)));
    }
    x = drop_->forward(x);  // Only the code layer.
    for (size_t i = 0; i < decode_w_->size(); ++i) {
      x = F::selu(F::linear(x, decode_w_->at(i), decode_b_->at(i)));
    }
    return x;
  }

 private:
  // The reference draws each weight with torch.rand and then overwrites it
  // with xavier_uniform_; both draws are kept, in its order.
  static void InitWeights(torch::nn::ParameterListImpl& weights) {
    torch::NoGradGuard no_grad;
    for (auto& w : weights) torch::nn::init::xavier_uniform_(w.value());
  }

  torch::nn::Dropout drop_{nullptr};
  torch::nn::ParameterList encode_w_{nullptr};
  torch::nn::ParameterList encode_b_{nullptr};
  torch::nn::ParameterList decode_w_{nullptr};
  torch::nn::ParameterList decode_b_{nullptr};
};
TORCH_MODULE(AutoEncoder);

// model.MSEloss(inputs, targets) with size_average=False, divided by the
// number of ratings as the training loop does.
torch::Tensor MaskedMseLoss(const torch::Tensor& outputs,
                            const torch::Tensor& targets) {
  const torch::Tensor mask = targets != 0;
  const torch::Tensor num_ratings = torch::sum(mask.to(torch::kFloat));
  const torch::Tensor loss =
      F::mse_loss(outputs * mask.to(torch::kFloat), targets,
                  F::MSELossFuncOptions().reduction(torch::kSum));
  return loss / num_ratings;
}

class NvidiaDeeprecommender final : public Model, public GoldenCheck {
 public:
  explicit NvidiaDeeprecommender(const ModelConfig& config)
      : mode_(config.mode),
        inputs_(torch::randn({config.batch_size, kItems})
                    .to(config.float_options())) {
    rencoder_ = AutoEncoder();
    rencoder_->to(config.device);
    if (mode_ == Mode::kTrain) {
      optimizer_ = std::make_unique<optim::Sgd>(
          rencoder_->parameters(),
          optim::SgdOptions{.lr = kLr, .momentum = kMomentum},
          config.optimizer);
    } else {
      rencoder_->eval();
    }
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) return rencoder_->forward(inputs_);
    rencoder_->train();
    optimizer_->ZeroGrad();
    const torch::Tensor loss =
        MaskedMseLoss(rencoder_->forward(inputs_), inputs_);
    Backward(loss);
    optimizer_->Step();
    return loss.detach();
  }

  torch::nn::Module& module() override { return *rencoder_; }

  // The inference benchmark's eval() output, then one train() call's loss,
  // edge gradients and updated edge parameters, on filled weights and
  // inputs with dropout off (its masks cannot be shared with Python), as
  // tools/golden/adapters/nvidia_deeprecommender.py records them.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    inputs_ =
        DeterministicTensor("inputs", inputs_.sizes()).to(inputs_.options());
    std::map<std::string, torch::Tensor> out;
    {
      torch::NoGradGuard no_grad;
      rencoder_->eval();
      out["eval_output"] = rencoder_->forward(inputs_);
    }
    rencoder_->train();
    TurnOffDropout(*rencoder_);
    optimizer_->ZeroGrad();
    const torch::Tensor loss =
        MaskedMseLoss(rencoder_->forward(inputs_), inputs_);
    Backward(loss);
    out["loss"] = loss.detach();
    RecordEdgeParameters(*rencoder_, "grad:", /*gradients=*/true, &out);
    optimizer_->Step();
    RecordEdgeParameters(*rencoder_, "after_step:", /*gradients=*/false, &out);
    return out;
  }

 private:
  Mode mode_;
  torch::Tensor inputs_;  // toyinputs
  AutoEncoder rencoder_{nullptr};
  std::unique_ptr<optim::Sgd> optimizer_;
};

}  // namespace

// Counts: AutoEncoder([197951, 512, 512, 1024], ...) as the reference builds
// it (pinned torch, counted in Python with sum(p.numel() ...)): weights
// 2 * (512 * 197951 + 512 * 512 + 1024 * 512) and biases
// 512 + 512 + 1024 + 512 + 512 + 197951; no buffers.
TORCHBENCH_REGISTER_MODEL(
    ModelSpec({.name = "nvidia_deeprecommender",
               .domain = "recommendation",
               .task = "recommendation (collaborative-filtering autoencoder)",
               .reference = "TorchBench nvidia_deeprecommender "
                            "(NVIDIA/DeepRecommender AutoEncoder, toy mode)",
               .train_batch_size = 256,  // DEFAULT_TRAIN_BSIZE
               .eval_batch_size = 256,   // DEFAULT_EVAL_BSIZE
               .reference_parameters = 204475711,
               .reference_buffers = 0,
               .checks = {.golden_file = "nvidia_deeprecommender.golden"}}),
    MakeModel<NvidiaDeeprecommender>());

}  // namespace nvidia_deeprecommender_model
}  // namespace torchbench
