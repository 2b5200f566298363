// TorchBench's hf_Bart (torchbenchmark/models/hf_Bart/__init__.py and
// util/framework/huggingface/model_factory.py at 43ca0857):
// AutoModelForSeq2SeqLM.from_config(AutoConfig.from_pretrained(
// "facebook/bart-base")), i.e. pinned transformers's
// BartForConditionalGeneration (models/bart/modeling_bart.py), trained with
// Adam (lr 1e-3, no zero_grad) on random input_ids and labels of length 512
// (decoder_input_ids = shift_tokens_right(labels, pad 1, start 2) inside the
// model) and evaluated on length 512 with decoder_input_ids = input_ids.
//
// Configuration (the public facebook/bart-base config.json; the rest are
// BartConfig defaults): vocab_size 50265, d_model 768, 6 encoder and 6
// decoder layers of 12 heads, FFN 3072, max_position_embeddings 1024, erf
// GELU, dropout / attention_dropout / activation_dropout 0.1,
// scale_embedding False, pad 1, decoder_start 2, LayerNorm eps 1e-5
// (nn.LayerNorm's default), tie_word_embeddings True.
//
// Network: a shared token embedding (padding_idx 1: no gradient reaches
// row 1 through the lookups) used by encoder, decoder and the tied lm_head;
// learned positions looked up at position + 2 (offset 2, table of 1026
// rows); layernorm_embedding on token + position embeddings; post-norm
// layers; the encoder's self-attention is unmasked (no attention_mask is
// passed), the decoder's self-attention causal, its cross-attention
// unmasked; all attention through scaled_dot_product_attention (the default
// "sdpa" implementation), scaled by head_dim^-0.5. logits = lm_head(h) +
// final_logits_bias (a 1 x 50265 zero buffer); the loss is
// CrossEntropyLoss over the logits (no upcast, no shift).
//
// Where the port differs from the reference, and why:
//  * Weights are random (as from_config's), from LibTorch's stream.
//  * TorchBench at 43ca0857 ran transformers 4.20.1 (eager attention); the
//    reference here is the pinned transformers (sdpa).
//  * The CPU smoke and precision tests (ModelConfig::small_inputs) cut the
//    length to HfTask::small_length (32).
//
// Checked against transformers' own BartForConditionalGeneration through
// TorchBench's HuggingFaceModel.train()/eval() (tools/golden/adapters/
// hf_Bart.py) at batch 2, length 16, dropout off.
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "common/families.h"
#include "nlp/common/hf_language_model.h"
#include "nlp/common/hf_layers.h"
#include "torchbench/checks.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace hf_bart_model {
namespace {

constexpr int64_t kVocab = 50265;
constexpr int64_t kDModel = 768;
constexpr int64_t kLayers = 6;  // encoder_layers = decoder_layers
constexpr int64_t kHeads = 12;  // encoder/decoder_attention_heads
constexpr int64_t kFfn = 3072;  // encoder/decoder_ffn_dim
constexpr int64_t kMaxPositions = 1024;
constexpr int64_t kPositionOffset = 2;  // BartLearnedPositionalEmbedding
constexpr int64_t kPad = 1;
constexpr int64_t kDecoderStart = 2;
constexpr double kDropout = 0.1;  // dropout, attention_dropout and
                                  // activation_dropout alike
constexpr double kInitStd = 0.02;

// class_models["hf_Bart"].
constexpr hf::HfTask kTask{.train_length = 512,
                           .eval_length = 512,
                           .vocab_size = kVocab,
                           .seq2seq = true};

constexpr int64_t kGoldenLength = 16;

torch::nn::Linear MakeLinear(int64_t in, int64_t out) {
  torch::nn::Linear linear(in, out);
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(linear->weight, 0.0, kInitStd);
  torch::nn::init::zeros_(linear->bias);
  return linear;
}

torch::nn::LayerNorm MakeLayerNorm() {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({kDModel}));
}

// BartAttention: self-attention when `kv` is undefined, else
// cross-attention on `kv`.
class BartAttentionImpl : public torch::nn::Module {
 public:
  explicit BartAttentionImpl(bool causal)
      : k_proj_(register_module("k_proj", MakeLinear(kDModel, kDModel))),
        v_proj_(register_module("v_proj", MakeLinear(kDModel, kDModel))),
        q_proj_(register_module("q_proj", MakeLinear(kDModel, kDModel))),
        out_proj_(register_module("out_proj", MakeLinear(kDModel, kDModel))),
        // Parameterless: the attention dropout follows its mode, so turning
        // dropout off (golden checks) reaches it.
        dropout_(register_module("attn_dropout", torch::nn::Dropout(kDropout))),
        causal_(causal) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& kv = {}) {
    const torch::Tensor& source = kv.defined() ? kv : x;
    torch::Tensor out =
        hf::Attend(hf::SplitHeads(q_proj_(x), kHeads),
                   hf::SplitHeads(k_proj_(source), kHeads),
                   hf::SplitHeads(v_proj_(source), kHeads), {}, causal_,
                   dropout_->is_training() ? kDropout : 0.0,
                   1.0 / std::sqrt(static_cast<double>(kDModel / kHeads)));
    return out_proj_(hf::MergeHeads(out));
  }

 private:
  torch::nn::Linear k_proj_;
  torch::nn::Linear v_proj_;
  torch::nn::Linear q_proj_;
  torch::nn::Linear out_proj_;
  torch::nn::Dropout dropout_;
  bool causal_;
};
TORCH_MODULE(BartAttention);

// BartEncoderLayer (cross-attention absent) and BartDecoderLayer.
class BartLayerImpl : public torch::nn::Module {
 public:
  explicit BartLayerImpl(bool decoder)
      : self_attn_(register_module("self_attn", BartAttention(decoder))),
        self_attn_layer_norm_(
            register_module("self_attn_layer_norm", MakeLayerNorm())),
        encoder_attn_(
            decoder ? register_module("encoder_attn", BartAttention(false))
                    : BartAttention(nullptr)),
        encoder_attn_layer_norm_(
            decoder
                ? register_module("encoder_attn_layer_norm", MakeLayerNorm())
                : torch::nn::LayerNorm(nullptr)),
        fc1_(register_module("fc1", MakeLinear(kDModel, kFfn))),
        fc2_(register_module("fc2", MakeLinear(kFfn, kDModel))),
        final_layer_norm_(register_module("final_layer_norm", MakeLayerNorm())),
        dropout_(register_module("dropout", torch::nn::Dropout(kDropout))),
        activation_dropout_(register_module("activation_dropout",
                                            torch::nn::Dropout(kDropout))) {}

  torch::Tensor forward(torch::Tensor x, const torch::Tensor& encoder = {}) {
    x = self_attn_layer_norm_(x + dropout_(self_attn_(x)));
    if (encoder_attn_) {
      x = encoder_attn_layer_norm_(x + dropout_(encoder_attn_(x, encoder)));
    }
    torch::Tensor h = activation_dropout_(torch::gelu(fc1_(x)));
    return final_layer_norm_(x + dropout_(fc2_(h)));
  }

 private:
  BartAttention self_attn_;
  torch::nn::LayerNorm self_attn_layer_norm_;
  BartAttention encoder_attn_;                    // Decoder only.
  torch::nn::LayerNorm encoder_attn_layer_norm_;  // Decoder only.
  torch::nn::Linear fc1_;
  torch::nn::Linear fc2_;
  torch::nn::LayerNorm final_layer_norm_;
  torch::nn::Dropout dropout_;
  torch::nn::Dropout activation_dropout_;
};
TORCH_MODULE(BartLayer);

// BartEncoder / BartDecoder without their embed_tokens (the shared
// embedding, which Python's parameters() yields once, as model.shared).
class BartStackImpl : public torch::nn::Module {
 public:
  explicit BartStackImpl(bool decoder)
      : embed_positions_(register_module(
            "embed_positions",
            torch::nn::Embedding(kMaxPositions + kPositionOffset, kDModel))),
        layers_(register_module("layers", torch::nn::ModuleList())),
        layernorm_embedding_(
            register_module("layernorm_embedding", MakeLayerNorm())),
        dropout_(register_module("dropout", torch::nn::Dropout(kDropout))) {
    for (int64_t i = 0; i < kLayers; ++i)
      layers_->push_back(BartLayer(decoder));
    torch::NoGradGuard no_grad;
    torch::nn::init::normal_(embed_positions_->weight, 0.0, kInitStd);
  }

  // `embedded`: the token embeddings (embed_scale 1.0).
  torch::Tensor forward(const torch::Tensor& embedded,
                        const torch::Tensor& encoder = {}) {
    torch::Tensor positions = torch::arange(
        kPositionOffset, kPositionOffset + embedded.size(1),
        torch::TensorOptions(torch::kLong).device(embedded.device()));
    torch::Tensor x = dropout_(layernorm_embedding_(
        embedded + embed_positions_(positions).unsqueeze(0)));
    for (const auto& layer : *layers_) {
      x = layer->as<BartLayer>()->forward(x, encoder);
    }
    return x;
  }

 private:
  torch::nn::Embedding embed_positions_;
  torch::nn::ModuleList layers_;
  torch::nn::LayerNorm layernorm_embedding_;
  torch::nn::Dropout dropout_;
};
TORCH_MODULE(BartStack);

// BartModel.
class BartModelImpl : public torch::nn::Module {
 public:
  BartModelImpl()
      : shared(register_module(
            "shared",
            torch::nn::Embedding(torch::nn::EmbeddingOptions(kVocab, kDModel)
                                     .padding_idx(kPad)))),
        encoder_(register_module("encoder", BartStack(false))),
        decoder_(register_module("decoder", BartStack(true))) {
    torch::NoGradGuard no_grad;
    torch::nn::init::normal_(shared->weight, 0.0, kInitStd);
    shared->weight[kPad].zero_();
  }

  torch::Tensor forward(const torch::Tensor& input_ids,
                        const torch::Tensor& decoder_input_ids) {
    torch::Tensor encoded = encoder_(shared(input_ids));
    return decoder_(shared(decoder_input_ids), encoded);
  }

  torch::nn::Embedding shared;

 private:
  BartStack encoder_;
  BartStack decoder_;
};
TORCH_MODULE(BartModel);

// BartForConditionalGeneration.
class BartForConditionalGenerationImpl : public torch::nn::Module {
 public:
  BartForConditionalGenerationImpl()
      : model_(register_module("model", BartModel())),
        final_logits_bias_(
            register_buffer("final_logits_bias", torch::zeros({1, kVocab}))) {}

  hf::LmOutput forward(const hf::LmBatch& batch) {
    torch::Tensor decoder_input_ids =
        batch.labels.defined()
            ? hf::ShiftTokensRight(batch.labels, kPad, kDecoderStart)
            : batch.decoder_input_ids;
    hf::LmOutput out;
    out.logits = torch::linear(model_(batch.input_ids, decoder_input_ids),
                               model_->shared->weight) +
                 final_logits_bias_;
    if (batch.labels.defined()) {
      out.loss = hf::Seq2SeqLmLoss(out.logits, batch.labels);
    }
    return out;
  }

 private:
  BartModel model_;
  torch::Tensor final_logits_bias_;
};
TORCH_MODULE(BartForConditionalGeneration);

class HfBart : public hf::HfLanguageModel<BartForConditionalGeneration>,
               public GoldenCheck {
 public:
  explicit HfBart(const ModelConfig& config)
      : HfLanguageModel(config, kTask, BartForConditionalGeneration()) {}

  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    return GoldenLmOutputs(
        {"model.shared.weight", "model.encoder.embed_positions.weight",
         "model.encoder.layers.0.self_attn.q_proj.weight",
         "model.decoder.layers.5.encoder_attn.k_proj.weight",
         "model.decoder.layers.5.fc2.weight",
         "model.decoder.layernorm_embedding.weight"},
        kGoldenLength);
  }
};

}  // namespace

// pinned transformers in the venv: m = AutoModelForSeq2SeqLM.from_config(
// BartConfig(<the values above>)) (tools/golden/adapters/hf_Bart.py's
// config(0.1)); sum(p.numel() for p in m.parameters()) (shared 38603520 tied
// with both embed_tokens and lm_head, two position tables of 1026 x 768, 6
// encoder layers of 7087872, 6 decoder layers of 9451776, two
// layernorm_embedding of 1536); m.buffers() is final_logits_bias.
TORCHBENCH_REGISTER_MODEL(
    HuggingFaceSpec({.name = "hf_Bart",
                     .reference = "transformers BartForConditionalGeneration "
                                  "(facebook/bart-base config)",
                     .train_batch_size = 4,  // DEFAULT_TRAIN_BSIZE
                     .eval_batch_size = 1,   // DEFAULT_EVAL_BSIZE
                     .reference_parameters = 139420416,
                     .reference_buffers = 50265,
                     .checks = {.golden_file = "hf_Bart.golden",
                                .test_batch_size = 1}}),
    MakeModel<HfBart>());

}  // namespace hf_bart_model
}  // namespace torchbench
