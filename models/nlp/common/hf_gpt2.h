// pinned transformers's GPT2LMHeadModel (models/gpt2/modeling_gpt2.py), the
// network of TorchBench's hf_GPT2 and hf_GPT2_large, as
// AutoModelForCausalLM.from_config builds it: parameters named as its
// state_dict ("transformer.h.0.attn.c_attn.weight", ...), no buffers (5.x
// dropped 4.x's attn.bias / attn.masked_bias causal-mask buffers), lm_head
// tied to transformer.wte (tie_word_embeddings True), registered once as
// Python's parameters() yields it once.
//
// Per block (pre-norm): x += c_proj(attn(ln_1(x))); x += mlp(ln_2(x)), with
// Conv1D projections (weight stored in x out, y = x W + b), causal
// multi-head attention scaled by head_dim^-0.5 (scale_attn_weights True,
// scale_attn_by_inverse_layer_idx and reorder_and_upcast_attn False) run by
// scaled_dot_product_attention, as the default "sdpa" implementation does
// (no attention_mask is passed, so it gets is_causal=True), and a gelu_new
// MLP of width 4 * n_embd (n_inner None). Dropout 0.1 on the embeddings
// (embd_pdrop), attention probabilities (attn_pdrop) and residual branches
// (resid_pdrop) in train mode.
#ifndef TORCHBENCH_MODELS_NLP_COMMON_HF_GPT2_H_
#define TORCHBENCH_MODELS_NLP_COMMON_HF_GPT2_H_

#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "nlp/common/hf_language_model.h"
#include "nlp/common/hf_layers.h"

namespace torchbench::hf_gpt2 {

// The GPT2Config values of a checkpoint's config.json that the network
// reads; the rest are GPT2Config defaults.
struct Gpt2Config {
  int64_t vocab_size = 50257;
  int64_t n_positions = 1024;
  int64_t n_embd = 768;
  int64_t n_layer = 12;
  int64_t n_head = 12;
  double dropout = 0.1;  // embd_pdrop = attn_pdrop = resid_pdrop
  double layer_norm_epsilon = 1e-5;
  double initializer_range = 0.02;
};

// transformers.pytorch_utils.Conv1D: a linear layer whose weight is stored
// in_features x out_features.
class Conv1DImpl : public torch::nn::Module {
 public:
  Conv1DImpl(int64_t out_features, int64_t in_features, double std)
      : weight(register_parameter(
            "weight", torch::randn({in_features, out_features}) * std)),
        bias(register_parameter("bias", torch::zeros({out_features}))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    auto shape = x.sizes().vec();
    shape.back() = weight.size(1);
    return torch::addmm(bias, x.reshape({-1, x.size(-1)}), weight).view(shape);
  }

  torch::Tensor weight;
  torch::Tensor bias;
};
TORCH_MODULE(Conv1D);

inline torch::nn::LayerNorm MakeLayerNorm(const Gpt2Config& c) {
  return torch::nn::LayerNorm(
      torch::nn::LayerNormOptions({c.n_embd}).eps(c.layer_norm_epsilon));
}

// The GPT-2 scheme of _init_weights: residual projections get std / sqrt(2
// n_layer). Step times do not depend on weight values; this only keeps a
// fresh model's activations in the reference's range.
inline double ResidualStd(const Gpt2Config& c) {
  return c.initializer_range / std::sqrt(2.0 * c.n_layer);
}

class Gpt2AttentionImpl : public torch::nn::Module {
 public:
  explicit Gpt2AttentionImpl(const Gpt2Config& c)
      : c_attn_(register_module(
            "c_attn", Conv1D(3 * c.n_embd, c.n_embd, c.initializer_range))),
        c_proj_(register_module("c_proj",
                                Conv1D(c.n_embd, c.n_embd, ResidualStd(c)))),
        attn_dropout_(
            register_module("attn_dropout", torch::nn::Dropout(c.dropout))),
        resid_dropout_(
            register_module("resid_dropout", torch::nn::Dropout(c.dropout))),
        heads_(c.n_head),
        scale_(1.0 / std::sqrt(static_cast<double>(c.n_embd / c.n_head))),
        dropout_(c.dropout) {}

  torch::Tensor forward(const torch::Tensor& x) {
    auto qkv = c_attn_(x).chunk(3, -1);
    // The attention dropout follows its (parameterless) Dropout module's
    // mode, so turning dropout off (golden checks) reaches it too.
    const double p = attn_dropout_->is_training() ? dropout_ : 0.0;
    torch::Tensor out = hf::Attend(
        hf::SplitHeads(qkv[0], heads_), hf::SplitHeads(qkv[1], heads_),
        hf::SplitHeads(qkv[2], heads_), {}, /*causal=*/true, p, scale_);
    return resid_dropout_(c_proj_(hf::MergeHeads(out)));
  }

 private:
  Conv1D c_attn_;
  Conv1D c_proj_;
  torch::nn::Dropout attn_dropout_;
  torch::nn::Dropout resid_dropout_;
  int64_t heads_;
  double scale_;
  double dropout_;
};
TORCH_MODULE(Gpt2Attention);

class Gpt2MlpImpl : public torch::nn::Module {
 public:
  explicit Gpt2MlpImpl(const Gpt2Config& c)
      : c_fc_(register_module(
            "c_fc", Conv1D(4 * c.n_embd, c.n_embd, c.initializer_range))),
        c_proj_(register_module(
            "c_proj", Conv1D(c.n_embd, 4 * c.n_embd, ResidualStd(c)))),
        dropout_(register_module("dropout", torch::nn::Dropout(c.dropout))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    return dropout_(c_proj_(hf::GeluNew(c_fc_(x))));
  }

 private:
  Conv1D c_fc_;
  Conv1D c_proj_;
  torch::nn::Dropout dropout_;
};
TORCH_MODULE(Gpt2Mlp);

class Gpt2BlockImpl : public torch::nn::Module {
 public:
  explicit Gpt2BlockImpl(const Gpt2Config& c)
      : ln_1_(register_module("ln_1", MakeLayerNorm(c))),
        attn_(register_module("attn", Gpt2Attention(c))),
        ln_2_(register_module("ln_2", MakeLayerNorm(c))),
        mlp_(register_module("mlp", Gpt2Mlp(c))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = x + attn_(ln_1_(x));
    return x + mlp_(ln_2_(x));
  }

 private:
  torch::nn::LayerNorm ln_1_;
  Gpt2Attention attn_;
  torch::nn::LayerNorm ln_2_;
  Gpt2Mlp mlp_;
};
TORCH_MODULE(Gpt2Block);

// GPT2Model.
class Gpt2ModelImpl : public torch::nn::Module {
 public:
  explicit Gpt2ModelImpl(const Gpt2Config& c)
      : wte(register_module("wte",
                            torch::nn::Embedding(c.vocab_size, c.n_embd))),
        wpe_(register_module("wpe",
                             torch::nn::Embedding(c.n_positions, c.n_embd))),
        drop_(register_module("drop", torch::nn::Dropout(c.dropout))),
        h_(register_module("h", torch::nn::ModuleList())),
        ln_f_(register_module("ln_f", MakeLayerNorm(c))) {
    for (int64_t i = 0; i < c.n_layer; ++i) h_->push_back(Gpt2Block(c));
    torch::NoGradGuard no_grad;
    torch::nn::init::normal_(wte->weight, 0.0, c.initializer_range);
    torch::nn::init::normal_(wpe_->weight, 0.0, c.initializer_range);
  }

  // Runs the first `layers` blocks (all when negative).
  torch::Tensor forward(const torch::Tensor& input_ids, int64_t layers = -1) {
    const int64_t length = input_ids.size(1);
    torch::Tensor positions = torch::arange(
        length, torch::TensorOptions(torch::kLong).device(input_ids.device()));
    torch::Tensor x = drop_(wte(input_ids) + wpe_(positions).unsqueeze(0));
    const int64_t n = layers < 0 ? static_cast<int64_t>(h_->size())
                                 : std::min<int64_t>(layers, h_->size());
    for (int64_t i = 0; i < n; ++i) x = h_[i]->as<Gpt2Block>()->forward(x);
    return ln_f_(x);
  }

  torch::nn::Embedding wte;

 private:
  torch::nn::Embedding wpe_;
  torch::nn::Dropout drop_;
  torch::nn::ModuleList h_;
  torch::nn::LayerNorm ln_f_;
};
TORCH_MODULE(Gpt2Model);

// GPT2LMHeadModel: logits = hidden @ wte.weight^T (the tied lm_head), and
// ForCausalLMLoss when labels are given.
class Gpt2LmHeadModelImpl : public torch::nn::Module {
 public:
  explicit Gpt2LmHeadModelImpl(const Gpt2Config& c)
      : transformer_(register_module("transformer", Gpt2Model(c))) {}

  hf::LmOutput forward(const hf::LmBatch& batch) {
    hf::LmOutput out;
    torch::Tensor hidden = transformer_(batch.input_ids, layers_);
    out.logits = torch::linear(hidden, transformer_->wte->weight);
    if (batch.labels.defined()) {
      out.loss = hf::CausalLmLoss(out.logits, batch.labels);
    }
    return out;
  }

  // Golden checks of the 36-layer model run only its first blocks.
  void set_layers_to_run(int64_t layers) { layers_ = layers; }

 private:
  Gpt2Model transformer_;
  int64_t layers_ = -1;
};
TORCH_MODULE(Gpt2LmHeadModel);

}  // namespace torchbench::hf_gpt2

#endif  // TORCHBENCH_MODELS_NLP_COMMON_HF_GPT2_H_
