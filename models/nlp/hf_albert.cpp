// TorchBench's hf_Albert (torchbenchmark/models/hf_Albert/__init__.py at
// 43ca0857): HuggingFaceModel("hf_Albert") with class_models' row
// (512, 512, 'AutoConfig.from_pretrained("albert-base-v2")',
// 'AutoModelForMaskedLM'), random weights, run by nlp/common/
// hf_language_model.h's Train step (Adam lr 1e-3, no zero_grad) and Eval
// step on randint ids of length 512.
//
// The network is pinned transformers's AlbertForMaskedLM
// (models/albert/modeling_albert.py): AlbertEmbeddings at embedding_size
// 128 (word + token type + learned position, LayerNorm, dropout), the
// encoder's embedding_hidden_mapping_in (128 -> 768), then ONE AlbertLayer
// (num_hidden_groups 1, inner_group_num 1) applied 12 times with shared
// weights: SDPA self-attention, dense, output dropout, LayerNorm(x + .);
// ffn, gelu_new (the tanh form), ffn_output, full_layer_layer_norm(. + a)
// (AlbertLayer's own dropout module is never applied in the reference, so it
// is not built); then AlbertMLMHead: dense (768 -> 128), gelu_new,
// LayerNorm, decoder tied to the word embeddings (weight) and to
// predictions.bias (bias). No pooler (add_pooling_layer=False).
//
// Configuration: nothing can be fetched from the hub here, so the values of
// albert-base-v2's public config.json are written out: vocab_size 30000,
// embedding_size 128, hidden_size 768, num_hidden_layers 12,
// num_hidden_groups 1, inner_group_num 1, num_attention_heads 12,
// intermediate_size 3072, hidden_act "gelu_new", hidden_dropout_prob 0,
// attention_probs_dropout_prob 0 (v2 checkpoints train without dropout;
// AlbertConfig's defaults are the same), max_position_embeddings 512,
// type_vocab_size 2, layer_norm_eps 1e-12, initializer_range 0.02,
// pad_token_id 0.
//
// Checked against transformers' own AlbertForMaskedLM driven by TorchBench's
// HuggingFaceModel.train()/eval() (tools/golden/adapters/hf_Albert.py):
// batch 2, length 16, float32 (dropout is 0 in this configuration anyway).
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
namespace hf_albert_model {
namespace {

constexpr int64_t kVocabSize = 30000;
constexpr int64_t kEmbeddingSize = 128;
constexpr int64_t kHiddenSize = 768;
constexpr int64_t kLayers = 12;
constexpr int64_t kHiddenGroups = 1;
constexpr int64_t kInnerGroupLayers = 1;
constexpr int64_t kHeads = 12;
constexpr int64_t kIntermediateSize = 3072;
constexpr hf::HiddenAct kHiddenAct = hf::HiddenAct::kGeluNew;
constexpr double kHiddenDropout = 0.0;
constexpr double kAttentionDropout = 0.0;
constexpr int64_t kMaxPositions = 512;
constexpr int64_t kTypeVocabSize = 2;
constexpr double kLayerNormEps = 1e-12;
constexpr int64_t kPadTokenId = 0;
constexpr double kInitializerRange = 0.02;

constexpr hf::HfTask kTask{
    .train_length = 512, .eval_length = 512, .vocab_size = kVocabSize};

// AlbertLayer: full_layer_layer_norm, attention.{attention_dropout,
// output_dropout, query, key, value, dense, LayerNorm}, ffn, ffn_output.
class AlbertLayerImpl : public torch::nn::Module {
 public:
  AlbertLayerImpl() {
    const int64_t h = kHiddenSize;
    full_layer_layer_norm_ = register_module(
        "full_layer_layer_norm", hf::MakeLayerNorm(h, kLayerNormEps));
    auto attention = hf::Child(*this, "attention");
    attention_dropout_ = attention->register_module(
        "attention_dropout", torch::nn::Dropout(kAttentionDropout));
    output_dropout_ = attention->register_module(
        "output_dropout", torch::nn::Dropout(kHiddenDropout));
    query_ = attention->register_module("query", torch::nn::Linear(h, h));
    key_ = attention->register_module("key", torch::nn::Linear(h, h));
    value_ = attention->register_module("value", torch::nn::Linear(h, h));
    dense_ = attention->register_module("dense", torch::nn::Linear(h, h));
    attention_norm_ = attention->register_module(
        "LayerNorm", hf::MakeLayerNorm(h, kLayerNormEps));
    ffn_ = register_module("ffn", torch::nn::Linear(h, kIntermediateSize));
    ffn_output_ =
        register_module("ffn_output", torch::nn::Linear(kIntermediateSize, h));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor context =
        hf::SelfAttention(x, query_, key_, value_, kHeads, torch::Tensor(),
                          attention_dropout_, is_training());
    const torch::Tensor a =
        attention_norm_(x + output_dropout_(dense_(context)));
    return full_layer_layer_norm_(
        ffn_output_(hf::Activate(ffn_(a), kHiddenAct)) + a);
  }

 private:
  torch::nn::LayerNorm full_layer_layer_norm_{nullptr};
  torch::nn::Dropout attention_dropout_{nullptr};
  torch::nn::Dropout output_dropout_{nullptr};
  torch::nn::Linear query_{nullptr}, key_{nullptr}, value_{nullptr};
  torch::nn::Linear dense_{nullptr};
  torch::nn::LayerNorm attention_norm_{nullptr};
  torch::nn::Linear ffn_{nullptr}, ffn_output_{nullptr};
};
TORCH_MODULE(AlbertLayer);

class AlbertForMaskedLMImpl : public torch::nn::Module {
 public:
  AlbertForMaskedLMImpl() {
    auto albert = hf::Child(*this, "albert");
    embeddings_ = albert->register_module(
        "embeddings",
        hf::Embeddings(hf::EmbeddingsOptions{.vocab_size = kVocabSize,
                                             .dim = kEmbeddingSize,
                                             .max_positions = kMaxPositions,
                                             .type_vocab_size = kTypeVocabSize,
                                             .pad_token_id = kPadTokenId,
                                             .layer_norm_eps = kLayerNormEps,
                                             .dropout = kHiddenDropout}));
    auto encoder = hf::Child(*albert, "encoder");
    mapping_in_ = encoder->register_module(
        "embedding_hidden_mapping_in",
        torch::nn::Linear(kEmbeddingSize, kHiddenSize));
    auto groups = encoder->register_module("albert_layer_groups",
                                           torch::nn::ModuleList());
    for (int64_t g = 0; g < kHiddenGroups; ++g) {
      // AlbertLayerGroup: albert_layers, applied in order.
      auto group = std::make_shared<torch::nn::Module>();
      auto layers =
          group->register_module("albert_layers", torch::nn::ModuleList());
      for (int64_t i = 0; i < kInnerGroupLayers; ++i) {
        layers->push_back(AlbertLayer());
      }
      groups->push_back(group);
      group_layers_.push_back(layers);
    }
    auto predictions = hf::Child(*this, "predictions");
    decoder_bias_ =
        predictions->register_parameter("bias", torch::zeros({kVocabSize}));
    head_norm_ = predictions->register_module(
        "LayerNorm", hf::MakeLayerNorm(kEmbeddingSize, kLayerNormEps));
    head_dense_ = predictions->register_module(
        "dense", torch::nn::Linear(kHiddenSize, kEmbeddingSize));
    hf::InitWeights(*this, kInitializerRange);
  }

  hf::LmOutput forward(const hf::LmBatch& batch) {
    torch::Tensor x = mapping_in_(embeddings_(batch.input_ids));
    for (int64_t i = 0; i < kLayers; ++i) {
      // group_idx = int(i / (num_hidden_layers / num_hidden_groups)).
      const auto group = static_cast<size_t>(
          static_cast<double>(i) /
          (static_cast<double>(kLayers) / static_cast<double>(kHiddenGroups)));
      for (const auto& layer : *group_layers_[group]) {
        x = layer->as<AlbertLayerImpl>()->forward(x);
      }
    }
    hf::LmOutput out;
    out.logits =
        hf::MlmLogits(x, head_dense_, kHiddenAct, head_norm_,
                      embeddings_->word_embeddings->weight, decoder_bias_);
    if (batch.labels.defined()) {
      out.loss = hf::MlmLoss(out.logits, batch.labels);
    }
    return out;
  }

 private:
  hf::Embeddings embeddings_{nullptr};
  torch::nn::Linear mapping_in_{nullptr};
  std::vector<torch::nn::ModuleList> group_layers_;
  torch::Tensor decoder_bias_;
  torch::nn::LayerNorm head_norm_{nullptr};
  torch::nn::Linear head_dense_{nullptr};
};
TORCH_MODULE(AlbertForMaskedLM);

using AlbertModel = hf::MaskedLmModel<AlbertForMaskedLM>;

std::unique_ptr<Model> Make(const ModelConfig& config) {
  return std::make_unique<AlbertModel>(
      config, kTask, AlbertForMaskedLM(),
      std::vector<std::string>{
          "albert.embeddings.word_embeddings.weight",
          "albert.encoder.embedding_hidden_mapping_in.weight",
          "albert.encoder.albert_layer_groups.0.albert_layers.0."
          "attention.query.weight",
          "predictions.dense.weight", "predictions.bias"});
}

}  // namespace

// In the venv (pinned torch, pinned transformers), with the AlbertConfig
// values above: m = AutoModelForMaskedLM.from_config(config)
//   sum(p.numel() for p in m.parameters())  # decoder tied
//   sum(b.numel() for b in m.buffers())     # position_ids and
//                                           # token_type_ids, 1 x 512 each
TORCHBENCH_REGISTER_MODEL(
    HuggingFaceSpec(
        {.name = "hf_Albert",
         .reference =
             "transformers 5.24.0 AlbertForMaskedLM (albert-base-v2 config)",
         .train_batch_size = 8,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 1,   // DEFAULT_EVAL_BSIZE
         .reference_parameters = 11221680,
         .reference_buffers = 1024,
         .checks = {.golden_file = "hf_Albert.golden"}}),
    Make);

}  // namespace hf_albert_model
}  // namespace torchbench
