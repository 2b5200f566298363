// What TorchBench's HuggingFaceModel (torchbenchmark/util/framework/
// huggingface/model_factory.py at 43ca0857) adds around each hf_* network:
// the inputs, the Train step and the Eval step. Each hf_* model file builds
// its network and hands it to HfLanguageModel with the model's row of
// class_models and cpu_input_slice:
//
//   class BertForMaskedLMImpl : public torch::nn::Module {
//    public:
//     hf::LmOutput forward(const hf::LmBatch& batch);
//   };
//   ...
//   TORCHBENCH_REGISTER_MODEL(Spec(), [](const ModelConfig& config) {
//     return std::make_unique<hf::HfLanguageModel<BertForMaskedLM>>(
//         config, kTask, BertForMaskedLM(BertConfig{}));
//   });
//
// The reference, per call:
//   Train: loss = model(input_ids=ids, labels=labels).loss; loss.backward();
//          Adam(lr=1e-3).step(). There is no zero_grad() at 43ca0857, so
//          gradients accumulate across calls; that is the benchmarked
//          behaviour and is kept here.
//   Eval:  logits of model(input_ids=ids) under no_grad (seq2seq models also
//          get decoder_input_ids = ids).
// Inputs: randint(0, vocab, (B, L)) ids (and labels of the same shape for
// Train), L the train or eval length of class_models; on the CPU the eval
// length is divided by cpu_input_slice (as the reference does), and the CPU
// tests' ModelConfig::small_inputs caps L at HfTask::small_length.
#ifndef TORCHBENCH_MODELS_NLP_COMMON_HF_LANGUAGE_MODEL_H_
#define TORCHBENCH_MODELS_NLP_COMMON_HF_LANGUAGE_MODEL_H_

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "torchbench/amp.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"

namespace torchbench::hf {

// One model's row of model_factory.py's class_models and cpu_input_slice.
struct HfTask {
  int64_t train_length = 0;  // train_max_length
  int64_t eval_length = 0;   // eval_max_length
  int64_t cpu_input_slice = 1;
  int64_t vocab_size = 0;  // config.vocab_size
  // AutoModelForSeq2SeqLM: Eval also passes decoder_input_ids = input_ids.
  bool seq2seq = false;
  // The length under ModelConfig::small_inputs (CPU tests only).
  int64_t small_length = 32;
};

// The keyword arguments the reference passes; undefined when absent.
struct LmBatch {
  torch::Tensor input_ids;
  torch::Tensor labels;             // Train only.
  torch::Tensor decoder_input_ids;  // Eval of seq2seq models only.
};

// What the reference reads from the network's output.
struct LmOutput {
  torch::Tensor logits;
  torch::Tensor loss;  // Defined when labels were given.
};

// The sequence length the reference uses for `config`.
inline int64_t SequenceLength(const HfTask& task, const ModelConfig& config) {
  int64_t length = task.train_length;
  if (config.mode == Mode::kEval) {
    length = task.eval_length;
    // int(max_length / cpu_input_slice) in the reference.
    if (config.device.is_cpu()) length = length / task.cpu_input_slice;
  }
  if (config.small_inputs) length = std::min(length, task.small_length);
  return length;
}

// The batch the reference builds, drawn from LibTorch's global generator
// (the harness seeds it) on the host and moved to config.device.
inline LmBatch MakeBatch(const HfTask& task, const ModelConfig& config) {
  const int64_t length = SequenceLength(task, config);
  LmBatch batch;
  batch.input_ids = torch::randint(0, task.vocab_size,
                                   {config.batch_size, length}, torch::kLong)
                        .to(config.device);
  if (config.mode == Mode::kTrain) {
    batch.labels = torch::randint(0, task.vocab_size,
                                  {config.batch_size, length}, torch::kLong)
                       .to(config.device);
  } else if (task.seq2seq) {
    batch.decoder_input_ids = batch.input_ids;
  }
  return batch;
}

// The golden checks' recipe shared by the hf_* ports (their adapters in
// tools/golden/adapters/ record the same keys from TorchBench's own
// HuggingFaceModel.eval() and .train() on the same filled weights):
//   eval_output          logits of `net` in eval mode under no_grad for
//                        `eval_batch` (the reference's Eval step);
//   output, loss         logits and loss of `net` in train mode for
//                        `train_batch` (the Train step's forward),
//   grad:<name>          the gradients of `parameters` after its backward,
//   after_1_step:<name>  those parameters after `optimizer`'s step.
// The golden files are made without dropout: the train-mode forward runs
// with every Dropout module in eval mode (TurnOffDropout; the attention
// dropouts follow their module's mode or p), and ports whose attention reads
// p instead zero it first (ZeroDropout in hf_bert_blocks.h). Leaves `net` in
// train mode, its Dropout modules in eval mode.
template <typename Net>
std::map<std::string, torch::Tensor> GoldenLmOutputs(
    Net& net, optim::Adam& optimizer, const LmBatch& eval_batch,
    const LmBatch& train_batch, const std::vector<std::string>& parameters) {
  std::map<std::string, torch::Tensor> out;
  {
    torch::NoGradGuard no_grad;
    net->eval();
    out["eval_output"] = net->forward(eval_batch).logits;
  }
  net->train();
  TurnOffDropout(*net);
  LmOutput train = net->forward(train_batch);
  out["output"] = train.logits.detach();
  out["loss"] = train.loss.detach();
  Backward(train.loss);
  auto named = net->named_parameters();
  for (const std::string& name : parameters) {
    out["grad:" + name] = named[name].grad().clone();
  }
  optimizer.Step();
  for (const std::string& name : parameters) {
    out["after_1_step:" + name] = named[name].detach().clone();
  }
  return out;
}

// `Net` is a TORCH_MODULE holder whose module has
//   LmOutput forward(const LmBatch& batch);
// and holds every parameter and buffer the reference counts (tied weights
// registered once, as Python's parameters() yields them once).
template <typename Net>
class HfLanguageModel : public Model {
 public:
  HfLanguageModel(const ModelConfig& config, const HfTask& task, Net net)
      : mode_(config.mode), task_(task), net_(std::move(net)) {
    net_->to(config.device);
    batch_ = MakeBatch(task, config);
    if (mode_ == Mode::kTrain) {
      net_->train();
      optimizer_ = std::make_unique<optim::Adam>(
          net_->parameters(), optim::AdamOptions{.lr = 1e-3}, config.optimizer);
    } else {
      net_->eval();
    }
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) return net_->forward(batch_).logits;
    LmOutput out = net_->forward(batch_);
    Backward(out.loss);
    optimizer_->Step();  // No ZeroGrad(): the reference has none.
    return out.loss.detach();
  }

  torch::nn::Module& module() override { return *net_; }

 protected:
  Net& net() { return net_; }
  // The inputs Step() runs on (a golden check swaps in filled ones).
  LmBatch& batch() { return batch_; }
  // The Train-mode optimizer (undefined behaviour in Eval mode).
  optim::Adam& optimizer() { return *optimizer_; }

  // The free GoldenLmOutputs above for this Train-mode model on its own
  // network and Adam: ids and labels DeterministicIntegers "input_ids" and
  // "labels" of the model's batch x `length` (decoder_input_ids = input_ids
  // in Eval for seq2seq models).
  std::map<std::string, torch::Tensor> GoldenLmOutputs(
      const std::vector<std::string>& parameters, int64_t length) {
    const int64_t batch_size = batch_.input_ids.size(0);
    const torch::Device device = batch_.input_ids.device();
    LmBatch eval_batch;
    eval_batch.input_ids =
        DeterministicIntegers("input_ids", {batch_size, length}, 0,
                              task_.vocab_size)
            .to(device);
    if (task_.seq2seq) eval_batch.decoder_input_ids = eval_batch.input_ids;
    LmBatch train_batch;
    train_batch.input_ids = eval_batch.input_ids;
    train_batch.labels = DeterministicIntegers("labels", {batch_size, length},
                                               0, task_.vocab_size)
                             .to(device);
    return hf::GoldenLmOutputs(net_, *optimizer_, eval_batch, train_batch,
                               parameters);
  }

 private:
  Mode mode_;
  HfTask task_;
  Net net_;
  LmBatch batch_;
  std::unique_ptr<optim::Adam> optimizer_;
};

}  // namespace torchbench::hf

#endif  // TORCHBENCH_MODELS_NLP_COMMON_HF_LANGUAGE_MODEL_H_
