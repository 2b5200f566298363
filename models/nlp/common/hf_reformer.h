// pinned transformers's ReformerForMaskedLM (models/reformer/
// modeling_reformer.py), the network of TorchBench's hf_Reformer: token and
// axial position embeddings, a stack of reversible layers (local or LSH
// self-attention, then a chunked feed-forward) whose backward recomputes
// each layer's activations from its outputs, and the LM head. Module and
// parameter names are transformers' state_dict names.
//
// Eval inputs whose length is not a multiple of the chunk lengths are
// padded and the padding masked, as the reference does. What the port
// leaves out (none of it runs in TorchBench's hf_Reformer): incremental
// decoding (past_buckets_states), user attention masks and position ids
// (TorchBench passes none), is_decoder's causal mask (ReformerForMaskedLM
// forbids it), factorized num_buckets (TorchBench sets 128) and
// output_attentions/hidden_states.
#ifndef TORCHBENCH_MODELS_NLP_COMMON_HF_REFORMER_H_
#define TORCHBENCH_MODELS_NLP_COMMON_HF_REFORMER_H_

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nlp/common/hf_language_model.h"
#include "nlp/common/hf_reformer_attention.h"

namespace torchbench::hf::reformer {

// A plain module that only names its children (transformers' wrappers such
// as ReformerSelfOutput whose one child is `dense`).
inline std::shared_ptr<torch::nn::Module> Scope(torch::nn::Module& parent,
                                                const std::string& name) {
  return parent.register_module(name, std::make_shared<torch::nn::Module>());
}

// ReformerAttention: layer norm, local or LSH self-attention, output dense
// and dropout.
class ReformerAttentionImpl : public torch::nn::Module {
 public:
  ReformerAttentionImpl(const ReformerConfig& config, AttentionType type)
      : dropout_(config.hidden_dropout_prob) {
    layer_norm_ = register_module(
        "layer_norm",
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size})
                                 .eps(config.layer_norm_eps)));
    if (type == AttentionType::kLsh) {
      lsh_ = register_module("self_attention", LshSelfAttention(config));
    } else {
      local_ = register_module("self_attention", LocalSelfAttention(config));
    }
    dense_ =
        Scope(*this, "output")
            ->register_module(
                "dense", torch::nn::Linear(torch::nn::LinearOptions(
                                               config.num_attention_heads *
                                                   config.attention_head_size,
                                               config.hidden_size)
                                               .bias(false)));
  }

  LshOutput forward(const torch::Tensor& hidden_states,
                    const torch::Tensor& buckets,
                    const torch::Tensor& attention_mask) {
    torch::Tensor normed = layer_norm_(hidden_states);
    LshOutput out;
    if (lsh_) {
      out = lsh_(normed, buckets, attention_mask);
    } else {
      out.hidden_states = local_(normed, attention_mask);
    }
    out.hidden_states =
        torch::dropout(dense_(out.hidden_states), dropout_, is_training());
    return out;
  }

 private:
  double dropout_;
  torch::nn::LayerNorm layer_norm_{nullptr};
  LocalSelfAttention local_{nullptr};
  LshSelfAttention lsh_{nullptr};
  torch::nn::Linear dense_{nullptr};
};
TORCH_MODULE(ReformerAttention);

// ChunkReformerFeedForward: layer norm, dense, dropout, ReLU, dense,
// dropout, applied chunk by chunk along the sequence
// (apply_chunking_to_forward) when chunk_size_feed_forward > 0.
class ChunkFeedForwardImpl : public torch::nn::Module {
 public:
  explicit ChunkFeedForwardImpl(const ReformerConfig& config)
      : chunk_size_(config.chunk_size_feed_forward),
        dropout_(config.hidden_dropout_prob) {
    layer_norm_ = register_module(
        "layer_norm",
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size})
                                 .eps(config.layer_norm_eps)));
    dense_ = Scope(*this, "dense")
                 ->register_module("dense",
                                   torch::nn::Linear(config.hidden_size,
                                                     config.feed_forward_size));
    output_ = Scope(*this, "output")
                  ->register_module("dense",
                                    torch::nn::Linear(config.feed_forward_size,
                                                      config.hidden_size));
  }

  torch::Tensor forward(const torch::Tensor& attention_output) {
    if (chunk_size_ <= 0) return ForwardChunk(attention_output);
    TORCH_CHECK(
        attention_output.size(1) % chunk_size_ == 0,
        "sequence length must be a multiple of chunk_size_feed_forward");
    std::vector<torch::Tensor> chunks;
    for (const torch::Tensor& chunk :
         attention_output.chunk(attention_output.size(1) / chunk_size_, 1)) {
      chunks.push_back(ForwardChunk(chunk));
    }
    return torch::cat(chunks, 1);
  }

 private:
  torch::Tensor ForwardChunk(const torch::Tensor& hidden_states) {
    torch::Tensor x = layer_norm_(hidden_states);
    x = torch::relu(torch::dropout(dense_(x), dropout_, is_training()));
    return torch::dropout(output_(x), dropout_, is_training());
  }

  int64_t chunk_size_;
  double dropout_;
  torch::nn::LayerNorm layer_norm_{nullptr};
  torch::nn::Linear dense_{nullptr}, output_{nullptr};
};
TORCH_MODULE(ChunkFeedForward);

// ReformerLayer._init_*_seed: a fresh nondeterministic seed (torch.seed(),
// or the CUDA generator's seed() where CUDA is present, as the reference
// checks), set as the seed of every generator and returned.
inline uint64_t FreshSeed() {
  uint64_t seed = 0;
  if (torch::cuda::is_available()) {
    at::Generator cuda =
        at::globalContext().defaultGenerator(at::Device(at::kCUDA));
    std::lock_guard<std::mutex> lock(cuda.mutex());
    seed = cuda.seed();
  } else {
    at::Generator cpu = at::detail::getDefaultCPUGenerator();
    {
      std::lock_guard<std::mutex> lock(cpu.mutex());
      seed = cpu.seed();
    }
    seed %= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  }
  torch::manual_seed(seed);
  return seed;
}

// ReformerLayer: Y1 = X1 + Attention(X2), Y2 = X2 + FeedForward(Y1), run
// without an autograd graph; BackwardPass inverts it.
class ReformerLayerImpl : public torch::nn::Module {
 public:
  ReformerLayerImpl(const ReformerConfig& config, AttentionType type) {
    attention_ = register_module("attention", ReformerAttention(config, type));
    feed_forward_ = register_module("feed_forward", ChunkFeedForward(config));
  }

  struct Output {
    torch::Tensor attn_output, hidden_states, buckets;
  };

  Output forward(const torch::Tensor& prev_attn_output,
                 const torch::Tensor& hidden_states,
                 const torch::Tensor& attention_mask) {
    torch::NoGradGuard no_grad;
    if (is_training()) attention_seed_ = FreshSeed();
    LshOutput attention =
        attention_(hidden_states, torch::Tensor(), attention_mask);
    Output out;
    out.attn_output = prev_attn_output + attention.hidden_states;
    out.buckets = attention.buckets;
    if (is_training()) feed_forward_seed_ = FreshSeed();
    out.hidden_states = hidden_states + feed_forward_(out.attn_output);
    return out;
  }

  // ReformerLayer.backward_pass: from Y1 (`attn_output`), Y2
  // (`hidden_states`) and their gradients, recomputes X2 = Y2 - G(Y1) and
  // X1 = Y1 - F(X2) with the forward's dropout seeds and LSH buckets,
  // backpropagates through G and F (accumulating the parameters' .grad) and
  // leaves X1, X2 and their gradients in the arguments.
  void BackwardPass(torch::Tensor& attn_output, torch::Tensor& hidden_states,
                    torch::Tensor& grad_attn_output,
                    torch::Tensor& grad_hidden_states,
                    const torch::Tensor& buckets,
                    const torch::Tensor& attention_mask) {
    TORCH_CHECK(is_training(), "the reversible backward needs train mode");
    torch::Tensor next_attn_output = attn_output.detach().requires_grad_(true);
    torch::Tensor res_hidden_states;
    {
      torch::AutoGradMode enable_grad(true);
      torch::manual_seed(feed_forward_seed_);
      res_hidden_states = feed_forward_(next_attn_output);
      torch::autograd::backward({res_hidden_states}, {grad_hidden_states},
                                /*retain_graph=*/true);
    }
    torch::Tensor x2;
    {
      torch::NoGradGuard no_grad;
      x2 = hidden_states - res_hidden_states;
      grad_attn_output = grad_attn_output + next_attn_output.grad();
    }
    res_hidden_states = torch::Tensor();
    x2.requires_grad_(true);
    torch::Tensor output;
    {
      torch::AutoGradMode enable_grad(true);
      torch::manual_seed(attention_seed_);
      output = attention_(x2, buckets, attention_mask).hidden_states;
      torch::autograd::backward({output}, {grad_attn_output},
                                /*retain_graph=*/true);
    }
    torch::NoGradGuard no_grad;
    attn_output = next_attn_output - output;
    grad_hidden_states = grad_hidden_states + x2.grad();
    hidden_states = x2.detach();
  }

 private:
  ReformerAttention attention_{nullptr};
  ChunkFeedForward feed_forward_{nullptr};
  uint64_t attention_seed_ = 0, feed_forward_seed_ = 0;
};
TORCH_MODULE(ReformerLayer);

// What the reversible function's backward needs from its forward.
struct ReversibleState : torch::CustomClassHolder {
  std::vector<ReformerLayer> layers;
  std::vector<torch::Tensor> buckets;  // Per layer; undefined for local.
  torch::Tensor attention_mask;
};

// _ReversibleFunction: runs the layers without keeping activations (only
// the last outputs are saved); the backward walks the layers in reverse,
// recomputing each one's inputs from its outputs.
class ReversibleFunction
    : public torch::autograd::Function<ReversibleFunction> {
 public:
  static torch::autograd::variable_list forward(
      torch::autograd::AutogradContext* ctx, const torch::Tensor& hidden,
      const std::vector<ReformerLayer>* layers,
      const std::optional<torch::Tensor>& attention_mask) {
    std::vector<torch::Tensor> halves = torch::chunk(hidden, 2, -1);
    torch::Tensor hidden_states = halves[0], attn_output = halves[1];
    auto state = c10::make_intrusive<ReversibleState>();
    state->layers = *layers;
    // An input only when defined (autograd records no undefined input).
    state->attention_mask = attention_mask.value_or(torch::Tensor());
    for (ReformerLayer& layer : state->layers) {
      ReformerLayerImpl::Output out =
          layer(attn_output, hidden_states, state->attention_mask);
      attn_output = out.attn_output;
      hidden_states = out.hidden_states;
      state->buckets.push_back(out.buckets);
    }
    ctx->save_for_backward({attn_output.detach(), hidden_states.detach()});
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    return {torch::cat({attn_output, hidden_states}, -1)};
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    std::vector<torch::Tensor> grad_halves = torch::chunk(grads[0], 2, -1);
    torch::Tensor grad_attn_output = grad_halves[0];
    torch::Tensor grad_hidden_states = grad_halves[1];
    torch::autograd::variable_list saved = ctx->get_saved_variables();
    torch::Tensor attn_output = saved[0], hidden_states = saved[1];
    auto state = c10::static_intrusive_pointer_cast<ReversibleState>(
        ctx->saved_data["state"].toCapsule());
    for (size_t i = state->layers.size(); i-- > 0;) {
      state->layers[i]->BackwardPass(attn_output, hidden_states,
                                     grad_attn_output, grad_hidden_states,
                                     state->buckets[i], state->attention_mask);
    }
    return {torch::cat({grad_attn_output, grad_hidden_states}, -1),
            torch::Tensor(), torch::Tensor()};
  }
};

// _get_least_common_mult_chunk_len / _get_min_chunk_len.
inline int64_t ChunkLengthLcm(const ReformerConfig& c) {
  return std::lcm(c.lsh_attn_chunk_length, c.local_attn_chunk_length);
}
inline int64_t ChunkLengthMin(const ReformerConfig& c) {
  return std::min(c.lsh_attn_chunk_length, c.local_attn_chunk_length);
}

// ReformerForMaskedLM with TorchBench's inputs.
class ReformerForMaskedLmImpl : public torch::nn::Module {
 public:
  explicit ReformerForMaskedLmImpl(const ReformerConfig& config)
      : config_(config) {
    int64_t embds = 0;
    for (int64_t d : config.axial_pos_embds_dim) embds += d;
    TORCH_CHECK(embds == config.hidden_size &&
                    config.axial_pos_shape.size() == 2 &&
                    config.axial_pos_embds_dim.size() == 2,
                "two axial factors whose dims sum to hidden_size expected");
    auto reformer = Scope(*this, "reformer");
    auto embeddings = Scope(*reformer, "embeddings");
    word_embeddings_ = embeddings->register_module(
        "word_embeddings",
        torch::nn::Embedding(config.vocab_size, config.hidden_size));
    auto weights = Scope(*Scope(*embeddings, "position_embeddings"), "weights");
    for (size_t axis = 0; axis < 2; ++axis) {
      std::vector<int64_t> shape = {1, 1, config.axial_pos_embds_dim[axis]};
      shape[axis] = config.axial_pos_shape[axis];
      axial_weights_.push_back(weights->register_parameter(std::to_string(axis),
                                                           torch::ones(shape)));
    }
    auto encoder = Scope(*reformer, "encoder");
    auto layers = encoder->register_module("layers", torch::nn::ModuleList());
    for (AttentionType type : config.attn_layers) {
      layers_.push_back(ReformerLayer(config, type));
      layers->push_back(layers_.back());
    }
    encoder_layer_norm_ = encoder->register_module(
        "layer_norm", torch::nn::LayerNorm(
                          torch::nn::LayerNormOptions({2 * config.hidden_size})
                              .eps(config.layer_norm_eps)));
    auto lm_head = Scope(*this, "lm_head");
    lm_bias_ =
        lm_head->register_parameter("bias", torch::zeros({config.vocab_size}));
    decoder_ = lm_head->register_module(
        "decoder",
        torch::nn::Linear(2 * config.hidden_size, config.vocab_size));
    InitWeights();
  }

  LmOutput forward(const LmBatch& batch) {
    torch::Tensor ids = batch.input_ids;
    const int64_t length = ids.size(1);
    const int64_t lcm = ChunkLengthLcm(config_);
    // _pad_to_mult_of_chunk_length: Eval inputs longer than a chunk are
    // padded with pad tokens, masked out, to a multiple of the chunk lengths.
    torch::Tensor attention_mask;
    if (length % lcm != 0 && length > ChunkLengthMin(config_)) {
      TORCH_CHECK(!is_training(), "in training the sequence length ", length,
                  " must be a multiple of ", lcm);
      const int64_t padding = lcm - length % lcm;
      const auto options = ids.options();
      ids = torch::cat({ids, torch::full({ids.size(0), padding},
                                         config_.pad_token_id, options)},
                       -1);
      attention_mask = torch::cat(
          {torch::ones(batch.input_ids.sizes(), options.dtype(torch::kBool)),
           torch::zeros({ids.size(0), padding}, options.dtype(torch::kBool))},
          -1);
    }
    torch::Tensor hidden = Embed(ids);
    hidden = torch::cat({hidden, hidden}, -1);
    hidden = ReversibleFunction::apply(
        hidden, &layers_,
        attention_mask.defined() ? std::optional<torch::Tensor>(attention_mask)
                                 : std::nullopt)[0];
    hidden = torch::dropout(encoder_layer_norm_(hidden),
                            config_.hidden_dropout_prob, is_training());
    if (attention_mask.defined()) hidden = hidden.slice(1, 0, length);
    // chunk_size_lm_head is 0: the head runs on the whole sequence.
    LmOutput out;
    out.logits = decoder_(hidden);
    if (batch.labels.defined()) {
      out.loss = torch::nn::functional::cross_entropy(
          out.logits.view({-1, config_.vocab_size}), batch.labels.view({-1}));
    }
    return out;
  }

  // The mask constants of _init_weights (a deterministic fill overwrites
  // every floating buffer).
  void ResetMaskValues() {
    torch::NoGradGuard no_grad;
    for (auto& buffer : named_buffers()) {
      const std::string& name = buffer.key();
      const double value = name.ends_with("self_mask_value_float16")   ? -1e3
                           : name.ends_with("self_mask_value_float32") ? -1e5
                           : name.ends_with("mask_value_float16")      ? -1e4
                                                                       : -1e9;
      buffer.value().fill_(value);
    }
  }

 private:
  // ReformerPreTrainedModel._init_weights: normal(0, initializer_range)
  // linear and embedding weights, zero biases, unit layer norms, normal
  // (0, axial_norm_std) axial weights.
  void InitWeights() {
    torch::NoGradGuard no_grad;
    for (auto& p : named_parameters()) {
      const std::string& name = p.key();
      if (name.find("position_embeddings.weights") != std::string::npos) {
        p.value().normal_(0.0, config_.axial_norm_std);
      } else if (name.find("layer_norm") != std::string::npos) {
        p.value().fill_(name.ends_with("weight") ? 1.0 : 0.0);
      } else if (name.ends_with("bias")) {
        p.value().zero_();
      } else {
        p.value().normal_(0.0, config_.initializer_range);
      }
    }
  }

  // ReformerEmbeddings: dropout(word embeddings) + axial positions.
  torch::Tensor Embed(const torch::Tensor& input_ids) {
    const int64_t length = input_ids.size(1);
    torch::Tensor position_ids = torch::arange(length, input_ids.options())
                                     .unsqueeze(0)
                                     .expand(input_ids.sizes());
    TORCH_CHECK(length <= config_.max_position_embeddings,
                "sequence length exceeds max_position_embeddings");
    torch::Tensor embeddings =
        torch::dropout(word_embeddings_(input_ids), config_.hidden_dropout_prob,
                       is_training());
    return embeddings + AxialPositionEncodings(position_ids);
  }

  // AxialPositionEmbeddings: position (i, j) of the axial grid gets
  // [weights.0[i], weights.1[j]]; Train covers the whole grid (with
  // dropout2d over it), Eval selects the positions' rows.
  torch::Tensor AxialPositionEncodings(const torch::Tensor& position_ids) {
    const int64_t batch = position_ids.size(0);
    const int64_t length = position_ids.size(1);
    const auto& shape = config_.axial_pos_shape;
    std::vector<torch::Tensor> broadcast;
    for (const torch::Tensor& weight : axial_weights_) {
      broadcast.push_back(
          weight.expand({batch, shape[0], shape[1], weight.size(-1)}));
    }
    if (is_training()) {
      TORCH_CHECK(shape[0] * shape[1] == length,
                  "in training the axial_pos_shape factors must multiply to "
                  "the sequence length ",
                  length);
      const double p = config_.hidden_dropout_prob;
      if (p > 0) {
        torch::Tensor weights = torch::cat(broadcast, -1).transpose(2, 1);
        weights = torch::nn::functional::dropout2d(
            weights,
            torch::nn::functional::Dropout2dFuncOptions().p(p).training(true));
        return torch::reshape(weights.transpose(2, 1), {batch, length, -1});
      }
      std::vector<torch::Tensor> parts;
      for (const torch::Tensor& w : broadcast) {
        parts.push_back(torch::reshape(w, {batch, length, -1}));
      }
      return torch::cat(parts, -1);
    }
    TORCH_CHECK(shape[0] * shape[1] >= length,
                "axial_pos_shape must cover the sequence length");
    // .item(): the host sync the reference has here.
    const int64_t max_position = position_ids.max().item<int64_t>();
    const int64_t columns = (max_position + shape[1]) / shape[1];
    std::vector<torch::Tensor> parts;
    for (const torch::Tensor& w : broadcast) {
      parts.push_back(w.slice(1, 0, columns));
    }
    torch::Tensor encodings = torch::cat(parts, -1);
    encodings = torch::reshape(encodings, {batch, -1, encodings.size(-1)});
    std::vector<torch::Tensor> rows;
    for (int64_t i = 0; i < batch; ++i) {
      rows.push_back(
          torch::index_select(encodings[i], 0, position_ids[i]).unsqueeze(0));
    }
    return torch::cat(rows, 0);
  }

  ReformerConfig config_;
  torch::nn::Embedding word_embeddings_{nullptr};
  std::vector<torch::Tensor> axial_weights_;
  std::vector<ReformerLayer> layers_;
  torch::nn::LayerNorm encoder_layer_norm_{nullptr};
  torch::nn::Linear decoder_{nullptr};
  torch::Tensor lm_bias_;  // lm_head.bias: untied from decoder.bias in 5.x,
                           // counted and never read.
};
TORCH_MODULE(ReformerForMaskedLm);

}  // namespace torchbench::hf::reformer

#endif  // TORCHBENCH_MODELS_NLP_COMMON_HF_REFORMER_H_
