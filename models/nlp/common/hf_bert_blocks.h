// The pieces pinned transformers's BERT-style encoders (modeling_bert.py,
// modeling_distilbert.py, modeling_albert.py) compute alike, written once:
// the embeddings module (word + token type + learned position, LayerNorm,
// dropout), multi-head self-attention through scaled_dot_product_attention
// (the "sdpa" implementation from_config picks by default), the GELU
// variants, the masked-LM head's transform and tied decoder, and the MLM
// loss. Each model keeps its own module tree, so parameter names stay the
// reference's state_dict names (BERT "attention.self.query", DistilBERT
// "attention.q_lin", ALBERT "attention.query"); the blocks take the model's
// Linear/LayerNorm modules as arguments.
//
// Dropout: every reference dropout is an nn.Dropout module, and the
// attention-probability dropout is the p of such a module ("dropout",
// "attention_dropout") handed to SDPA when the attention module trains. The
// ports register the same modules and read p from them, so ZeroDropout
// (golden checks) turns off both kinds, as setting p = 0 on every nn.Dropout
// does in Python.
#ifndef TORCHBENCH_MODELS_NLP_COMMON_HF_BERT_BLOCKS_H_
#define TORCHBENCH_MODELS_NLP_COMMON_HF_BERT_BLOCKS_H_

#include <ATen/ops/scaled_dot_product_attention.h>
#include <torch/nn/functional/linear.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nlp/common/hf_language_model.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"

namespace torchbench::hf {

// config.hidden_act / activation.
enum class HiddenAct {
  kGelu,     // "gelu": GELUActivation, F.gelu (erf form).
  kGeluNew,  // "gelu_new": NewGELUActivation, the tanh form, op for op.
};

inline torch::Tensor Activate(const torch::Tensor& x, HiddenAct act) {
  if (act == HiddenAct::kGelu) return torch::gelu(x);
  // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), in the
  // reference's order of operations.
  return 0.5 * x *
         (1.0 + torch::tanh(std::sqrt(2.0 / M_PI) *
                            (x + 0.044715 * torch::pow(x, 3.0))));
}

// An empty module registered under `name`: a level of the reference's
// module tree that holds nothing but submodules (BERT's "attention.self"),
// so a layer can keep direct handles to its leaves while their state_dict
// names stay nested as in Python.
inline std::shared_ptr<torch::nn::Module> Child(torch::nn::Module& parent,
                                                const std::string& name) {
  return parent.register_module(name, std::make_shared<torch::nn::Module>());
}

inline torch::nn::LayerNorm MakeLayerNorm(int64_t dim, double eps) {
  return torch::nn::LayerNorm(
      torch::nn::LayerNormOptions({dim}).eps(eps).elementwise_affine(true));
}

struct EmbeddingsOptions {
  int64_t vocab_size = 0;
  int64_t dim = 0;  // hidden_size (BERT), dim (DistilBERT), embedding_size
  int64_t max_positions = 512;
  int64_t type_vocab_size = 0;  // 0: no token_type_embeddings (DistilBERT).
  int64_t pad_token_id = 0;     // word_embeddings' padding_idx.
  double layer_norm_eps = 1e-12;
  double dropout = 0.1;
};

// BertEmbeddings / AlbertEmbeddings / DistilBERT's Embeddings. Buffers as
// the reference registers them (non-persistent, counted by buffers()):
// position_ids = arange(max_positions) as 1 x P, and with token types
// token_type_ids = zeros(1, P).
class EmbeddingsImpl : public torch::nn::Module {
 public:
  explicit EmbeddingsImpl(const EmbeddingsOptions& o)
      : word_embeddings(
            register_module("word_embeddings",
                            torch::nn::Embedding(
                                torch::nn::EmbeddingOptions(o.vocab_size, o.dim)
                                    .padding_idx(o.pad_token_id)))),
        position_embeddings(
            register_module("position_embeddings",
                            torch::nn::Embedding(o.max_positions, o.dim))) {
    if (o.type_vocab_size > 0) {
      token_type_embeddings =
          register_module("token_type_embeddings",
                          torch::nn::Embedding(o.type_vocab_size, o.dim));
    }
    LayerNorm =
        register_module("LayerNorm", MakeLayerNorm(o.dim, o.layer_norm_eps));
    dropout = register_module("dropout", torch::nn::Dropout(o.dropout));
    position_ids = register_buffer(
        "position_ids",
        torch::arange(o.max_positions, torch::kLong).unsqueeze(0));
    if (o.type_vocab_size > 0) {
      token_type_ids = register_buffer(
          "token_type_ids", torch::zeros({1, o.max_positions}, torch::kLong));
    }
  }

  torch::Tensor forward(const torch::Tensor& input_ids) {
    const int64_t length = input_ids.size(1);
    const torch::Tensor positions = position_ids.slice(1, 0, length);
    torch::Tensor x = word_embeddings(input_ids);
    if (token_type_embeddings) {
      // The buffered all-zero token types, gathered at the positions and
      // broadcast over the batch, as the reference does without
      // token_type_ids.
      x = x + token_type_embeddings(token_type_ids.slice(1, 0, length));
    }
    x = x + position_embeddings(positions);
    return dropout(LayerNorm(x));
  }

  torch::nn::Embedding word_embeddings;
  torch::nn::Embedding position_embeddings;
  torch::nn::Embedding token_type_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};  // NOLINT: the reference's name.
  torch::nn::Dropout dropout{nullptr};
  torch::Tensor position_ids;
  torch::Tensor token_type_ids;
};
TORCH_MODULE(Embeddings);

// The reference's sdpa_attention_forward for an encoder self-attention:
// q, k, v projections split into `heads` heads, scaled_dot_product_attention
// with scale head_dim^-0.5, the attention mask (undefined: none, as the
// reference passes when no attention_mask is given; else boolean, true
// where a key is attended) and dropout_p = `dropout` while `training`,
// is_causal false; heads merged back to B x L x C. The output projection
// stays with the caller (its name differs per model).
inline torch::Tensor SelfAttention(
    const torch::Tensor& x, torch::nn::Linear& query, torch::nn::Linear& key,
    torch::nn::Linear& value, int64_t heads, const torch::Tensor& mask,
    const torch::nn::Dropout& dropout, bool training) {
  const int64_t batch = x.size(0);
  const int64_t length = x.size(1);
  const int64_t head_dim = x.size(2) / heads;
  auto split = [&](const torch::Tensor& t) {
    return t.view({batch, length, heads, head_dim}).transpose(1, 2);
  };
  const torch::Tensor out = at::scaled_dot_product_attention(
      split(query(x)), split(key(x)), split(value(x)),
      mask.defined() ? std::optional<torch::Tensor>(mask) : std::nullopt,
      training ? dropout->options.p() : 0.0, /*is_causal=*/false,
      std::pow(static_cast<double>(head_dim), -0.5));
  return out.transpose(1, 2).contiguous().reshape({batch, length, -1});
}

// What a BERT-style post-norm layer computes after its self-attention
// (BertLayer, and the layers transformers copies from it: Longformer's,
// BigBird's): attention.output (dense, dropout, LayerNorm over the
// residual), then intermediate.dense, the activation, output.dense,
// dropout and LayerNorm over the residual. Registers those modules under
// the layer and its "attention" child, after whatever the caller registered
// there first (the self-attention), as the reference's order has them.
class BertLayerOutputs {
 public:
  BertLayerOutputs() = default;
  BertLayerOutputs(torch::nn::Module& layer, torch::nn::Module& attention,
                   int64_t hidden, int64_t intermediate, double layer_norm_eps,
                   double dropout, HiddenAct act)
      : act_(act) {
    auto attention_output = Child(attention, "output");
    attention_dense_ = attention_output->register_module(
        "dense", torch::nn::Linear(hidden, hidden));
    attention_norm_ = attention_output->register_module(
        "LayerNorm", MakeLayerNorm(hidden, layer_norm_eps));
    attention_dropout_ = attention_output->register_module(
        "dropout", torch::nn::Dropout(dropout));
    intermediate_ =
        Child(layer, "intermediate")
            ->register_module("dense", torch::nn::Linear(hidden, intermediate));
    auto output = Child(layer, "output");
    output_dense_ = output->register_module(
        "dense", torch::nn::Linear(intermediate, hidden));
    output_norm_ = output->register_module(
        "LayerNorm", MakeLayerNorm(hidden, layer_norm_eps));
    output_dropout_ =
        output->register_module("dropout", torch::nn::Dropout(dropout));
  }

  // `context`: the self-attention's B x L x C output; `x`: the layer's input.
  torch::Tensor forward(const torch::Tensor& context, const torch::Tensor& x) {
    const torch::Tensor a =
        attention_norm_(attention_dropout_(attention_dense_(context)) + x);
    return output_norm_(
        output_dropout_(output_dense_(Activate(intermediate_(a), act_))) + a);
  }

 private:
  HiddenAct act_ = HiddenAct::kGelu;
  torch::nn::Linear attention_dense_{nullptr};
  torch::nn::LayerNorm attention_norm_{nullptr};
  torch::nn::Dropout attention_dropout_{nullptr};
  torch::nn::Linear intermediate_{nullptr};
  torch::nn::Linear output_dense_{nullptr};
  torch::nn::LayerNorm output_norm_{nullptr};
  torch::nn::Dropout output_dropout_{nullptr};
};

// The masked-LM head (BertLMPredictionHead with its transform,
// AlbertMLMHead, DistilBertForMaskedLM's vocab_* layers): dense, act,
// LayerNorm, then the decoder whose weight is the word embedding matrix
// (tied; Python's parameters() yields it once, under the embeddings) and
// whose bias is the head's own.
inline torch::Tensor MlmLogits(const torch::Tensor& hidden,
                               torch::nn::Linear& dense, HiddenAct act,
                               torch::nn::LayerNorm& layer_norm,
                               const torch::Tensor& decoder_weight,
                               const torch::Tensor& decoder_bias) {
  return torch::nn::functional::linear(layer_norm(Activate(dense(hidden), act)),
                                       decoder_weight, decoder_bias);
}

// CrossEntropyLoss()(logits.view(-1, vocab), labels.view(-1)): mean over
// every token, ignore_index -100.
inline torch::Tensor MlmLoss(const torch::Tensor& logits,
                             const torch::Tensor& labels) {
  return torch::nn::functional::cross_entropy(
      logits.view({-1, logits.size(-1)}), labels.view({-1}));
}

// PreTrainedModel._init_weights as from_config applies it to these models:
// Linear weights and Embedding tables normal(0, initializer_range), Linear
// biases zero, each Embedding's padding row zero (LayerNorms start at
// ones/zeros and the MLM biases at zeros, as LibTorch builds them).
inline void InitWeights(torch::nn::Module& module, double initializer_range) {
  torch::NoGradGuard no_grad;
  for (const auto& m : module.modules(/*include_self=*/false)) {
    if (auto* linear = m->as<torch::nn::Linear>()) {
      linear->weight.normal_(0.0, initializer_range);
      if (linear->bias.defined()) linear->bias.zero_();
    } else if (auto* embedding = m->as<torch::nn::Embedding>()) {
      embedding->weight.normal_(0.0, initializer_range);
      if (const auto& pad = embedding->options.padding_idx()) {
        embedding->weight[*pad].zero_();
      }
    }
  }
}

// Sets p = 0 on every Dropout module of `module` (golden checks; see the
// file comment: this turns off the SDPA attention dropout too, which
// TurnOffDropout's eval() on the Dropout modules would not).
inline void ZeroDropout(torch::nn::Module& module) {
  for (const auto& m : module.modules(/*include_self=*/false)) {
    if (auto* d = m->as<torch::nn::Dropout>()) d->options.p(0.0);
  }
}

// HuggingFaceModel around a masked-LM network, with the golden check its
// adapter (tools/golden/adapters/hf_<Name>.py) makes: batch = the golden
// file's, length kGoldenLength, ids and labels DeterministicIntegers
// "input_ids" and "labels" in [0, vocab), dropout off, GoldenLmOutputs'
// keys for `parameters`. When `make_golden_net` is set, the check runs the
// network it builds (a shorter stack of the same layers; filled here, with
// its own fresh Adam, as the adapter builds its own) instead of the
// benchmarked one.
template <typename Net>
class MaskedLmModel final : public HfLanguageModel<Net>, public GoldenCheck {
 public:
  static constexpr int64_t kGoldenLength = 16;

  // `parameters`: the golden keys' parameters; `make_golden_net`: see
  // above (empty: the benchmarked network).
  MaskedLmModel(const ModelConfig& config, const HfTask& task, Net net,
                std::vector<std::string> parameters,
                std::function<Net()> make_golden_net = {})
      : HfLanguageModel<Net>(config, task, std::move(net)),
        vocab_size_(task.vocab_size),
        batch_size_(config.batch_size),
        parameters_(std::move(parameters)),
        make_golden_net_(std::move(make_golden_net)) {}

  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    LmBatch eval;
    eval.input_ids = DeterministicIntegers(
        "input_ids", {batch_size_, kGoldenLength}, 0, vocab_size_);
    LmBatch train = eval;
    train.labels = DeterministicIntegers("labels", {batch_size_, kGoldenLength},
                                         0, vocab_size_);
    if (!make_golden_net_) {
      ZeroDropout(*this->net());
      return GoldenLmOutputs(this->net(), this->optimizer(), eval, train,
                             parameters_);
    }
    Net net = make_golden_net_();
    DeterministicFill(*net);
    ZeroDropout(*net);
    optim::Adam adam(net->parameters(), optim::AdamOptions{.lr = 1e-3},
                     OptimizerPath::kDefault);
    return GoldenLmOutputs(net, adam, eval, train, parameters_);
  }

 private:
  int64_t vocab_size_;
  int64_t batch_size_;
  std::vector<std::string> parameters_;
  std::function<Net()> make_golden_net_;
};

}  // namespace torchbench::hf

#endif  // TORCHBENCH_MODELS_NLP_COMMON_HF_BERT_BLOCKS_H_
