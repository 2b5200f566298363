// The self-attention layers of pinned transformers's Reformer
// (models/reformer/modeling_reformer.py): LocalSelfAttention and
// LSHSelfAttention with their EfficientAttentionMixin helpers, and
// ReformerConfig. Used by nlp/common/hf_reformer.h.
#ifndef TORCHBENCH_MODELS_NLP_COMMON_HF_REFORMER_ATTENTION_H_
#define TORCHBENCH_MODELS_NLP_COMMON_HF_REFORMER_ATTENTION_H_

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace torchbench::hf::reformer {

enum class AttentionType { kLocal, kLsh };

// ReformerConfig's defaults, num_buckets as TorchBench sets it.
struct ReformerConfig {
  int64_t vocab_size = 320;
  int64_t hidden_size = 256;
  int64_t num_attention_heads = 12;
  int64_t attention_head_size = 64;
  std::vector<AttentionType> attn_layers = {
      AttentionType::kLocal, AttentionType::kLsh,   AttentionType::kLocal,
      AttentionType::kLsh,   AttentionType::kLocal, AttentionType::kLsh};
  std::vector<int64_t> axial_pos_shape = {64, 64};
  std::vector<int64_t> axial_pos_embds_dim = {64, 192};
  double axial_norm_std = 1.0;
  int64_t feed_forward_size = 512;
  double hidden_dropout_prob = 0.05;
  double local_attention_probs_dropout_prob = 0.05;
  double lsh_attention_probs_dropout_prob = 0.0;
  int64_t local_attn_chunk_length = 64;
  int64_t local_num_chunks_before = 1;
  int64_t local_num_chunks_after = 0;
  int64_t lsh_attn_chunk_length = 64;
  int64_t lsh_num_chunks_before = 1;
  int64_t lsh_num_chunks_after = 0;
  int64_t num_buckets = 128;  // model_factory.py sets it (default None).
  int64_t num_hashes = 1;
  std::optional<uint64_t> hash_seed;
  int64_t max_position_embeddings = 4096;
  double layer_norm_eps = 1e-12;
  int64_t chunk_size_feed_forward = 0;  // PretrainedConfig's default.
  int64_t chunk_size_lm_head = 0;
  double initializer_range = 0.02;
  int64_t pad_token_id = 0;
};

// EfficientAttentionMixin._look_adjacent: each chunk (dim 2) followed, along
// dim 3, by its `before` previous and `after` next chunks, cyclically.
inline torch::Tensor LookAdjacent(const torch::Tensor& vectors, int64_t before,
                                  int64_t after) {
  if (before == 0 && after == 0) return vectors;
  std::vector<torch::Tensor> slices;
  for (int64_t i = -before; i <= after; ++i) {
    slices.push_back(
        i == 0 ? vectors
               : torch::cat({vectors.slice(2, i), vectors.slice(2, 0, i)}, 2));
  }
  return torch::cat(slices, 3);
}

// _split_hidden_size_dim: B x L x (H * D) -> B x H x L x D.
inline torch::Tensor SplitHiddenSize(const torch::Tensor& x, int64_t heads,
                                     int64_t head_size) {
  return x.view({x.size(0), x.size(1), heads, head_size}).transpose(2, 1);
}

// _merge_hidden_size_dims: B x H x L x D -> B x L x (H * D).
inline torch::Tensor MergeHiddenSize(const torch::Tensor& x, int64_t heads,
                                     int64_t head_size) {
  torch::Tensor permuted = x.permute({0, 2, 1, 3});
  return torch::reshape(permuted, {permuted.size(0), -1, heads * head_size});
}

// _split_seq_length_dim_to: the sequence dim (2) of B x H x L [x D] split
// into f1 x f2.
inline torch::Tensor SplitSequence(const torch::Tensor& x, int64_t f1,
                                   int64_t f2, int64_t heads) {
  if (x.dim() == 4) {
    return torch::reshape(x, {x.size(0), heads, f1, f2, x.size(3)});
  }
  TORCH_CHECK(x.dim() == 3, "rank 3 or 4 expected, got ", x.dim());
  return torch::reshape(x, {x.size(0), heads, f1, f2});
}

// exp(dots - logsumexp(dots)) as the reference writes its softmax, and the
// logsumexp, which LSH attention keeps to combine hash rounds.
inline std::pair<torch::Tensor, torch::Tensor> ExpNormalize(
    const torch::Tensor& dots) {
  torch::Tensor logits = torch::logsumexp(dots, -1, /*keepdim=*/true);
  return {torch::exp(dots - logits), logits};
}

// The fp16 or fp32 mask value, as the reference picks it by dtype.
inline torch::Tensor MaskValue(const torch::Tensor& dots,
                               const torch::Tensor& float16,
                               const torch::Tensor& float32) {
  return dots.scalar_type() == torch::kHalf ? float16.to(torch::kHalf)
                                            : float32;
}

// The bias-free hidden_size -> heads x head_size projection `name` of an
// attention module.
inline torch::nn::Linear RegisterProjection(torch::nn::Module& module,
                                            const char* name,
                                            const ReformerConfig& config) {
  return module.register_module(
      name,
      torch::nn::Linear(torch::nn::LinearOptions(config.hidden_size,
                                                 config.num_attention_heads *
                                                     config.attention_head_size)
                            .bias(false)));
}

// LocalSelfAttention: each chunk attends to itself and its neighbours.
class LocalSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit LocalSelfAttentionImpl(const ReformerConfig& config)
      : heads_(config.num_attention_heads),
        head_size_(config.attention_head_size),
        chunk_length_(config.local_attn_chunk_length),
        before_(config.local_num_chunks_before),
        after_(config.local_num_chunks_after),
        dropout_(config.local_attention_probs_dropout_prob) {
    auto linear = [&](const char* name) {
      return RegisterProjection(*this, name, config);
    };
    query_ = linear("query");
    key_ = linear("key");
    value_ = linear("value");
    mask_value_float16_ =
        register_buffer("mask_value_float16", torch::tensor(-1e4));
    mask_value_float32_ =
        register_buffer("mask_value_float32", torch::tensor(-1e9));
  }

  // `attention_mask`: B x L, 0 at padding (Eval inputs padded to a multiple
  // of the chunk length), or undefined.
  torch::Tensor forward(const torch::Tensor& hidden_states,
                        const torch::Tensor& attention_mask) {
    const int64_t batch = hidden_states.size(0);
    const int64_t length = hidden_states.size(1);
    torch::Tensor query =
        SplitHiddenSize(query_(hidden_states), heads_, head_size_);
    torch::Tensor key =
        SplitHiddenSize(key_(hidden_states), heads_, head_size_);
    torch::Tensor value =
        SplitHiddenSize(value_(hidden_states), heads_, head_size_);
    key = key / std::sqrt(static_cast<double>(head_size_));
    const bool standard = length <= chunk_length_;
    if (!standard) {
      query = SplitSequence(query, -1, chunk_length_, heads_);
      key = LookAdjacent(SplitSequence(key, -1, chunk_length_, heads_), before_,
                         after_);
      value = LookAdjacent(SplitSequence(value, -1, chunk_length_, heads_),
                           before_, after_);
    }
    torch::Tensor dots = torch::matmul(query, key.transpose(-1, -2));
    // _compute_attn_mask: the padding mask chunked as the keys (MaskedLM is
    // no decoder: no causal mask).
    if (attention_mask.defined()) {
      torch::Tensor mask = attention_mask.to(torch::kBool).unsqueeze(1);
      if (!standard) {
        mask = LookAdjacent(SplitSequence(mask, -1, chunk_length_, 1), before_,
                            after_);
      }
      mask = mask.unsqueeze(-2).expand(dots.sizes());
      dots = torch::where(
          mask, dots,
          MaskValue(dots, mask_value_float16_, mask_value_float32_));
    }
    torch::Tensor probs = ExpNormalize(dots).first;
    probs = torch::dropout(probs, dropout_, is_training());
    torch::Tensor out = torch::matmul(probs, value);
    if (!standard) out = out.flatten(2, 3);
    TORCH_CHECK(out.size(0) == batch && out.size(2) == length);
    return MergeHiddenSize(out, heads_, head_size_);
  }

 private:
  int64_t heads_, head_size_, chunk_length_, before_, after_;
  double dropout_;
  torch::nn::Linear query_{nullptr}, key_{nullptr}, value_{nullptr};
  torch::Tensor mask_value_float16_, mask_value_float32_;
};
TORCH_MODULE(LocalSelfAttention);

// ReverseSort: gathers the attention output and logits back to sequence
// order; its backward gathers the gradients into bucket order (the
// reference's custom Function, not autograd's scatter).
class ReverseSort : public torch::autograd::Function<ReverseSort> {
 public:
  static torch::autograd::variable_list forward(
      torch::autograd::AutogradContext* ctx, const torch::Tensor& out_vectors,
      const torch::Tensor& logits, const torch::Tensor& sorted_bucket_idx,
      const torch::Tensor& undo_sorted_bucket_idx) {
    torch::NoGradGuard no_grad;
    ctx->saved_data["sorted_bucket_idx"] = sorted_bucket_idx;
    torch::Tensor expanded =
        undo_sorted_bucket_idx.unsqueeze(-1).expand(out_vectors.sizes());
    return {torch::gather(out_vectors, 2, expanded),
            torch::gather(logits, 2, undo_sorted_bucket_idx)};
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    const torch::Tensor sorted =
        ctx->saved_data["sorted_bucket_idx"].toTensor();
    torch::Tensor expanded = sorted.unsqueeze(-1).expand(grads[0].sizes());
    return {torch::gather(grads[0], 2, expanded),
            torch::gather(grads[1], 2, sorted), torch::Tensor(),
            torch::Tensor()};
  }
};

// LSHSelfAttention's forward result.
struct LshOutput {
  torch::Tensor hidden_states;
  torch::Tensor buckets;  // B x H x num_hashes x L; undefined when unchunked.
};

// LSHSelfAttention: shared query/key vectors hashed by random rotations into
// buckets, sorted by bucket, attended chunk by chunk with the previous chunk,
// a token masked from attending to itself, and sorted back.
class LshSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit LshSelfAttentionImpl(const ReformerConfig& config)
      : heads_(config.num_attention_heads),
        head_size_(config.attention_head_size),
        chunk_length_(config.lsh_attn_chunk_length),
        before_(config.lsh_num_chunks_before),
        after_(config.lsh_num_chunks_after),
        num_buckets_(config.num_buckets),
        num_hashes_(config.num_hashes),
        hash_seed_(config.hash_seed),
        dropout_(config.lsh_attention_probs_dropout_prob) {
    TORCH_CHECK(num_buckets_ % 2 == 0, "num_buckets must be even");
    auto linear = [&](const char* name) {
      return RegisterProjection(*this, name, config);
    };
    query_key_ = linear("query_key");
    value_ = linear("value");
    self_mask_value_float16_ =
        register_buffer("self_mask_value_float16", torch::tensor(-1e3));
    self_mask_value_float32_ =
        register_buffer("self_mask_value_float32", torch::tensor(-1e5));
    mask_value_float16_ =
        register_buffer("mask_value_float16", torch::tensor(-1e4));
    mask_value_float32_ =
        register_buffer("mask_value_float32", torch::tensor(-1e9));
  }

  // `buckets`: the forward's buckets when the reversible backward recomputes
  // the layer (no new rotations), else undefined. `attention_mask`: as
  // LocalSelfAttention's.
  LshOutput forward(const torch::Tensor& hidden_states, torch::Tensor buckets,
                    const torch::Tensor& attention_mask) {
    const int64_t batch = hidden_states.size(0);
    const int64_t length = hidden_states.size(1);
    torch::Tensor query_key =
        SplitHiddenSize(query_key_(hidden_states), heads_, head_size_);
    torch::Tensor value =
        SplitHiddenSize(value_(hidden_states), heads_, head_size_);
    const bool standard = length <= chunk_length_;
    torch::Tensor sorted_bucket_idx, undo_sorted_bucket_idx, idx_per_hash;
    if (!standard) {
      if (!buckets.defined()) {
        buckets = HashVectors(query_key, attention_mask);
      } else {
        buckets = buckets.view({batch, heads_, num_hashes_ * length});
      }
      {
        torch::NoGradGuard no_grad;
        // _stable_argsort: positions break ties, so the sort is stable.
        const int64_t n = buckets.size(-1);
        torch::Tensor offset = torch::arange(n, buckets.options())
                                   .view({1, 1, -1})
                                   .expand(buckets.sizes());
        sorted_bucket_idx = torch::argsort(n * buckets + offset.remainder(n),
                                           /*dim=*/int64_t{-1},
                                           /*descending=*/false);
        torch::Tensor indices = torch::arange(n, buckets.options())
                                    .view({1, 1, -1})
                                    .expand(sorted_bucket_idx.sizes());
        undo_sorted_bucket_idx = torch::empty_like(sorted_bucket_idx)
                                     .scatter_(-1, sorted_bucket_idx, indices);
      }
      idx_per_hash = sorted_bucket_idx.remainder(length);
      query_key = SplitSequence(GatherByExpansion(query_key, idx_per_hash), -1,
                                chunk_length_, heads_);
      value = SplitSequence(GatherByExpansion(value, idx_per_hash), -1,
                            chunk_length_, heads_);
    } else {
      idx_per_hash =
          torch::arange(
              length,
              torch::TensorOptions(torch::kLong).device(query_key.device()))
              .repeat({batch, heads_, 1});
    }
    // _len_and_dim_norm: keys are the length-normalised shared vectors.
    torch::Tensor variance =
        torch::mean(torch::pow(query_key, 2), -1, /*keepdim=*/true);
    torch::Tensor key = query_key * torch::rsqrt(variance + 1e-6) /
                        std::sqrt(static_cast<double>(head_size_));

    auto [out, logits] =
        Attend(query_key, key, value, idx_per_hash, attention_mask, standard);
    if (!standard) {
      auto sorted = ReverseSort::apply(out, logits, sorted_bucket_idx,
                                       undo_sorted_bucket_idx);
      out = sorted[0];
      logits = sorted[1];
      if (num_hashes_ > 1) {
        // The hash rounds weighted by their share of the softmax mass.
        out = SplitSequence(out, num_hashes_, length, heads_);
        logits =
            SplitSequence(logits, num_hashes_, length, heads_).unsqueeze(-1);
        torch::Tensor probs =
            torch::exp(logits - torch::logsumexp(logits, 2, /*keepdim=*/true));
        out = torch::sum(out * probs, 2);
      }
    }
    LshOutput result;
    result.hidden_states = MergeHiddenSize(out, heads_, head_size_);
    if (buckets.defined()) {
      result.buckets = buckets.view({batch, heads_, num_hashes_, -1});
    }
    return result;
  }

 private:
  // _hash_vectors: argmax over [xR, -xR] for a fresh Gaussian rotation R per
  // hash round (drawn from the default generator, reseeded with hash_seed
  // when set), offset so that rounds do not share buckets.
  // Padding tokens (`attention_mask` 0) get a bucket of their own.
  torch::Tensor HashVectors(torch::Tensor vectors,
                            const torch::Tensor& attention_mask) {
    const int64_t batch = vectors.size(0);
    vectors = vectors.detach();
    if (hash_seed_) torch::manual_seed(*hash_seed_);
    torch::Tensor rotations =
        torch::randn({heads_, vectors.size(-1), num_hashes_, num_buckets_ / 2},
                     vectors.options());
    torch::Tensor rotated =
        torch::einsum("bmtd,mdhr->bmhtr", {vectors, rotations});
    rotated = torch::cat({rotated, -rotated}, -1);
    torch::Tensor buckets = torch::argmax(rotated, -1);
    int64_t num_buckets = num_buckets_;
    if (attention_mask.defined() && attention_mask.sum().item<int64_t>() <
                                        batch * attention_mask.size(-1)) {
      ++num_buckets;
      torch::Tensor keep = attention_mask.to(torch::kBool)
                               .unsqueeze(1)
                               .unsqueeze(1)
                               .expand(buckets.sizes());
      buckets = torch::where(keep, buckets,
                             torch::tensor(num_buckets - 1, buckets.options()));
    }
    torch::Tensor offsets =
        (torch::arange(num_hashes_, buckets.options()) * num_buckets)
            .view({1, 1, -1, 1})
            .expand({batch, heads_, num_hashes_, 1});
    return (buckets + offsets).flatten(2, 3);
  }

  // _gather_by_expansion: the vectors of every hash round in bucket order.
  torch::Tensor GatherByExpansion(const torch::Tensor& vectors,
                                  const torch::Tensor& idxs) {
    torch::Tensor expanded =
        idxs.unsqueeze(-1).expand({-1, -1, -1, head_size_});
    return torch::gather(vectors.repeat({1, 1, num_hashes_, 1}), 2, expanded);
  }

  // _attend: chunked attention with the previous chunk, no token attending
  // to itself unless it has nothing else. Returns the output and logsumexp.
  std::pair<torch::Tensor, torch::Tensor> Attend(
      const torch::Tensor& query, torch::Tensor key, torch::Tensor value,
      const torch::Tensor& idx_per_hash, const torch::Tensor& attention_mask,
      bool standard) {
    if (!standard) {
      key = LookAdjacent(key, before_, after_);
      value = LookAdjacent(value, before_, after_);
    }
    torch::Tensor dots = torch::matmul(query, key.transpose(-1, -2));
    torch::Tensor query_idx = idx_per_hash, key_idx = idx_per_hash;
    if (!standard) {
      query_idx = SplitSequence(idx_per_hash, -1, chunk_length_, heads_);
      key_idx = LookAdjacent(query_idx, before_, after_);
    }
    // _compute_attn_mask: the padding mask of each key, in bucket order.
    if (attention_mask.defined()) {
      torch::Tensor mask = attention_mask.to(torch::kBool).unsqueeze(1);
      if (!standard) {
        std::vector<int64_t> shape = query_idx.sizes().vec();
        shape.back() = -1;
        mask = torch::gather(mask.unsqueeze(1).expand(shape), -1, key_idx);
      }
      mask = mask.unsqueeze(-2).expand(dots.sizes());
      dots = torch::where(
          mask, dots,
          MaskValue(dots, mask_value_float16_, mask_value_float32_));
    }
    torch::Tensor self_mask =
        torch::ne(query_idx.unsqueeze(-1), key_idx.unsqueeze(-2));
    dots = torch::where(
        self_mask, dots,
        MaskValue(dots, self_mask_value_float16_, self_mask_value_float32_));
    auto [probs, logits] = ExpNormalize(dots);
    probs = torch::dropout(probs, dropout_, is_training());
    torch::Tensor out = torch::matmul(probs, value);
    if (out.dim() > 4) {
      logits = logits.flatten(2, 3).squeeze(-1);
      out = out.flatten(2, 3);
    }
    return {out, logits};
  }

  int64_t heads_, head_size_, chunk_length_, before_, after_, num_buckets_,
      num_hashes_;
  std::optional<uint64_t> hash_seed_;
  double dropout_;
  torch::nn::Linear query_key_{nullptr}, value_{nullptr};
  torch::Tensor self_mask_value_float16_, self_mask_value_float32_,
      mask_value_float16_, mask_value_float32_;
};
TORCH_MODULE(LshSelfAttention);

}  // namespace torchbench::hf::reformer

#endif  // TORCHBENCH_MODELS_NLP_COMMON_HF_REFORMER_ATTENTION_H_
