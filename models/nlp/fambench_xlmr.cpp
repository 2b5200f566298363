// TorchBench's fambench_xlmr (torchbenchmark/models/fambench_xlmr/
// __init__.py at 43ca0857): fairseq 0.12.2's XLM-R large, as
// XLMRModel.from_pretrained("xlmr.large") returns it (a RobertaHubInterface
// around RobertaModel), trained and evaluated through hub.extract_features,
// on FAMBench's generate_dataset inputs (submodule FAMBench at 4f815ecc,
// benchmarks/xlmr/ootb/xlmr.py and xlmr_data.py).
//
// Architecture (fairseq/models/roberta/model.py base_architecture with the
// xlmr.large checkpoint's roberta_large sizes): 24 post-norm transformer
// layers, 1024 wide, 16 heads, FFN 4096 with erf GELU, vocabulary 250002
// (padding index 1), learned positions (514 rows) counted from padding_idx +
// 1 over the non-pad tokens, a LayerNorm on the embeddings
// (layernorm_embedding, what older fairseq called emb_layer_norm), no
// embedding scale, no final encoder LayerNorm (encoder_normalize_before is
// False), dropout 0.1 on embeddings, attention probabilities and residual
// branches, activation dropout 0. The LM head (dense 1024x1024, LayerNorm,
// output bias, projection tied to embed_tokens) is part of the model and of
// the parameter count, but extract_features(features_only=True) never runs
// it, so its parameters get no gradient and SGD leaves them alone, as in the
// reference. The encoder's padding test (has_pads, a device tensor) is read
// back by each of its `if`s, once before the layers and once per layer.
//
// Names are fairseq's state_dict names under the hub interface
// ("model.encoder.sentence_encoder.layers.0.self_attn.q_proj.weight", ...).
//
// Where the port differs from the reference, and why:
//  * Weights: the reference downloads the pretrained xlmr.large checkpoint;
//    nothing can be downloaded here, so the weights are fairseq's own
//    init_bert_params (normal(0, 0.02), zero biases and padding rows).
//    Step times do not depend on weight values.
//  * Eval kernels: on torch >= 1.12 fairseq's encoder takes the
//    BetterTransformer fast path in eval mode (torch's fused
//    _transformer_encoder_layer_fwd, and nested tensors when a row has
//    padding). This port runs the same math as unfused ops (the training
//    path's); the outputs agree to rounding, except that the nested-tensor
//    path returns zeros at padding positions where this port returns the
//    layer output. Padding (token 1) has probability 1/250000 per token in
//    FAMBench's data.
//  * TorchBench's eval default on CPU is 4 (metadata.yaml devices: cpu:
//    eval_batch_size 4, applied by BenchmarkModel.determine_batch_size when
//    no batch is given). ModelSpec has no per-device default, so the spec
//    keeps the device-independent 96; ask for batch 4 on CPU to match.
//
// Checked against transformers' XLMRobertaModel built with the same
// configuration and run through TorchBench's own Model.train()/eval()
// (tools/golden/adapters/fambench_xlmr.py explains the name mapping and why
// it is the same network). The check runs in float64: on filled weights the
// features come out nearly equal across positions, so the soft-target
// loss's gradient is a difference of near-equal terms, and float32 rounding
// alone moves the compared gradients by up to 5e-3 (forward and loss agree
// to 4e-7 in float32).
#include <ATen/ops/scaled_dot_product_attention.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace fambench_xlmr_model {
namespace {

constexpr int64_t kEmbedDim = 1024;
constexpr int64_t kLayers = 24;
constexpr int64_t kHeads = 16;
constexpr int64_t kFfnDim = 4096;
constexpr int64_t kDictionarySize = 250002;  // xlmr.large's dict + specials.
constexpr int64_t kPaddingIdx = 1;           // dictionary.pad()
constexpr int64_t kMaxPositions = 512;
constexpr double kDropout = 0.1;
constexpr double kLayerNormEps = 1e-5;  // fairseq LayerNorm's default.

// TorchBench's arguments to FAMBench (DEFAULT_SEQ_LENGTH,
// DEFAULT_VOCAB_SIZE, DEFAULT_NUM_BATCHES) and the train step's SGD lr.
constexpr int64_t kSeqLength = 64;
constexpr int64_t kDataVocabSize = 250000;
constexpr int64_t kNumBatches = 1;
constexpr int64_t kTargetWidth = 1024;  // xlmr_data.generate_ml_sample.
constexpr double kLearningRate = 0.01;

torch::nn::LayerNorm MakeLayerNorm() {
  return torch::nn::LayerNorm(
      torch::nn::LayerNormOptions({kEmbedDim}).eps(kLayerNormEps));
}

// fairseq.modules.MultiheadAttention (self-attention, no bias_kv, no
// zero_attn). fairseq hands it to F.multi_head_attention_forward, which
// scales q by head_dim^-0.5 and runs scaled_dot_product_attention with the
// key padding mask; the same call is made here on B x H x T x D.
class MultiheadAttentionImpl : public torch::nn::Module {
 public:
  MultiheadAttentionImpl()
      : k_proj_(
            register_module("k_proj", torch::nn::Linear(kEmbedDim, kEmbedDim))),
        v_proj_(
            register_module("v_proj", torch::nn::Linear(kEmbedDim, kEmbedDim))),
        q_proj_(
            register_module("q_proj", torch::nn::Linear(kEmbedDim, kEmbedDim))),
        out_proj_(register_module("out_proj",
                                  torch::nn::Linear(kEmbedDim, kEmbedDim))) {}

  // `x` is B x T x C; `attend` is B x 1 x 1 x T (true where the key is not
  // padding) or undefined when no row has padding (fairseq passes no mask
  // then).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& attend) {
    const int64_t batch = x.size(0);
    const int64_t length = x.size(1);
    auto heads = [&](const torch::Tensor& t) {
      return t.view({batch, length, kHeads, kEmbedDim / kHeads})
          .transpose(1, 2);
    };
    torch::Tensor out = at::scaled_dot_product_attention(
        heads(q_proj_(x)), heads(k_proj_(x)), heads(v_proj_(x)),
        attend.defined() ? std::optional<torch::Tensor>(attend) : std::nullopt,
        is_training() ? dropout_p_ : 0.0);
    return out_proj_(
        out.transpose(1, 2).contiguous().view({batch, length, kEmbedDim}));
  }

  void set_dropout(double p) { dropout_p_ = p; }

 private:
  torch::nn::Linear k_proj_;
  torch::nn::Linear v_proj_;
  torch::nn::Linear q_proj_;
  torch::nn::Linear out_proj_;
  double dropout_p_ = kDropout;  // attention_dropout
};
TORCH_MODULE(MultiheadAttention);

// TransformerEncoderLayerBase with normalize_before False (post-norm).
class EncoderLayerImpl : public torch::nn::Module {
 public:
  EncoderLayerImpl()
      : self_attn_(register_module("self_attn", MultiheadAttention())),
        self_attn_layer_norm_(
            register_module("self_attn_layer_norm", MakeLayerNorm())),
        dropout_(register_module("dropout", torch::nn::Dropout(kDropout))),
        fc1_(register_module("fc1", torch::nn::Linear(kEmbedDim, kFfnDim))),
        fc2_(register_module("fc2", torch::nn::Linear(kFfnDim, kEmbedDim))),
        final_layer_norm_(
            register_module("final_layer_norm", MakeLayerNorm())) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& attend) {
    torch::Tensor h =
        self_attn_layer_norm_(x + dropout_(self_attn_(x, attend)));
    // activation_dropout is 0 for RoBERTa, so no dropout after the GELU.
    return final_layer_norm_(h + dropout_(fc2_(torch::gelu(fc1_(h)))));
  }

  void set_dropout(double p) {
    dropout_->options.p(p);
    self_attn_->set_dropout(p);
  }

 private:
  MultiheadAttention self_attn_;
  torch::nn::LayerNorm self_attn_layer_norm_;
  torch::nn::Dropout dropout_;
  torch::nn::Linear fc1_;
  torch::nn::Linear fc2_;
  torch::nn::LayerNorm final_layer_norm_;
};
TORCH_MODULE(EncoderLayer);

// TransformerEncoderBase as RobertaEncoder builds it (sentence_encoder).
class SentenceEncoderImpl : public torch::nn::Module {
 public:
  SentenceEncoderImpl()
      : embed_tokens_(register_module(
            "embed_tokens",
            torch::nn::Embedding(
                torch::nn::EmbeddingOptions(kDictionarySize, kEmbedDim)
                    .padding_idx(kPaddingIdx)))),
        // LearnedPositionalEmbedding: max_positions + padding_idx + 1 rows.
        embed_positions_(register_module(
            "embed_positions",
            torch::nn::Embedding(torch::nn::EmbeddingOptions(
                                     kMaxPositions + kPaddingIdx + 1, kEmbedDim)
                                     .padding_idx(kPaddingIdx)))),
        layernorm_embedding_(
            register_module("layernorm_embedding", MakeLayerNorm())),
        dropout_(register_module("dropout", torch::nn::Dropout(kDropout))) {
    // fairseq's checkpoint-format marker; a float buffer Python counts.
    register_buffer("version", torch::tensor({3.0f}));
    layers_ = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < kLayers; ++i) layers_->push_back(EncoderLayer());
  }

  // Returns the last layer's B x T x C features (extract_features).
  torch::Tensor forward(const torch::Tensor& tokens) {
    const torch::Tensor pad = tokens.eq(kPaddingIdx);
    // has_pads = encoder_padding_mask.any() stays a device tensor: each
    // `if has_pads` reads it back, once here and once per layer below.
    const torch::Tensor has_pads_tensor = pad.any();
    const bool has_pads = has_pads_tensor.item<bool>();
    // utils.make_positions: padding_idx + running count of non-pad tokens.
    const torch::Tensor not_pad = pad.logical_not().to(torch::kInt);
    const torch::Tensor positions =
        (torch::cumsum(not_pad, 1).to(torch::kInt) * not_pad).to(torch::kLong) +
        kPaddingIdx;
    torch::Tensor x = dropout_(layernorm_embedding_(
        embed_tokens_(tokens) + embed_positions_(positions)));
    torch::Tensor attend;
    if (has_pads) {
      x = x * (1 - pad.unsqueeze(-1).to(x.dtype()));
      attend = pad.logical_not().view({tokens.size(0), 1, 1, tokens.size(1)});
    }
    for (const auto& layer : *layers_) {
      // encoder_padding_mask if has_pads else None.
      has_pads_tensor.item<bool>();
      x = layer->as<EncoderLayerImpl>()->forward(x, attend);
    }
    return x;
  }

  void set_dropout(double p) {
    dropout_->options.p(p);
    for (const auto& layer : *layers_) {
      layer->as<EncoderLayerImpl>()->set_dropout(p);
    }
  }

 private:
  torch::nn::Embedding embed_tokens_;
  torch::nn::Embedding embed_positions_;
  torch::nn::LayerNorm layernorm_embedding_;
  torch::nn::Dropout dropout_;
  torch::nn::ModuleList layers_{nullptr};
};
TORCH_MODULE(SentenceEncoder);

// RobertaLMHead. Its projection weight is embed_tokens.weight itself, which
// Python's parameters() yields once (under embed_tokens), so it is not
// registered again; only the output bias is the head's own parameter.
class LmHeadImpl : public torch::nn::Module {
 public:
  LmHeadImpl()
      : bias_(register_parameter("bias", torch::zeros({kDictionarySize}))),
        dense_(
            register_module("dense", torch::nn::Linear(kEmbedDim, kEmbedDim))),
        layer_norm_(register_module("layer_norm", MakeLayerNorm())) {}

 private:
  torch::Tensor bias_;
  torch::nn::Linear dense_;
  torch::nn::LayerNorm layer_norm_;
};
TORCH_MODULE(LmHead);

class RobertaEncoderImpl : public torch::nn::Module {
 public:
  RobertaEncoderImpl()
      : sentence_encoder(
            register_module("sentence_encoder", SentenceEncoder())),
        lm_head(register_module("lm_head", LmHead())) {}

  SentenceEncoder sentence_encoder;
  LmHead lm_head;
};
TORCH_MODULE(RobertaEncoder);

class RobertaModelImpl : public torch::nn::Module {
 public:
  RobertaModelImpl() : encoder(register_module("encoder", RobertaEncoder())) {
    InitBertParams();
  }

  RobertaEncoder encoder;

 private:
  // fairseq.modules.transformer_sentence_encoder.init_bert_params, which
  // RobertaModel applies to every submodule.
  void InitBertParams() {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* linear = m->as<torch::nn::Linear>()) {
        torch::nn::init::normal_(linear->weight, 0.0, 0.02);
        torch::nn::init::zeros_(linear->bias);
      } else if (auto* embedding = m->as<torch::nn::Embedding>()) {
        torch::nn::init::normal_(embedding->weight, 0.0, 0.02);
        embedding->weight[kPaddingIdx].zero_();
      }
    }
  }
};
TORCH_MODULE(RobertaModel);

// RobertaHubInterface: the module TorchBench holds (self.xlmr). It owns one
// buffer of its own, _float_tensor (a device marker).
class XlmrHubImpl : public torch::nn::Module {
 public:
  XlmrHubImpl() : model(register_module("model", RobertaModel())) {
    register_buffer("_float_tensor", torch::zeros({1}));
  }

  torch::Tensor extract_features(const torch::Tensor& tokens) {
    TORCH_CHECK(tokens.size(-1) <= kMaxPositions, "tokens exceed 512");
    return model->encoder->sentence_encoder->forward(tokens);
  }

  RobertaModel model;
};
TORCH_MODULE(XlmrHub);

class FambenchXlmr final : public Model, public GoldenCheck {
 public:
  explicit FambenchXlmr(const ModelConfig& config) : mode_(config.mode) {
    hub_->to(config.device);
    // generate_dataset: per batch x = (rand(B, 64) * 250000).int(), then
    // for training y = rand(B, 64, 1024) (soft targets; see Step).
    const auto options = torch::TensorOptions().device(config.device);
    for (int64_t i = 0; i < kNumBatches; ++i) {
      tokens_.push_back((torch::rand({config.batch_size, kSeqLength}, options) *
                         kDataVocabSize)
                            .to(torch::kInt));
      if (mode_ == Mode::kTrain) {
        targets_.push_back(
            torch::rand({config.batch_size, kSeqLength, kTargetWidth}, options)
                .to(config.dtype()));
      }
    }
    if (mode_ == Mode::kTrain) {
      hub_->train();
      optimizer_ = std::make_unique<optim::Sgd>(
          hub_->parameters(), optim::SgdOptions{.lr = kLearningRate},
          config.optimizer);
    } else {
      hub_->eval();
    }
  }

  torch::Tensor Step() override {
    torch::Tensor result;
    for (size_t i = 0; i < tokens_.size(); ++i) {
      if (mode_ == Mode::kEval) {
        result = hub_->extract_features(tokens_[i]);
      } else {
        result = TrainBatch(tokens_[i], targets_[i]);
      }
    }
    return result;
  }

  // tools/golden/adapters/fambench_xlmr.py: eval() and one train() call of
  // the reference's Model on filled weights and inputs, dropout off.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    hub_->model->encoder->sentence_encoder->set_dropout(0.0);
    // In float64, as the golden file's notes explain (filled float32 values
    // converted); the SGD optimizer keeps its parameters through to().
    hub_->to(torch::kDouble);
    const torch::Tensor tokens =
        DeterministicIntegers("tokens", {tokens_[0].size(0), kSeqLength}, 0,
                              kDataVocabSize)
            .to(torch::kInt)
            .to(tokens_[0].device());
    const torch::Tensor targets =
        DeterministicTensor("targets",
                            {tokens_[0].size(0), kSeqLength, kTargetWidth},
                            torch::kFloat, 0.5, 0.5)
            .to(tokens_[0].device(), torch::kDouble);
    std::map<std::string, torch::Tensor> out = recorder_.Capture([&] {
      {
        torch::NoGradGuard no_grad;
        hub_->eval();
        recorder_.Record("eval_output", hub_->extract_features(tokens));
      }
      hub_->train();
      TrainBatch(tokens, targets);
    });
    for (const char* name : kGoldenParameters) {
      out[std::string("after_1_step:") + name] =
          hub_->named_parameters()[name].detach();
    }
    return out;
  }

  torch::nn::Module& module() override { return *hub_; }

 private:
  // Parameters whose gradients and updated values the golden file holds:
  // both ends of the encoder (the LM head gets no gradient). Not the last
  // LayerNorm's bias: its gradient is zero in exact arithmetic (the loss's
  // gradient sums to zero over the 64 positions it normalises over).
  static constexpr const char* kGoldenParameters[] = {
      "model.encoder.sentence_encoder.embed_tokens.weight",
      "model.encoder.sentence_encoder.layernorm_embedding.weight",
      "model.encoder.sentence_encoder.layers.23.fc2.weight",
      "model.encoder.sentence_encoder.layers.23.final_layer_norm.weight",
  };

  // The reference's train() body for one batch. F.cross_entropy gets the
  // B x 64 x 1024 features and B x 64 x 1024 probabilities, so it reads
  // dim 1 (the 64 positions) as the class dimension, as in Python.
  torch::Tensor TrainBatch(const torch::Tensor& tokens,
                           const torch::Tensor& targets) {
    torch::Tensor pred = hub_->extract_features(tokens);
    torch::Tensor loss = torch::nn::functional::cross_entropy(pred, targets);
    Backward(loss);
    recorder_.Record("output", pred);
    recorder_.Record("loss", loss);
    if (recorder_.recording()) {
      auto named = hub_->named_parameters();
      for (const char* name : kGoldenParameters) {
        // No copy: zero_grad() below drops the gradients, it does not
        // overwrite them (2 GB for embed_tokens in the float64 check).
        recorder_.Record(std::string("grad:") + name, named[name].grad());
      }
    }
    optimizer_->Step();
    optimizer_->ZeroGrad();
    return loss.detach();
  }

  Mode mode_;
  XlmrHub hub_;
  std::vector<torch::Tensor> tokens_;
  std::vector<torch::Tensor> targets_;
  std::unique_ptr<optim::Sgd> optimizer_;
  GoldenRecorder recorder_;
};

}  // namespace

// Counts: fairseq 0.12.2 does not install on Python 3.11, so they are
// fairseq's module definitions (v0.12.2 sources: roberta/model.py,
// transformer_encoder.py, hub_interface.py) summed by hand, and agree with
// transformers' XLMRobertaModel built with the same configuration, whose
// encoder parameters map one to one (tools/golden/adapters/fambench_xlmr.py
// asserts the encoder figure, 558839808):
//   embed_tokens 250002*1024 = 256002048, embed_positions 514*1024 =
//   526336, layernorm_embedding 2048,
//   24 layers * (4 * (1024*1024+1024) + 2*2048 + 1024*4096+4096 +
//   4096*1024+1024) = 24 * 12596224 = 302309376,
//   lm_head dense 1049600 + layer_norm 2048 + bias 250002 (weight tied)
//   = 1301650; total 560141458 (XLM-R large's published 560M).
// Buffers: hub._float_tensor (1) + sentence_encoder.version (1).
TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "fambench_xlmr",
         .domain = "nlp",
         .task = "language modeling",
         .reference = "fairseq 0.12.2 XLM-R large (FAMBench xlmr)",
         .train_batch_size = 96,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 96,   // DEFAULT_EVAL_BSIZE (4 on CPU, see above)
         .reference_parameters = 560141458,
         .reference_buffers = 2,
         .default_cuda_eval_precision = Precision::kFp16,
         .checks = {.golden_file = "fambench_xlmr.golden",
                    // 560M parameters: keep CPU tests small.
                    .test_batch_size = 1}}),
    MakeModel<FambenchXlmr>());

}  // namespace fambench_xlmr_model
}  // namespace torchbench
