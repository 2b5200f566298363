// TorchBench's hf_Longformer (torchbenchmark/models/hf_Longformer/
// __init__.py at 43ca0857): HuggingFaceModel("hf_Longformer") with
// class_models' row (1024, 4096, 'AutoConfig.from_pretrained(
// "allenai/longformer-base-4096")', 'AutoModelForMaskedLM') and
// cpu_input_slice 8, i.e. AutoModelForMaskedLM.from_config(<that config>),
// random weights, run by nlp/common/hf_language_model.h's Train step (Adam
// lr 1e-3, no zero_grad) on randint ids of length 1024 and Eval step on
// length 4096 (512 on the CPU).
//
// The network is pinned transformers's LongformerForMaskedLM (models/
// longformer/modeling_longformer.py): RoBERTa-style embeddings (word,
// token type, LayerNorm, dropout, position; position ids count the non-pad
// tokens from padding_idx + 1, pad tokens get padding_idx), 12 post-norm
// layers whose self-attention is LongformerSelfAttention (sliding-window
// attention over a band of attention_window + 1 keys, computed in
// overlapping chunks, nlp/common/hf_longformer_attention.h, plus the global
// attention of tokens marked by global_attention_mask through the
// query_global / key_global / value_global projections), erf GELU FFN, then
// LongformerLMHead (dense, GELU, layer_norm, decoder tied to the word
// embeddings, bias lm_head.bias) and CrossEntropyLoss. LongformerModel pads
// the ids with pad_token_id to a multiple of the largest attention window
// (512: every length below 512 runs at 512) and masks the padding, and cuts
// the hidden states back before the head.
//
// Configuration: nothing can be fetched from the hub here, so the values of
// allenai/longformer-base-4096's public config.json are written out (and
// the LongformerConfig defaults for the rest): vocab_size 50265,
// hidden_size 768, 12 layers, 12 heads, intermediate_size 3072, "gelu",
// max_position_embeddings 4098, type_vocab_size 1, attention_window 512 in
// every layer, layer_norm_eps 1e-5, pad_token_id 1, hidden and attention
// dropout 0.1, initializer_range 0.02. pinned transformers builds it with
// the eager attention implementation (Longformer has no SDPA path).
//
// TorchBench passes no global_attention_mask, so its steps never take the
// global path; forward() accepts one (as the reference's forward does) and
// the golden check runs it.
//
// Checked against transformers' own LongformerForMaskedLM driven by
// TorchBench's HuggingFaceModel.train()/eval() (tools/golden/adapters/
// hf_Longformer.py) with the configuration cut to 2 layers of attention
// windows 16 and 8 (one-sided 8 and 4) so that a length-40 sequence is
// padded to 48 and runs the banded path over 5 and 11 overlapping chunks;
// batch 2, dropout off, float32. "global:*" keys rerun the stepped network
// with a global_attention_mask (two global tokens in the first sequence,
// one in the second); "window512:eval_output" runs TorchBench's own window
// (the length-40 ids padded to 512) through one freshly filled layer. The
// counts test covers the full network.
//
// Where the port differs from the reference:
//  * pinned transformers rather than TorchBench's pinned 4.20.1 (same
//    parameters and algorithm; 4.20.1 also had a position_ids buffer).
//  * LongformerModel.forward builds a B x 1 x L x L additive mask
//    (create_bidirectional_mask) and keeps only its first row; the port
//    builds that row's information (padding and global tokens) directly.
//  * The reference's warn_if_padding_and_no_attention_mask check (a read of
//    two ids for a warning) and the zeroing of returned attention
//    probabilities of global tokens (TorchBench asks for no attentions) are
//    left out; neither changes an output.
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/families.h"
#include "nlp/common/hf_bert_blocks.h"
#include "nlp/common/hf_language_model.h"
#include "nlp/common/hf_longformer_attention.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace hf_longformer_model {
namespace {

namespace lf = hf::longformer;
using torch::indexing::Slice;

// allenai/longformer-base-4096's config.json (see the file comment).
struct LongformerConfig {
  int64_t vocab_size = 50265;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  int64_t max_position_embeddings = 4098;
  int64_t type_vocab_size = 1;
  double layer_norm_eps = 1e-5;
  int64_t pad_token_id = 1;
  double initializer_range = 0.02;
  // One window per layer (an int in the config is repeated per layer).
  std::vector<int64_t> attention_window = std::vector<int64_t>(12, 512);
};

// Which tokens of the padded B x L batch are padding (attend nothing, are
// attended by nothing) and which are global; the reference carries the same
// as the signs of its additive mask.
struct TokenKinds {
  torch::Tensor is_masked;  // B x L bool
  torch::Tensor is_global;  // B x L bool
  bool any_global = false;
};

// LongformerEmbeddings: word_embeddings, token_type_embeddings, LayerNorm,
// dropout, position_embeddings (both tables with padding_idx).
class EmbeddingsImpl : public torch::nn::Module {
 public:
  explicit EmbeddingsImpl(const LongformerConfig& c) : pad_(c.pad_token_id) {
    const int64_t h = c.hidden_size;
    word_embeddings_ = register_module(
        "word_embeddings",
        torch::nn::Embedding(torch::nn::EmbeddingOptions(c.vocab_size, h)
                                 .padding_idx(c.pad_token_id)));
    token_type_embeddings_ = register_module(
        "token_type_embeddings", torch::nn::Embedding(c.type_vocab_size, h));
    layer_norm_ =
        register_module("LayerNorm", hf::MakeLayerNorm(h, c.layer_norm_eps));
    dropout_ =
        register_module("dropout", torch::nn::Dropout(c.hidden_dropout_prob));
    position_embeddings_ =
        register_module("position_embeddings",
                        torch::nn::Embedding(torch::nn::EmbeddingOptions(
                                                 c.max_position_embeddings, h)
                                                 .padding_idx(c.pad_token_id)));
  }

  torch::Tensor forward(const torch::Tensor& input_ids) {
    // create_position_ids_from_input_ids, with its int32 cumsum.
    const torch::Tensor mask = input_ids.ne(pad_).to(torch::kInt);
    const torch::Tensor positions =
        (torch::cumsum(mask, 1).to(torch::kInt) * mask).to(torch::kLong) + pad_;
    const torch::Tensor token_types = torch::zeros_like(input_ids);
    const torch::Tensor x = word_embeddings_(input_ids) +
                            position_embeddings_(positions) +
                            token_type_embeddings_(token_types);
    return dropout_(layer_norm_(x));
  }

  const torch::Tensor& word_weight() const { return word_embeddings_->weight; }

 private:
  int64_t pad_;
  torch::nn::Embedding word_embeddings_{nullptr};
  torch::nn::Embedding token_type_embeddings_{nullptr};
  torch::nn::LayerNorm layer_norm_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
  torch::nn::Embedding position_embeddings_{nullptr};
};
TORCH_MODULE(Embeddings);

// LongformerLayer: attention.{self.{query,key,value,query_global,
// key_global,value_global}, output.{dense,LayerNorm,dropout}},
// intermediate.dense, output.{dense,LayerNorm,dropout}; all but the
// self-attention are transformers' copies of BERT's (hf::BertLayerOutputs).
class LayerImpl : public torch::nn::Module {
 public:
  LayerImpl(const LongformerConfig& c, int64_t layer_id)
      : heads_(c.num_attention_heads),
        head_dim_(c.hidden_size / c.num_attention_heads),
        w_(c.attention_window.at(layer_id) / 2),
        attention_dropout_(c.attention_probs_dropout_prob) {
    TORCH_CHECK(c.attention_window[layer_id] % 2 == 0 && w_ > 0,
                "attention_window must be even and positive");
    const int64_t h = c.hidden_size;
    auto attention = hf::Child(*this, "attention");
    auto self = hf::Child(*attention, "self");
    auto linear = [&](const char* name, int64_t in, int64_t out) {
      return self->register_module(name, torch::nn::Linear(in, out));
    };
    query_ = linear("query", h, h);
    key_ = linear("key", h, h);
    value_ = linear("value", h, h);
    query_global_ = linear("query_global", h, h);
    key_global_ = linear("key_global", h, h);
    value_global_ = linear("value_global", h, h);
    outputs_ = hf::BertLayerOutputs(*this, *attention, h, c.intermediate_size,
                                    c.layer_norm_eps, c.hidden_dropout_prob,
                                    hf::HiddenAct::kGelu);
  }

  torch::Tensor forward(const torch::Tensor& x, const TokenKinds& kinds) {
    return outputs_.forward(SelfAttention(x, kinds), x);
  }

 private:
  torch::Tensor SplitHeads(const torch::Tensor& t) const {
    // L x B x C -> B x L x H x D.
    return t.view({t.size(0), t.size(1), heads_, head_dim_}).transpose(0, 1);
  }

  // LongformerSelfAttention.forward on B x L x C hidden states.
  torch::Tensor SelfAttention(const torch::Tensor& x, const TokenKinds& kinds) {
    const torch::Tensor hidden = x.transpose(0, 1);  // L x B x C
    const int64_t length = hidden.size(0), batch = hidden.size(1),
                  embed = hidden.size(2);
    const double scale = std::sqrt(static_cast<double>(head_dim_));
    const torch::Tensor query = SplitHeads(query_(hidden) / scale);
    const torch::Tensor key = SplitHeads(key_(hidden));
    torch::Tensor scores = lf::SlidingChunksQueryKey(query, key, w_);

    // Padding and global tokens leave the band: the lowest finite value on
    // their keys, added through the same banded product of ones and that
    // mask (which also puts -inf on the band's invalid corners).
    const torch::Tensor remove =
        kinds.is_masked.logical_or(kinds.is_global).unsqueeze(2).unsqueeze(3);
    const torch::Tensor float_mask =
        remove.to(query.scalar_type())
            .masked_fill(remove, hf::FinfoMin(query.scalar_type()));
    scores +=
        lf::SlidingChunksQueryKey(torch::ones_like(float_mask), float_mask, w_);

    lf::GlobalIndices g;
    if (kinds.any_global) {
      g = lf::GetGlobalIndices(kinds.is_global);
      scores = torch::cat({lf::GlobalKeyScores(query, key, g), scores}, -1);
    }
    torch::Tensor probs = torch::softmax(scores, -1, torch::kFloat);
    // Rows of padding tokens are all masked; the reference zeroes them.
    probs = torch::masked_fill(probs, kinds.is_masked.unsqueeze(2).unsqueeze(3),
                               0.0)
                .to(scores.scalar_type());
    probs = torch::dropout(probs, attention_dropout_, is_training());

    const torch::Tensor value = SplitHeads(value_(hidden));
    torch::Tensor out;
    if (kinds.any_global) {
      // _compute_attn_output_with_global_indices.
      const torch::Tensor global_probs = probs.narrow(-1, 0, g.max_count);
      const torch::Tensor global_values = lf::GatherGlobal(value, g);
      const torch::Tensor from_global =
          torch::matmul(global_probs.transpose(1, 2).clone(),
                        global_values.transpose(1, 2).clone())
              .transpose(1, 2);
      const torch::Tensor band_probs =
          probs.narrow(-1, g.max_count, probs.size(-1) - g.max_count)
              .contiguous();
      out = from_global + lf::SlidingChunksProbsValue(band_probs, value, w_);
    } else {
      out = lf::SlidingChunksProbsValue(probs, value, w_);
    }
    out = out.transpose(0, 1).reshape({length, batch, embed}).contiguous();

    if (kinds.any_global) {
      // The global tokens' own rows attend over the whole sequence.
      const torch::Tensor global_out =
          GlobalTokenOutput(hidden, g, kinds.is_masked);  // B x H x G x D
      const torch::Tensor rows =
          global_out.index({g.slot_batch, Slice(), g.slot});
      out.index_put_({g.token, g.batch}, rows.view({rows.size(0), -1}));
    }
    return out.transpose(0, 1);
  }

  // _compute_global_attn_output_from_hidden: the global tokens' queries
  // (query_global) against every token's key_global / value_global.
  torch::Tensor GlobalTokenOutput(const torch::Tensor& hidden,
                                  const lf::GlobalIndices& g,
                                  const torch::Tensor& is_masked) {
    const int64_t length = hidden.size(0), batch = hidden.size(1),
                  embed = hidden.size(2);
    torch::Tensor global_hidden = hidden.new_zeros({g.max_count, batch, embed});
    global_hidden.index_put_({g.slot, g.slot_batch},
                             hidden.index({g.token, g.batch}));
    torch::Tensor q = query_global_(global_hidden) /
                      std::sqrt(static_cast<double>(head_dim_));
    auto heads_first = [&](const torch::Tensor& t) {
      return t.contiguous()
          .view({-1, batch * heads_, head_dim_})
          .transpose(0, 1);
    };
    q = heads_first(q);  // BH x G x D
    const torch::Tensor k = heads_first(key_global_(hidden));
    const torch::Tensor v = heads_first(value_global_(hidden));
    torch::Tensor scores = torch::bmm(q, k.transpose(1, 2));
    scores = scores.view({batch, heads_, g.max_count, length});
    const double lowest = hf::FinfoMin(scores.scalar_type());
    scores.transpose(1, 2).index_put_(
        {g.empty_batch, g.empty_slot},
        torch::scalar_tensor(lowest, scores.options()));
    scores = scores.masked_fill(is_masked.unsqueeze(1).unsqueeze(1), lowest);
    scores = scores.view({batch * heads_, g.max_count, length});
    torch::Tensor probs = torch::dropout(
        torch::softmax(scores, -1, torch::kFloat).to(scores.scalar_type()),
        attention_dropout_, is_training());
    return torch::bmm(probs, v).view({batch, heads_, g.max_count, head_dim_});
  }

  int64_t heads_;
  int64_t head_dim_;
  int64_t w_;  // One-sided window.
  double attention_dropout_;
  torch::nn::Linear query_{nullptr}, key_{nullptr}, value_{nullptr};
  torch::nn::Linear query_global_{nullptr}, key_global_{nullptr},
      value_global_{nullptr};
  hf::BertLayerOutputs outputs_;
};
TORCH_MODULE(Layer);

// LongformerForMaskedLM: longformer.{embeddings, encoder.layer.<i>} and
// lm_head.{bias, dense, layer_norm}; lm_head.decoder's weight and bias are
// the tied word embeddings and lm_head.bias, registered once.
class LongformerForMaskedLMImpl : public torch::nn::Module {
 public:
  explicit LongformerForMaskedLMImpl(const LongformerConfig& c)
      : pad_(c.pad_token_id),
        window_(*std::max_element(c.attention_window.begin(),
                                  c.attention_window.end())) {
    TORCH_CHECK(static_cast<int64_t>(c.attention_window.size()) ==
                c.num_hidden_layers);
    auto longformer = hf::Child(*this, "longformer");
    embeddings_ = longformer->register_module("embeddings", Embeddings(c));
    layers_ = hf::Child(*longformer, "encoder")
                  ->register_module("layer", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
      layers_->push_back(Layer(c, i));
    }
    auto head = hf::Child(*this, "lm_head");
    // Before dense: Python lists a module's own parameters first.
    decoder_bias_ =
        head->register_parameter("bias", torch::zeros({c.vocab_size}));
    dense_ = head->register_module(
        "dense", torch::nn::Linear(c.hidden_size, c.hidden_size));
    layer_norm_ = head->register_module(
        "layer_norm", hf::MakeLayerNorm(c.hidden_size, c.layer_norm_eps));
    hf::InitWeights(*this, c.initializer_range);
  }

  hf::LmOutput forward(const hf::LmBatch& batch,
                       const torch::Tensor& global_attention_mask = {}) {
    const int64_t length = batch.input_ids.size(1);
    // _pad_to_window_size: pad ids to a multiple of the largest window;
    // the padding is masked.
    const int64_t padding = (window_ - length % window_) % window_;
    const torch::Tensor ids =
        torch::constant_pad_nd(batch.input_ids, {0, padding}, pad_);
    TokenKinds kinds;
    kinds.is_masked = torch::zeros_like(ids, torch::kBool);
    kinds.is_masked.slice(1, length).fill_(true);
    kinds.is_global =
        global_attention_mask.defined()
            ? torch::constant_pad_nd(global_attention_mask, {0, padding}, 0)
                  .ne(0)
            : torch::zeros_like(ids, torch::kBool);
    // The reference reads this on the host in every forward.
    kinds.any_global = kinds.is_global.any().item<bool>();

    torch::Tensor x = embeddings_(ids);
    for (const auto& layer : *layers_) {
      x = layer->as<LayerImpl>()->forward(x, kinds);
    }
    x = x.slice(1, 0, length);
    hf::LmOutput out;
    out.logits = hf::MlmLogits(x, dense_, hf::HiddenAct::kGelu, layer_norm_,
                               embeddings_->word_weight(), decoder_bias_);
    if (batch.labels.defined())
      out.loss = hf::MlmLoss(out.logits, batch.labels);
    return out;
  }

 private:
  int64_t pad_;
  int64_t window_;
  Embeddings embeddings_{nullptr};
  torch::nn::ModuleList layers_{nullptr};
  torch::Tensor decoder_bias_;
  torch::nn::Linear dense_{nullptr};
  torch::nn::LayerNorm layer_norm_{nullptr};
};
TORCH_MODULE(LongformerForMaskedLM);

// ModelConfig::small_inputs (the CPU smoke and precision tests) caps the ids
// at HfTask's 32 tokens, which the network still pads to its window, 512:
// the smallest length this configuration runs. Measured single-threaded,
// those tests cost about 30 s of CPU for this model (smoke Train 11 s,
// smoke Eval 4 s, precision 15 s).
constexpr hf::HfTask kTask{.train_length = 1024,
                           .eval_length = 4096,
                           .cpu_input_slice = 8,
                           .vocab_size = 50265};

// The golden check's network and inputs (tools/golden/adapters/
// hf_Longformer.py): see the file comment.
constexpr int64_t kGoldenLength = 40;

LongformerConfig GoldenConfig() {
  LongformerConfig c;
  c.num_hidden_layers = 2;
  c.attention_window = {16, 8};
  // The attention dropout is a float the reference reads, not a module.
  c.attention_probs_dropout_prob = 0.0;
  return c;
}

std::vector<std::string> GoldenParameters() {
  return {"longformer.embeddings.word_embeddings.weight",
          "longformer.embeddings.position_embeddings.weight",
          "longformer.encoder.layer.0.attention.self.query.weight",
          "longformer.encoder.layer.1.attention.self.value.weight",
          "lm_head.dense.weight",
          "lm_head.bias"};
}

std::vector<std::string> GlobalGoldenParameters() {
  return {"longformer.encoder.layer.0.attention.self.query.weight",
          "longformer.encoder.layer.0.attention.self.query_global.weight",
          "longformer.encoder.layer.0.attention.self.key_global.weight",
          "longformer.encoder.layer.1.attention.self.value_global.weight"};
}

class LongformerModel final : public hf::HfLanguageModel<LongformerForMaskedLM>,
                              public GoldenCheck {
 public:
  explicit LongformerModel(const ModelConfig& config)
      : HfLanguageModel(config, kTask,
                        LongformerForMaskedLM(LongformerConfig{})),
        batch_size_(config.batch_size) {}

  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    LongformerForMaskedLM net(GoldenConfig());
    DeterministicFill(*net);
    hf::ZeroDropout(*net);
    optim::Adam adam(net->parameters(), optim::AdamOptions{.lr = 1e-3},
                     OptimizerPath::kDefault);
    hf::LmBatch eval;
    eval.input_ids = DeterministicIntegers(
        "input_ids", {batch_size_, kGoldenLength}, 0, kTask.vocab_size);
    hf::LmBatch train = eval;
    train.labels = DeterministicIntegers("labels", {batch_size_, kGoldenLength},
                                         0, kTask.vocab_size);
    auto out = hf::GoldenLmOutputs(net, adam, eval, train, GoldenParameters());

    // The global path on the stepped network, still in train mode with
    // dropout off: tokens 2 and 17 of the first sequence and 30 of the
    // second are global.
    torch::Tensor global =
        torch::zeros({batch_size_, kGoldenLength}, torch::kLong);
    global.index_put_({0, 2}, 1);
    global.index_put_({0, 17}, 1);
    if (batch_size_ > 1) global.index_put_({1, 30}, 1);
    const hf::LmOutput g = net->forward(train, global);
    out["global:output"] = g.logits.detach();
    out["global:loss"] = g.loss.detach();
    auto named = net->named_parameters();
    std::vector<torch::Tensor> params;
    for (const auto& name : GlobalGoldenParameters()) {
      params.push_back(named[name]);
    }
    const auto grads = torch::autograd::grad({g.loss}, params);
    for (size_t i = 0; i < params.size(); ++i) {
      out["global:grad:" + GlobalGoldenParameters()[i]] = grads[i];
    }

    // TorchBench's window, 512 (w = 256; the ids padded to 512), on one
    // freshly filled layer.
    LongformerConfig wide_config = GoldenConfig();
    wide_config.num_hidden_layers = 1;
    wide_config.attention_window = {512};
    LongformerForMaskedLM wide(wide_config);
    DeterministicFill(*wide);
    wide->eval();
    torch::NoGradGuard no_grad;
    out["window512:eval_output"] = wide->forward(eval).logits;
    return out;
  }

 private:
  int64_t batch_size_;
};

std::unique_ptr<Model> Make(const ModelConfig& config) {
  return std::make_unique<LongformerModel>(config);
}

}  // namespace

// In the venv (pinned torch, pinned transformers), with the config above:
//   m = AutoModelForMaskedLM.from_config(LongformerConfig(...))
//   sum(p.numel() for p in m.parameters())  # decoder tied
//   sum(b.numel() for b in m.buffers())     # 0
TORCHBENCH_REGISTER_MODEL(
    HuggingFaceSpec({.name = "hf_Longformer",
                     .reference = "transformers 5.24.0 LongformerForMaskedLM "
                                  "(allenai/longformer-base-4096 config)",
                     .train_batch_size = 2,  // DEFAULT_TRAIN_BSIZE
                     .eval_batch_size = 1,   // DEFAULT_EVAL_BSIZE
                     .reference_parameters = 148711257,
                     .reference_buffers = 0,
                     .checks = {.golden_file = "hf_Longformer.golden"}}),
    Make);

}  // namespace hf_longformer_model
}  // namespace torchbench
