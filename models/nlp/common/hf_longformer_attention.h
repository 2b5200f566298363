// LongformerSelfAttention's tensor algebra as pinned transformers computes
// it (models/longformer/modeling_longformer.py), op for op, so that the
// same kernels (and the same rounding) run as in the reference: the
// sliding-window ("banded") attention built from overlapping chunks made
// with as_strided, the pad-and-diagonalise trick that turns a chunk's
// diagonals into columns and back, the masking of the band's invalid
// corners, and the global-attention path (tokens that attend to, and are
// attended by, every token).
//
// Layouts follow the reference: B batch, L sequence (a multiple of 2w),
// H heads, D head dim, w the one-sided window (attention_window / 2),
// G the most global tokens of any sequence in the batch.
#ifndef TORCHBENCH_MODELS_NLP_COMMON_HF_LONGFORMER_ATTENTION_H_
#define TORCHBENCH_MODELS_NLP_COMMON_HF_LONGFORMER_ATTENTION_H_

#include <torch/types.h>

#include <cstdint>
#include <limits>
#include <utility>

#include "nlp/common/hf_layers.h"

namespace torchbench::hf::longformer {

using torch::indexing::Slice;

// _chunk: BH x L x D -> BH x (2 L / 2w - 1) x 2w x D, chunks of 2w that
// overlap by w, as a strided view (no copy).
inline torch::Tensor Chunk(const torch::Tensor& x, int64_t w) {
  torch::Tensor chunks =
      x.view({x.size(0), x.size(1) / (2 * w), 2 * w, x.size(2)});
  auto sizes = chunks.sizes().vec();
  auto strides = chunks.strides().vec();
  sizes[1] = sizes[1] * 2 - 1;
  strides[1] = strides[1] / 2;
  return chunks.as_strided(sizes, strides);
}

// _mask_invalid_locations: the band's first w rows cannot look w back and
// the last w rows cannot look w ahead; those scores become -inf, in place.
inline void MaskInvalidLocations(torch::Tensor& scores, int64_t w) {
  const torch::Tensor beginning_2d =
      torch::ones({w, w + 1}, scores.options()).tril().flip({0});
  const torch::Tensor beginning =
      beginning_2d.unsqueeze(0).unsqueeze(2);  // 1 x w x 1 x (w + 1)
  const torch::Tensor ending = beginning.flip({1, 3});
  torch::Tensor begin_part =
      scores.index({Slice(), Slice(0, w), Slice(), Slice(0, w + 1)});
  begin_part.copy_(torch::where(
      beginning.expand(begin_part.sizes()).to(torch::kBool),
      torch::full_like(begin_part, -std::numeric_limits<double>::infinity()),
      begin_part));
  torch::Tensor end_part =
      scores.index({Slice(), Slice(-w), Slice(), Slice(-(w + 1))});
  end_part.copy_(torch::where(
      ending.expand(end_part.sizes()).to(torch::kBool),
      torch::full_like(end_part, -std::numeric_limits<double>::infinity()),
      end_part));
}

// _sliding_chunks_query_key_matmul: B x L x H x D query and key ->
// B x L x H x (2w + 1) scores, column j of row i the score against key
// i - w + j (w columns back, itself, w ahead).
inline torch::Tensor SlidingChunksQueryKey(const torch::Tensor& query,
                                           const torch::Tensor& key,
                                           int64_t w) {
  const int64_t batch = query.size(0), length = query.size(1),
                heads = query.size(2), head_dim = query.size(3);
  TORCH_CHECK(length % (2 * w) == 0, "sequence length ", length,
              " is not a multiple of ", 2 * w);
  const int64_t chunks = length / w - 1;
  const torch::Tensor q = Chunk(
      query.transpose(1, 2).reshape({batch * heads, length, head_dim}), w);
  const torch::Tensor k =
      Chunk(key.transpose(1, 2).reshape({batch * heads, length, head_dim}), w);
  torch::Tensor chunk_scores = torch::einsum("bcxd,bcyd->bcxy", {q, k});
  // _pad_and_transpose_last_two_dims: one zero row, then the rows read as
  // columns, which puts every diagonal of a chunk into a column.
  chunk_scores = torch::constant_pad_nd(chunk_scores, {0, 0, 0, 1});
  {
    auto sizes = chunk_scores.sizes().vec();
    std::swap(sizes[2], sizes[3]);
    chunk_scores = chunk_scores.view(sizes);
  }
  torch::Tensor scores =
      chunk_scores.new_zeros({batch * heads, chunks + 1, w, 2 * w + 1});
  // The main diagonal and the upper triangle.
  scores.index({Slice(), Slice(0, -1), Slice(), Slice(w)})
      .copy_(
          chunk_scores.index({Slice(), Slice(), Slice(0, w), Slice(0, w + 1)}));
  scores.index({Slice(), -1, Slice(), Slice(w)})
      .copy_(chunk_scores.index({Slice(), -1, Slice(w), Slice(0, w + 1)}));
  // The lower triangle.
  scores.index({Slice(), Slice(1), Slice(), Slice(0, w)})
      .copy_(chunk_scores.index(
          {Slice(), Slice(), Slice(-(w + 1), -1), Slice(w + 1)}));
  scores.index({Slice(), 0, Slice(1, w), Slice(1, w)})
      .copy_(chunk_scores.index({Slice(), 0, Slice(0, w - 1), Slice(1 - w)}));
  scores = scores.view({batch, heads, length, 2 * w + 1}).transpose(2, 1);
  MaskInvalidLocations(scores, w);
  return scores;
}

// _pad_and_diagonalize: BH x C x w x K -> BH x C x w x (K + w), row r
// shifted r steps right (the inverse of the columns-to-diagonals step).
inline torch::Tensor PadAndDiagonalize(const torch::Tensor& x) {
  const int64_t bh = x.size(0), chunks = x.size(1), w = x.size(2),
                k = x.size(3);
  torch::Tensor y = torch::constant_pad_nd(x, {0, w + 1});
  y = y.view({bh, chunks, -1}).slice(2, 0, -w);
  return y.view({bh, chunks, w, w + k}).slice(3, 0, -1);
}

// _sliding_chunks_matmul_attn_probs_value: B x L x H x (2w + 1)
// probabilities over the band and B x L x H x D values -> B x L x H x D.
inline torch::Tensor SlidingChunksProbsValue(const torch::Tensor& probs,
                                             const torch::Tensor& value,
                                             int64_t w) {
  const int64_t batch = value.size(0), length = value.size(1),
                heads = value.size(2), head_dim = value.size(3);
  const int64_t chunks = length / w - 1;
  const torch::Tensor chunked_probs =
      probs.transpose(1, 2).reshape({batch * heads, length / w, w, 2 * w + 1});
  const torch::Tensor v =
      value.transpose(1, 2).reshape({batch * heads, length, head_dim});
  // w rows of -1 at both ends (the reference's fill; their probabilities
  // are 0), then chunks of 3w rows overlapping by 2w, as a strided view.
  const torch::Tensor padded = torch::constant_pad_nd(v, {0, 0, w, w}, -1);
  const auto stride = padded.strides();
  const torch::Tensor chunked_value =
      padded.as_strided({batch * heads, chunks + 1, 3 * w, head_dim},
                        {stride[0], w * stride[1], stride[1], stride[2]});
  const torch::Tensor context = torch::einsum(
      "bcwd,bcdh->bcwh", {PadAndDiagonalize(chunked_probs), chunked_value});
  return context.view({batch, heads, length, head_dim}).transpose(1, 2);
}

// _get_global_attn_indices for a B x L boolean mask of global tokens.
struct GlobalIndices {
  int64_t max_count = 0;       // G.
  torch::Tensor batch, token;  // (b, l) of each global token.
  // (b, g) of each used slot of the B x G global slots, and of each
  // unused one (sequences with fewer than G global tokens).
  torch::Tensor slot_batch, slot;
  torch::Tensor empty_batch, empty_slot;
};

inline GlobalIndices GetGlobalIndices(const torch::Tensor& is_global) {
  GlobalIndices g;
  const torch::Tensor counts = is_global.to(torch::kLong).sum(1);
  g.max_count = counts.max().item<int64_t>();
  const torch::Tensor where = is_global.nonzero();
  g.batch = where.select(1, 0);
  g.token = where.select(1, 1);
  const torch::Tensor used =
      torch::arange(g.max_count, counts.options()) < counts.unsqueeze(-1);
  const torch::Tensor slots = used.nonzero();
  g.slot_batch = slots.select(1, 0);
  g.slot = slots.select(1, 1);
  const torch::Tensor empty = (used == 0).nonzero();
  g.empty_batch = empty.select(1, 0);
  g.empty_slot = empty.select(1, 1);
  return g;
}

// B x L x H x D vectors of the global tokens gathered into B x G x H x D
// slots (zeros in unused slots).
inline torch::Tensor GatherGlobal(const torch::Tensor& vectors,
                                  const GlobalIndices& g) {
  torch::Tensor out = vectors.new_zeros(
      {vectors.size(0), g.max_count, vectors.size(2), vectors.size(3)});
  out.index_put_({g.slot_batch, g.slot}, vectors.index({g.batch, g.token}));
  return out;
}

// _concat_with_global_key_attn_probs: every query's B x L x H x G scores
// against the global keys, the lowest finite value in unused slots.
inline torch::Tensor GlobalKeyScores(const torch::Tensor& query,
                                     const torch::Tensor& key,
                                     const GlobalIndices& g) {
  torch::Tensor scores =
      torch::einsum("blhd,bshd->blhs", {query, GatherGlobal(key, g)});
  scores.transpose(1, 3).index_put_(
      {g.empty_batch, g.empty_slot},
      torch::scalar_tensor(FinfoMin(scores.scalar_type()), scores.options()));
  return scores;
}

}  // namespace torchbench::hf::longformer

#endif  // TORCHBENCH_MODELS_NLP_COMMON_HF_LONGFORMER_ATTENTION_H_
