// BigBird's block-sparse attention as pinned transformers computes it
// (models/big_bird/modeling_big_bird.py: BigBirdModel
// .create_masks_for_block_sparse_attn and BigBirdBlockSparseAttention
// .bigbird_block_sparse_attention, torch_gather_b2,
// _create_rand_mask_from_inputs), op for op: the five parts (query block 0,
// block 1, the middle blocks, block -2, block -1), their -10000 mask
// penalties, and the full attention-probability matrix the reference
// reassembles from the block weights at every call. Used by
// models/nlp/hf_big_bird.cpp.
#ifndef TORCHBENCH_MODELS_NLP_COMMON_BIG_BIRD_SPARSE_ATTENTION_H_
#define TORCHBENCH_MODELS_NLP_COMMON_BIG_BIRD_SPARSE_ATTENTION_H_

#include <torch/torch.h>

#include <cmath>
#include <cstdint>

namespace torchbench::big_bird {

// create_masks_for_block_sparse_attn of a B x L attention mask (1: token,
// 0: padding).
struct SparseMasks {
  torch::Tensor blocked;  // B x L/b x b
  torch::Tensor band;     // B x 1 x (L/b - 4) x b x 3b
  torch::Tensor from;     // B x 1 x L x 1
  torch::Tensor to;       // B x 1 x 1 x L
};

inline SparseMasks MakeSparseMasks(const torch::Tensor& attention_mask,
                                   int64_t block) {
  const int64_t batch = attention_mask.size(0);
  const int64_t length = attention_mask.size(1);
  TORCH_CHECK(length % block == 0, "Sequence length must be multiple of ",
              "block size, but sequence length is ", length,
              ", while block size is ", block, ".");
  SparseMasks m;
  m.blocked = attention_mask.view({batch, length / block, block});
  const torch::Tensor exp_blocked_to_pad =
      torch::cat({m.blocked.slice(1, 1, -3), m.blocked.slice(1, 2, -2),
                  m.blocked.slice(1, 3, -1)},
                 2);
  m.band = torch::einsum("blq,blk->blqk",
                         {m.blocked.slice(1, 2, -2), exp_blocked_to_pad})
               .unsqueeze(1);
  m.from = attention_mask.view({batch, 1, length, 1});
  m.to = attention_mask.view({batch, 1, 1, length});
  return m;
}

namespace internal {

// The last `n` entries of `dim` (Python's t[..., -n:]).
inline torch::Tensor Last(const torch::Tensor& t, int64_t dim, int64_t n) {
  return t.slice(dim, t.size(dim) - n);
}

// torch_gather_b2: the blocks of `params` (B x H x N x b x D) that
// `indices` (B x H x W x R) name, B x H x W*R x b x D.
inline torch::Tensor GatherBlocks(const torch::Tensor& params,
                                  const torch::Tensor& indices) {
  const torch::Tensor flat =
      indices.reshape({indices.size(0), indices.size(1), -1});
  return torch::gather(params, 2,
                       flat.unsqueeze(-1).unsqueeze(-1).expand(
                           {-1, -1, -1, params.size(3), params.size(4)}));
}

// The attention weights of the five parts.
struct PartWeights {
  torch::Tensor first, second, middle, second_last, last;
};

// The B x H x L x L attention-probability matrix the pinned transformers
// assembles from the part weights (slice assigns plus four scatters), zero
// where a query does not attend.
inline torch::Tensor AttentionProbs(const PartWeights& w,
                                    const torch::Tensor& rand_attn,
                                    int64_t length, int64_t b) {
  const int64_t batch = w.first.size(0);
  const int64_t heads = w.first.size(1);
  const int64_t blocks = length / b;
  const int64_t middle = blocks - 4;
  const int64_t r = rand_attn.size(3);
  using torch::indexing::Slice;
  torch::Tensor probs =
      torch::zeros({batch, heads, length, length}, w.first.options());
  probs.index_put_({Slice(), Slice(), Slice(0, b)}, w.first);
  probs.index_put_({Slice(), Slice(), Slice(b, 2 * b), Slice(0, 3 * b)},
                   w.second.slice(3, 0, 3 * b));
  probs.index_put_({Slice(), Slice(), Slice(b, 2 * b), Slice(length - b)},
                   w.second.slice(3, 3 * b, 4 * b));
  probs.index_put_(
      {Slice(), Slice(), Slice(2 * b, length - 2 * b), Slice(0, b)},
      w.middle.slice(4, 0, b).view({batch, heads, -1, b}));
  probs.index_put_(
      {Slice(), Slice(), Slice(2 * b, length - 2 * b), Slice(length - b)},
      Last(w.middle, 4, b).view({batch, heads, -1, b}));
  probs.index_put_(
      {Slice(), Slice(), Slice(length - 2 * b, length - b), Slice(0, b)},
      w.second_last.slice(3, 0, b));
  probs.index_put_({Slice(), Slice(), Slice(length - 2 * b, length - b),
                    Slice(length - 3 * b)},
                   w.second_last.slice(3, b, 4 * b));
  probs.index_put_({Slice(), Slice(), Slice(length - b)}, w.last);

  const torch::Tensor view = probs.view({batch, heads, blocks, b, blocks, b});
  // Query block 1's and block -2's random keys.
  auto scatter_row = [&](int64_t q_block, const torch::Tensor& weights,
                         const torch::Tensor& ids) {
    const torch::Tensor values =
        weights.slice(3, 4 * b).view({batch, heads, b, r, b});
    const torch::Tensor index = ids.unsqueeze(-1)
                                    .expand({-1, -1, -1, b})
                                    .unsqueeze(2)
                                    .expand({-1, -1, b, -1, -1});
    view.select(2, q_block).scatter_(3, index, values);
  };
  scatter_row(1, w.second, rand_attn.select(2, 0));
  // The middle blocks' sliding window: block i attends to blocks i+1..i+3.
  const torch::Tensor sliding =
      w.middle.slice(4, b, 4 * b).view({batch, heads, middle, b, 3, b});
  const auto long_options = torch::dtype(torch::kLong).device(probs.device());
  const torch::Tensor diagonal =
      (torch::arange(middle, long_options).unsqueeze(1) +
       torch::arange(3, long_options).unsqueeze(0))
          .view({1, 1, middle, 1, 3, 1})
          .expand({batch, heads, middle, b, 3, b});
  view.slice(2, 2, -2).slice(4, 1, -1).scatter_(4, diagonal, sliding);
  // The middle blocks' random keys.
  const torch::Tensor middle_random =
      w.middle.slice(4, 4 * b, w.middle.size(4) - b)
          .view({batch, heads, middle, b, r, b});
  const torch::Tensor middle_index =
      rand_attn.slice(2, 1, -1)
          .unsqueeze(-1)
          .unsqueeze(-1)
          .expand({batch, heads, middle, r, b, b})
          .transpose(3, 4);
  view.slice(2, 2, -2).scatter_(4, middle_index, middle_random);
  scatter_row(blocks - 2, w.second_last, rand_attn.select(2, -1));
  return probs;
}

}  // namespace internal

// bigbird_block_sparse_attention for q, k, v of B x H x L x D, `masks` in
// the hidden dtype (the blocked mask in the attention mask's), `rand_attn`
// H x (L/b - 2) x R random block ids (big_bird_random_blocks.h) on q's
// device, block size `b`. Returns the context as B x L x H x D.
inline torch::Tensor BlockSparseAttention(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const SparseMasks& masks, const torch::Tensor& random_blocks, int64_t b) {
  using internal::Last;
  const int64_t batch = q.size(0);
  const int64_t heads = q.size(1);
  const int64_t length = q.size(2);
  const int64_t blocks = length / b;
  const int64_t r = random_blocks.size(2);
  TORCH_CHECK(length % b == 0,
              "Query sided sequence length must be multiple of block size");
  const double rsqrt_d = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  constexpr double kPenalty = -10000.0;
  const torch::Tensor& to = masks.to;

  const torch::Tensor rand_attn = random_blocks.unsqueeze(0)
                                      .expand({batch, heads, blocks - 2, r})
                                      .contiguous();
  // _create_rand_mask_from_inputs: B x H x (L/b - 2) x b x R*b.
  torch::Tensor rand_mask = torch::gather(
      masks.blocked, 1,
      rand_attn.reshape({batch, -1}).unsqueeze(-1).expand({-1, -1, b}));
  rand_mask = rand_mask.view({batch, heads, blocks - 2, r * b});
  rand_mask = torch::einsum("blq,bhlk->bhlqk",
                            {masks.blocked.slice(1, 1, -1), rand_mask});

  const torch::Tensor bq = q.view({batch, heads, blocks, b, -1});
  const torch::Tensor bk = k.view({batch, heads, blocks, b, -1});
  const torch::Tensor bv = v.view({batch, heads, blocks, b, -1});
  // B x H x (L/b - 2) x R*b x D
  const torch::Tensor gathered_key =
      internal::GatherBlocks(bk, rand_attn)
          .view({batch, heads, blocks - 2, r * b, -1});
  const torch::Tensor gathered_value =
      internal::GatherBlocks(bv, rand_attn)
          .view({batch, heads, blocks - 2, r * b, -1});

  internal::PartWeights w;
  // 1st part: query block 0 attends to every key.
  torch::Tensor first_product =
      torch::matmul(bq.select(2, 0), k.transpose(-1, -2)) * rsqrt_d;
  first_product += (1.0 - to) * kPenalty;
  w.first = torch::softmax(first_product, -1);
  const torch::Tensor first_context = torch::matmul(w.first, v).unsqueeze(2);

  // 2nd part: query block 1 against keys 0, 1, 2, -1 and its random blocks.
  const torch::Tensor second_key =
      torch::cat({bk.select(2, 0), bk.select(2, 1), bk.select(2, 2),
                  bk.select(2, -1), gathered_key.select(2, 0)},
                 2);
  const torch::Tensor second_value =
      torch::cat({bv.select(2, 0), bv.select(2, 1), bv.select(2, 2),
                  bv.select(2, -1), gathered_value.select(2, 0)},
                 2);
  torch::Tensor second_product =
      torch::matmul(bq.select(2, 1), second_key.transpose(-1, -2));
  const torch::Tensor second_seq_pad =
      torch::cat({to.slice(3, 0, 3 * b), Last(to, 3, b),
                  torch::ones({batch, 1, 1, r * b}, to.options())},
                 3);
  const torch::Tensor second_rand_pad =
      torch::cat({torch::ones({batch, heads, b, 4 * b}, rand_mask.options()),
                  rand_mask.select(2, 0)},
                 3);
  second_product = second_product * rsqrt_d;
  second_product +=
      (1.0 - torch::minimum(second_seq_pad, second_rand_pad)) * kPenalty;
  w.second = torch::softmax(second_product, -1);
  const torch::Tensor second_context =
      torch::matmul(w.second, second_value).unsqueeze(2);

  // 3rd part: query blocks 2..-3 against a sliding window of 3 blocks (the
  // shifted-blocks trick), their random blocks and the global blocks.
  const torch::Tensor exp_blocked_key = torch::cat(
      {bk.slice(2, 1, -3), bk.slice(2, 2, -2), bk.slice(2, 3, -1)}, 3);
  const torch::Tensor exp_blocked_value = torch::cat(
      {bv.slice(2, 1, -3), bv.slice(2, 2, -2), bv.slice(2, 3, -1)}, 3);
  const torch::Tensor middle_query = bq.slice(2, 2, -2);
  torch::Tensor inner_band =
      torch::matmul(middle_query, exp_blocked_key.transpose(-1, -2)) * rsqrt_d;
  torch::Tensor rand_band =
      torch::matmul(middle_query,
                    gathered_key.slice(2, 1, -1).transpose(-1, -2)) *
      rsqrt_d;
  torch::Tensor first_band =
      torch::einsum("bhlqd,bhkd->bhlqk", {middle_query, bk.select(2, 0)}) *
      rsqrt_d;
  torch::Tensor last_band =
      torch::einsum("bhlqd,bhkd->bhlqk", {middle_query, bk.select(2, -1)}) *
      rsqrt_d;
  inner_band += (1.0 - masks.band) * kPenalty;
  first_band += (1.0 - to.slice(3, 0, b).unsqueeze(3)) * kPenalty;
  last_band += (1.0 - Last(to, 3, b).unsqueeze(3)) * kPenalty;
  rand_band += (1.0 - rand_mask.slice(2, 1, -1)) * kPenalty;
  const torch::Tensor band_product =
      torch::cat({first_band, inner_band, rand_band, last_band}, -1);
  w.middle = torch::softmax(band_product, -1);
  torch::Tensor context =
      torch::matmul(w.middle.slice(4, b, 4 * b), exp_blocked_value);
  context += torch::matmul(w.middle.slice(4, 4 * b, w.middle.size(4) - b),
                           gathered_value.slice(2, 1, -1));
  context += torch::einsum("bhlqk,bhkd->bhlqd",
                           {w.middle.slice(4, 0, b), bv.select(2, 0)});
  context += torch::einsum("bhlqk,bhkd->bhlqd",
                           {Last(w.middle, 4, b), bv.select(2, -1)});

  // 4th part: query block -2 against keys 0, -3, -2, -1 and its random
  // blocks.
  const torch::Tensor second_last_key =
      torch::cat({bk.select(2, 0), bk.select(2, -3), bk.select(2, -2),
                  bk.select(2, -1), gathered_key.select(2, -1)},
                 2);
  const torch::Tensor second_last_value =
      torch::cat({bv.select(2, 0), bv.select(2, -3), bv.select(2, -2),
                  bv.select(2, -1), gathered_value.select(2, -1)},
                 2);
  torch::Tensor second_last_product =
      torch::matmul(bq.select(2, -2), second_last_key.transpose(-1, -2));
  const torch::Tensor second_last_seq_pad =
      torch::cat({to.slice(3, 0, b), Last(to, 3, 3 * b),
                  torch::ones({batch, 1, 1, r * b}, to.options())},
                 3);
  const torch::Tensor second_last_rand_pad =
      torch::cat({torch::ones({batch, heads, b, 4 * b}, rand_mask.options()),
                  rand_mask.select(2, -1)},
                 3);
  second_last_product = second_last_product * rsqrt_d;
  second_last_product +=
      (1.0 - torch::minimum(second_last_seq_pad, second_last_rand_pad)) *
      kPenalty;
  w.second_last = torch::softmax(second_last_product, -1);
  const torch::Tensor second_last_context =
      torch::matmul(w.second_last, second_last_value).unsqueeze(2);

  // 5th part: query block -1 attends to every key.
  torch::Tensor last_product =
      torch::matmul(bq.select(2, -1), k.transpose(-1, -2)) * rsqrt_d;
  last_product += (1.0 - to) * kPenalty;
  w.last = torch::softmax(last_product, -1);
  const torch::Tensor last_context = torch::matmul(w.last, v).unsqueeze(2);

  torch::Tensor out = torch::cat({first_context, second_context, context,
                                  second_last_context, last_context},
                                 2);
  out = out.view({batch, heads, length, -1}) * masks.from;
  // Returned by the reference as the layer's attention weights; the MLM
  // model never reads them.
  [[maybe_unused]] const torch::Tensor probs =
      internal::AttentionProbs(w, rand_attn, length, b);
  return out.transpose(1, 2);
}

}  // namespace torchbench::big_bird

#endif  // TORCHBENCH_MODELS_NLP_COMMON_BIG_BIRD_SPARSE_ATTENTION_H_
