// TorchBench's hf_DistilBert (torchbenchmark/models/hf_DistilBert/
// __init__.py at 43ca0857): HuggingFaceModel("hf_DistilBert") with
// class_models' row (512, 512, 'AutoConfig.from_pretrained(
// "distilbert-base-uncased")', 'AutoModelForMaskedLM'), random weights,
// run by nlp/common/hf_language_model.h's Train step (Adam lr 1e-3, no
// zero_grad) and Eval step on randint ids of length 512.
//
// The network is pinned transformers's DistilBertForMaskedLM
// (models/distilbert/modeling_distilbert.py): Embeddings (word + learned
// position, no token types, LayerNorm eps 1e-12, dropout), 6
// TransformerBlocks (SDPA self-attention with attention dropout and no
// dropout after out_lin; sa_layer_norm; FFN lin1, erf GELU, lin2, dropout;
// output_layer_norm; both LayerNorms eps 1e-12 fixed in the code), then
// vocab_transform, GELU, vocab_layer_norm and vocab_projector, whose weight
// is tied to the word embeddings and whose bias is its own.
//
// Configuration: nothing can be fetched from the hub here, so the values of
// distilbert-base-uncased's public config.json are written out; they equal
// DistilBertConfig()'s defaults in the pinned transformers:
// vocab_size 30522, max_position_embeddings 512, sinusoidal_pos_embds
// false, n_layers 6, n_heads 12, dim 768, hidden_dim 3072, dropout 0.1,
// attention_dropout 0.1, activation "gelu", initializer_range 0.02,
// pad_token_id 0, tied weights.
//
// Checked against transformers' own DistilBertForMaskedLM driven by
// TorchBench's HuggingFaceModel.train()/eval() (tools/golden/adapters/
// hf_DistilBert.py): batch 2, length 16, dropout off, float32.
//
// Where the port differs from the reference: pinned transformers (SDPA
// attention) rather than TorchBench's pinned 4.20.1 (eager attention, same
// math).
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/families.h"
#include "nlp/common/hf_bert_blocks.h"
#include "nlp/common/hf_language_model.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace hf_distilbert_model {
namespace {

constexpr int64_t kVocabSize = 30522;
constexpr int64_t kMaxPositions = 512;
constexpr int64_t kLayers = 6;
constexpr int64_t kHeads = 12;
constexpr int64_t kDim = 768;
constexpr int64_t kHiddenDim = 3072;
constexpr double kDropout = 0.1;
constexpr double kAttentionDropout = 0.1;
constexpr double kLayerNormEps = 1e-12;
constexpr int64_t kPadTokenId = 0;
constexpr double kInitializerRange = 0.02;
constexpr hf::HiddenAct kActivation = hf::HiddenAct::kGelu;

constexpr hf::HfTask kTask{
    .train_length = 512, .eval_length = 512, .vocab_size = kVocabSize};

// TransformerBlock: attention.{q_lin,k_lin,v_lin,out_lin,dropout},
// sa_layer_norm, ffn.{dropout,lin1,lin2}, output_layer_norm.
class TransformerBlockImpl : public torch::nn::Module {
 public:
  TransformerBlockImpl() {
    auto attention = hf::Child(*this, "attention");
    q_lin_ = attention->register_module("q_lin", torch::nn::Linear(kDim, kDim));
    k_lin_ = attention->register_module("k_lin", torch::nn::Linear(kDim, kDim));
    v_lin_ = attention->register_module("v_lin", torch::nn::Linear(kDim, kDim));
    out_lin_ =
        attention->register_module("out_lin", torch::nn::Linear(kDim, kDim));
    attention_dropout_ = attention->register_module(
        "dropout", torch::nn::Dropout(kAttentionDropout));
    sa_layer_norm_ = register_module("sa_layer_norm",
                                     hf::MakeLayerNorm(kDim, kLayerNormEps));
    auto ffn = hf::Child(*this, "ffn");
    ffn_dropout_ =
        ffn->register_module("dropout", torch::nn::Dropout(kDropout));
    lin1_ = ffn->register_module("lin1", torch::nn::Linear(kDim, kHiddenDim));
    lin2_ = ffn->register_module("lin2", torch::nn::Linear(kHiddenDim, kDim));
    output_layer_norm_ = register_module(
        "output_layer_norm", hf::MakeLayerNorm(kDim, kLayerNormEps));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor context =
        hf::SelfAttention(x, q_lin_, k_lin_, v_lin_, kHeads, torch::Tensor(),
                          attention_dropout_, is_training());
    const torch::Tensor a = sa_layer_norm_(out_lin_(context) + x);
    return output_layer_norm_(
        ffn_dropout_(lin2_(hf::Activate(lin1_(a), kActivation))) + a);
  }

 private:
  torch::nn::Linear q_lin_{nullptr}, k_lin_{nullptr}, v_lin_{nullptr};
  torch::nn::Linear out_lin_{nullptr};
  torch::nn::Dropout attention_dropout_{nullptr};
  torch::nn::LayerNorm sa_layer_norm_{nullptr};
  torch::nn::Dropout ffn_dropout_{nullptr};
  torch::nn::Linear lin1_{nullptr}, lin2_{nullptr};
  torch::nn::LayerNorm output_layer_norm_{nullptr};
};
TORCH_MODULE(TransformerBlock);

class DistilBertForMaskedLMImpl : public torch::nn::Module {
 public:
  DistilBertForMaskedLMImpl() {
    auto distilbert = hf::Child(*this, "distilbert");
    embeddings_ = distilbert->register_module(
        "embeddings",
        hf::Embeddings(hf::EmbeddingsOptions{.vocab_size = kVocabSize,
                                             .dim = kDim,
                                             .max_positions = kMaxPositions,
                                             .type_vocab_size = 0,
                                             .pad_token_id = kPadTokenId,
                                             .layer_norm_eps = kLayerNormEps,
                                             .dropout = kDropout}));
    layers_ = hf::Child(*distilbert, "transformer")
                  ->register_module("layer", torch::nn::ModuleList());
    for (int64_t i = 0; i < kLayers; ++i)
      layers_->push_back(TransformerBlock());
    vocab_transform_ =
        register_module("vocab_transform", torch::nn::Linear(kDim, kDim));
    vocab_layer_norm_ = register_module("vocab_layer_norm",
                                        hf::MakeLayerNorm(kDim, kLayerNormEps));
    // vocab_projector's weight is the word embedding matrix (tied); only
    // its bias is its own parameter.
    vocab_projector_bias_ =
        hf::Child(*this, "vocab_projector")
            ->register_parameter("bias", torch::zeros({kVocabSize}));
    hf::InitWeights(*this, kInitializerRange);
  }

  hf::LmOutput forward(const hf::LmBatch& batch) {
    torch::Tensor x = embeddings_(batch.input_ids);
    for (const auto& layer : *layers_) {
      x = layer->as<TransformerBlockImpl>()->forward(x);
    }
    hf::LmOutput out;
    out.logits = hf::MlmLogits(
        x, vocab_transform_, kActivation, vocab_layer_norm_,
        embeddings_->word_embeddings->weight, vocab_projector_bias_);
    if (batch.labels.defined()) {
      out.loss = hf::MlmLoss(out.logits, batch.labels);
    }
    return out;
  }

 private:
  hf::Embeddings embeddings_{nullptr};
  torch::nn::ModuleList layers_{nullptr};
  torch::nn::Linear vocab_transform_{nullptr};
  torch::nn::LayerNorm vocab_layer_norm_{nullptr};
  torch::Tensor vocab_projector_bias_;
};
TORCH_MODULE(DistilBertForMaskedLM);

using DistilBertModel = hf::MaskedLmModel<DistilBertForMaskedLM>;

std::unique_ptr<Model> Make(const ModelConfig& config) {
  return std::make_unique<DistilBertModel>(
      config, kTask, DistilBertForMaskedLM(),
      std::vector<std::string>{
          "distilbert.embeddings.word_embeddings.weight",
          "distilbert.transformer.layer.0.attention.q_lin.weight",
          "vocab_transform.weight", "vocab_projector.bias"});
}

}  // namespace

// In the venv (pinned torch, pinned transformers):
//   m = AutoModelForMaskedLM.from_config(DistilBertConfig())
//   sum(p.numel() for p in m.parameters())  # projector tied
//   sum(b.numel() for b in m.buffers())     # position_ids, 1 x 512
TORCHBENCH_REGISTER_MODEL(
    HuggingFaceSpec({.name = "hf_DistilBert",
                     .reference = "transformers 5.24.0 DistilBertForMaskedLM "
                                  "(distilbert-base-uncased config)",
                     .train_batch_size = 8,  // DEFAULT_TRAIN_BSIZE
                     .eval_batch_size = 1,   // DEFAULT_EVAL_BSIZE
                     .reference_parameters = 66985530,
                     .reference_buffers = 512,
                     .checks = {.golden_file = "hf_DistilBert.golden"}}),
    Make);

}  // namespace hf_distilbert_model
}  // namespace torchbench
