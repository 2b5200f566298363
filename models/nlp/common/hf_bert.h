// pinned transformers's BertForMaskedLM (models/bert/modeling_bert.py) as
// AutoModelForMaskedLM.from_config(BertConfig(...)) builds it, with the
// options TorchBench's hf_Bert and hf_Bert_large pass (BertConfig values
// below). Both are registered in models/nlp/hf_bert.cpp.
//
// What from_config builds for a BertConfig: BertModel without pooler
// (add_pooling_layer=False) = BertEmbeddings + num_hidden_layers post-norm
// BertLayers (self-attention through SDPA, the default _attn_implementation
// "sdpa", no attention mask when none is given; erf GELU; LayerNorm eps
// 1e-12; hidden and attention-probability dropout 0.1) + BertOnlyMLMHead
// (dense, GELU, LayerNorm, decoder tied to the word embeddings, decoder
// bias tied to cls.predictions.bias); loss CrossEntropyLoss over the
// vocabulary. chunk_size_feed_forward is 0 (no chunking).
#ifndef TORCHBENCH_MODELS_NLP_COMMON_HF_BERT_H_
#define TORCHBENCH_MODELS_NLP_COMMON_HF_BERT_H_

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

#include "nlp/common/hf_bert_blocks.h"
#include "nlp/common/hf_language_model.h"

namespace torchbench::hf {

// The BertConfig fields the network reads; defaults are BertConfig()'s
// (pinned transformers configuration_bert.py), which are bert-base-uncased.
struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  HiddenAct hidden_act = HiddenAct::kGelu;  // "gelu"
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double layer_norm_eps = 1e-12;
  int64_t pad_token_id = 0;
  double initializer_range = 0.02;
};

// BertLayer: attention.{self.{query,key,value,dropout},
// output.{dense,LayerNorm,dropout}}, intermediate.dense,
// output.{dense,LayerNorm,dropout}.
class BertLayerImpl : public torch::nn::Module {
 public:
  explicit BertLayerImpl(const BertConfig& c) : heads_(c.num_attention_heads) {
    const int64_t h = c.hidden_size;
    auto attention = Child(*this, "attention");
    auto self = Child(*attention, "self");
    query_ = self->register_module("query", torch::nn::Linear(h, h));
    key_ = self->register_module("key", torch::nn::Linear(h, h));
    value_ = self->register_module("value", torch::nn::Linear(h, h));
    attention_dropout_ = self->register_module(
        "dropout", torch::nn::Dropout(c.attention_probs_dropout_prob));
    outputs_ =
        BertLayerOutputs(*this, *attention, h, c.intermediate_size,
                         c.layer_norm_eps, c.hidden_dropout_prob, c.hidden_act);
  }

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
    return outputs_.forward(SelfAttention(x, query_, key_, value_, heads_, mask,
                                          attention_dropout_, is_training()),
                            x);
  }

 private:
  int64_t heads_;
  torch::nn::Linear query_{nullptr}, key_{nullptr}, value_{nullptr};
  torch::nn::Dropout attention_dropout_{nullptr};
  BertLayerOutputs outputs_;
};
TORCH_MODULE(BertLayer);

// BertForMaskedLM: bert.{embeddings, encoder.layer.<i>} and
// cls.predictions.{bias, transform.{dense, LayerNorm}}; the decoder's
// weight and bias are the tied word embeddings and cls.predictions.bias,
// registered once (where Python's parameters() yields them).
class BertForMaskedLMImpl : public torch::nn::Module {
 public:
  explicit BertForMaskedLMImpl(const BertConfig& c) : act_(c.hidden_act) {
    auto bert = Child(*this, "bert");
    embeddings_ = bert->register_module(
        "embeddings",
        Embeddings(EmbeddingsOptions{.vocab_size = c.vocab_size,
                                     .dim = c.hidden_size,
                                     .max_positions = c.max_position_embeddings,
                                     .type_vocab_size = c.type_vocab_size,
                                     .pad_token_id = c.pad_token_id,
                                     .layer_norm_eps = c.layer_norm_eps,
                                     .dropout = c.hidden_dropout_prob}));
    layers_ = Child(*bert, "encoder")
                  ->register_module("layer", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
      layers_->push_back(BertLayer(c));
    }
    auto predictions = Child(*Child(*this, "cls"), "predictions");
    // Registered before the transform: Python lists a module's own
    // parameters before its children's.
    decoder_bias_ =
        predictions->register_parameter("bias", torch::zeros({c.vocab_size}));
    auto transform = Child(*predictions, "transform");
    transform_dense_ = transform->register_module(
        "dense", torch::nn::Linear(c.hidden_size, c.hidden_size));
    transform_norm_ = transform->register_module(
        "LayerNorm", MakeLayerNorm(c.hidden_size, c.layer_norm_eps));
    InitWeights(*this, c.initializer_range);
  }

  LmOutput forward(const LmBatch& batch) {
    torch::Tensor x = embeddings_(batch.input_ids);
    for (const auto& layer : *layers_) {
      x = layer->as<BertLayerImpl>()->forward(x, torch::Tensor());
    }
    LmOutput out;
    out.logits = MlmLogits(x, transform_dense_, act_, transform_norm_,
                           embeddings_->word_embeddings->weight, decoder_bias_);
    if (batch.labels.defined()) out.loss = MlmLoss(out.logits, batch.labels);
    return out;
  }

 private:
  HiddenAct act_;
  Embeddings embeddings_{nullptr};
  torch::nn::ModuleList layers_{nullptr};
  torch::Tensor decoder_bias_;
  torch::nn::Linear transform_dense_{nullptr};
  torch::nn::LayerNorm transform_norm_{nullptr};
};
TORCH_MODULE(BertForMaskedLM);

// The parameters whose gradients and updated values the golden files hold:
// the tied embedding (gradient from lookup and decoder), the first query
// projection, the head's transform and its decoder bias.
inline std::vector<std::string> BertGoldenParameters() {
  return {"bert.embeddings.word_embeddings.weight",
          "bert.encoder.layer.0.attention.self.query.weight",
          "cls.predictions.transform.dense.weight", "cls.predictions.bias"};
}

}  // namespace torchbench::hf

#endif  // TORCHBENCH_MODELS_NLP_COMMON_HF_BERT_H_
