// fastNLP 0.6.0's BERT encoder (fastNLP/modules/encoder/bert.py: BertModel
// and its parts), sized by TorchBench's fastNLP_Bert/bert_config.json, for
// models/nlp/fastnlp_bert.cpp. Module and parameter names are fastNLP's
// ("embeddings.LayerNorm", "encoder.layer.0.attention.self.query", ...).
#ifndef TORCHBENCH_MODELS_NLP_FASTNLP_BERT_ENCODER_H_
#define TORCHBENCH_MODELS_NLP_FASTNLP_BERT_ENCODER_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cmath>
#include <memory>

namespace torchbench::fastnlp_bert {

// fastNLP_Bert/bert_config.json (BertConfig defaults fill layer_norm_eps).
inline constexpr int64_t kHidden = 768;
inline constexpr int64_t kLayers = 12;
inline constexpr int64_t kHeads = 12;
inline constexpr int64_t kIntermediate = 3072;
inline constexpr int64_t kBertVocab = 21128;
inline constexpr int64_t kMaxPositions = 512;
inline constexpr int64_t kTypeVocab = 2;
inline constexpr double kHiddenDropout = 0.1;
inline constexpr double kAttentionDropout = 0.1;
inline constexpr double kLayerNormEps = 1e-12;
inline constexpr double kInitializerRange = 0.02;

inline torch::nn::LayerNorm MakeLayerNorm() {
  return torch::nn::LayerNorm(
      torch::nn::LayerNormOptions({kHidden}).eps(kLayerNormEps));
}

// modules/encoder/bert.py BertEmbeddings.
class BertEmbeddingsImpl : public torch::nn::Module {
 public:
  BertEmbeddingsImpl()
      : word_embeddings(register_module(
            "word_embeddings", torch::nn::Embedding(torch::nn::EmbeddingOptions(
                                                        kBertVocab, kHidden)
                                                        .padding_idx(0)))),
        position_embeddings(
            register_module("position_embeddings",
                            torch::nn::Embedding(kMaxPositions, kHidden))),
        token_type_embeddings(
            register_module("token_type_embeddings",
                            torch::nn::Embedding(kTypeVocab, kHidden))),
        layer_norm(register_module("LayerNorm", MakeLayerNorm())),
        dropout(
            register_module("dropout", torch::nn::Dropout(kHiddenDropout))) {}

  torch::Tensor forward(const torch::Tensor& input_ids,
                        const torch::Tensor& token_type_ids) {
    const torch::Tensor position_ids =
        torch::arange(input_ids.size(1), input_ids.options())
            .unsqueeze(0)
            .expand_as(input_ids);
    return dropout(layer_norm(word_embeddings(input_ids) +
                              position_embeddings(position_ids) +
                              token_type_embeddings(token_type_ids)));
  }

  torch::nn::Embedding word_embeddings;
  torch::nn::Embedding position_embeddings;
  torch::nn::Embedding token_type_embeddings;
  torch::nn::LayerNorm layer_norm;  // "LayerNorm" in the reference.
  torch::nn::Dropout dropout;
};
TORCH_MODULE(BertEmbeddings);

// BertSelfAttention: explicit matmul / sqrt(d) + additive mask, softmax,
// dropout on the probabilities.
class BertSelfAttentionImpl : public torch::nn::Module {
 public:
  BertSelfAttentionImpl()
      : query(register_module("query", torch::nn::Linear(kHidden, kHidden))),
        key(register_module("key", torch::nn::Linear(kHidden, kHidden))),
        value(register_module("value", torch::nn::Linear(kHidden, kHidden))),
        dropout(register_module("dropout",
                                torch::nn::Dropout(kAttentionDropout))) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
    const int64_t head_size = kHidden / kHeads;
    auto heads = [&](const torch::Tensor& t) {
      return t.view({t.size(0), t.size(1), kHeads, head_size})
          .permute({0, 2, 1, 3});
    };
    const torch::Tensor q = heads(query(x));
    const torch::Tensor k = heads(key(x));
    const torch::Tensor v = heads(value(x));
    torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2)) /
                           std::sqrt(static_cast<double>(head_size));
    scores = scores + mask;
    const torch::Tensor probs = dropout(torch::softmax(scores, -1));
    torch::Tensor context =
        torch::matmul(probs, v).permute({0, 2, 1, 3}).contiguous();
    return context.view({context.size(0), context.size(1), kHidden});
  }

  torch::nn::Linear query;
  torch::nn::Linear key;
  torch::nn::Linear value;
  torch::nn::Dropout dropout;
};
TORCH_MODULE(BertSelfAttention);

// BertSelfOutput and BertOutput: dense, dropout, LayerNorm(h + residual).
class BertResidualOutputImpl : public torch::nn::Module {
 public:
  explicit BertResidualOutputImpl(int64_t in_features)
      : dense(
            register_module("dense", torch::nn::Linear(in_features, kHidden))),
        layer_norm(register_module("LayerNorm", MakeLayerNorm())),
        dropout(
            register_module("dropout", torch::nn::Dropout(kHiddenDropout))) {}

  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& residual) {
    return layer_norm(dropout(dense(h)) + residual);
  }

  torch::nn::Linear dense;
  torch::nn::LayerNorm layer_norm;  // "LayerNorm" in the reference.
  torch::nn::Dropout dropout;
};
TORCH_MODULE(BertResidualOutput);

class BertAttentionImpl : public torch::nn::Module {
 public:
  BertAttentionImpl()
      : self(register_module("self", BertSelfAttention())),
        output(register_module("output", BertResidualOutput(kHidden))) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
    return output(self(x, mask), x);
  }

  BertSelfAttention self;
  BertResidualOutput output;
};
TORCH_MODULE(BertAttention);

class BertIntermediateImpl : public torch::nn::Module {
 public:
  BertIntermediateImpl()
      : dense(register_module("dense",
                              torch::nn::Linear(kHidden, kIntermediate))) {}

  // fastNLP's gelu: x * 0.5 * (1 + erf(x / sqrt(2))), written out.
  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor h = dense(x);
    return h * 0.5 * (1.0 + torch::erf(h / std::sqrt(2.0)));
  }

  torch::nn::Linear dense;
};
TORCH_MODULE(BertIntermediate);

class BertLayerImpl : public torch::nn::Module {
 public:
  BertLayerImpl()
      : attention(register_module("attention", BertAttention())),
        intermediate(register_module("intermediate", BertIntermediate())),
        output(register_module("output", BertResidualOutput(kIntermediate))) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
    const torch::Tensor attended = attention(x, mask);
    return output(intermediate(attended), attended);
  }

  BertAttention attention;
  BertIntermediate intermediate;
  BertResidualOutput output;
};
TORCH_MODULE(BertLayer);

// BertModel (embeddings, encoder.layer.*, pooler.dense), with
// init_bert_weights. Returns the last layer's output; the pooler runs as in
// the reference, though BertEmbedding (include_cls_sep False) discards it.
class BertModelImpl : public torch::nn::Module {
 public:
  BertModelImpl()
      : embeddings(register_module("embeddings", BertEmbeddings())) {
    auto encoder = register_module("encoder", std::make_shared<Module>());
    layers_ = encoder->register_module("layer", torch::nn::ModuleList());
    for (int64_t i = 0; i < kLayers; ++i) layers_->push_back(BertLayer());
    auto pooler = register_module("pooler", std::make_shared<Module>());
    pooler_dense_ =
        pooler->register_module("dense", torch::nn::Linear(kHidden, kHidden));
    InitBertWeights();
  }

  torch::Tensor forward(const torch::Tensor& input_ids,
                        const torch::Tensor& token_type_ids,
                        const torch::Tensor& attention_mask) {
    // In the parameters' dtype ("fp16 compatibility" in the reference).
    const torch::Tensor extended =
        (1.0 - attention_mask.unsqueeze(1).unsqueeze(2).to(
                   pooler_dense_->weight.scalar_type())) *
        -10000.0;
    torch::Tensor h = embeddings(input_ids, token_type_ids);
    for (const auto& layer : *layers_) {
      h = layer->as<BertLayerImpl>()->forward(h, extended);
    }
    torch::tanh(pooler_dense_(h.select(1, 0)));
    return h;
  }

  BertEmbeddings embeddings;

 private:
  void InitBertWeights() {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* linear = m->as<torch::nn::Linear>()) {
        linear->weight.normal_(0.0, kInitializerRange);
        linear->bias.zero_();
      } else if (auto* embedding = m->as<torch::nn::Embedding>()) {
        embedding->weight.normal_(0.0, kInitializerRange);
      }
    }
  }

  torch::nn::ModuleList layers_{nullptr};
  torch::nn::Linear pooler_dense_{nullptr};
};
TORCH_MODULE(BertModel);

}  // namespace torchbench::fastnlp_bert

#endif  // TORCHBENCH_MODELS_NLP_FASTNLP_BERT_ENCODER_H_
