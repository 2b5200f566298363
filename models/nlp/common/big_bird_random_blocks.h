// The random key blocks of BigBird's block-sparse attention, drawn as
// pinned transformers draws them (models/big_bird/modeling_big_bird.py,
// BigBirdBlockSparseAttention.bigbird_block_sparse_attention and its
// _bigbird_block_rand_mask, _bigbird_block_rand_mask_with_head,
// _get_single_block_row_attention and _get_rand_attn_plan): from numpy's
// legacy global generator, which each layer re-seeds with its index
// (np.random.seed(seed), seed = layer_idx) at every training forward, so a
// layer attends to the same blocks at every training step. In eval mode
// the reference neither seeds nor draws: every random block is block 0.
// Checked against the reference's functions in
// tests/models/big_bird_random_blocks_test.cpp.
#ifndef TORCHBENCH_MODELS_NLP_COMMON_BIG_BIRD_RANDOM_BLOCKS_H_
#define TORCHBENCH_MODELS_NLP_COMMON_BIG_BIRD_RANDOM_BLOCKS_H_

#include <c10/util/Exception.h>
#include <torch/types.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "common/numpy_random.h"

namespace torchbench::big_bird {

// rows x columns of block ids, as the reference's int32 numpy arrays.
struct BlockTable {
  int64_t rows = 0;
  int64_t columns = 0;
  std::vector<int32_t> ids;  // Row-major, zero-initialised.

  BlockTable(int64_t r, int64_t c) : rows(r), columns(c), ids(r * c, 0) {}
  int32_t* row(int64_t i) { return ids.data() + i * columns; }
};

// np.arange(start, stop) as int32.
inline std::vector<int32_t> Arange(int64_t start, int64_t stop) {
  std::vector<int32_t> out(std::max<int64_t>(stop - start, 0));
  std::iota(out.begin(), out.end(), static_cast<int32_t>(start));
  return out;
}

// x[begin:end] with Python's clamping of non-negative bounds.
inline std::vector<int32_t> Slice(const std::vector<int32_t>& x, int64_t begin,
                                  int64_t end) {
  const int64_t n = static_cast<int64_t>(x.size());
  begin = std::min(begin, n);
  end = std::clamp(end, begin, n);
  return {x.begin() + begin, x.begin() + end};
}

// rand_attn[row, :] = np.random.permutation(candidates)[:r].
inline void PermutationPrefix(numpy_random::LegacyRandomState& rng,
                              const std::vector<int32_t>& candidates,
                              int32_t* row, int64_t r) {
  const std::vector<int32_t> perm = rng.Permutation(candidates);
  TORCH_CHECK(static_cast<int64_t>(perm.size()) >= r,
              "BigBird: fewer candidate blocks than random blocks");
  std::copy(perm.begin(), perm.begin() + r, row);
}

// _bigbird_block_rand_mask (the "old plans" the reference keeps for
// sequence lengths 1024, 3072 and 4096), (from_len / block - 2) x r. The
// reference's slices that skip too little (its "Missing -3/-4" comments)
// are kept.
inline BlockTable BlockRandMask(numpy_random::LegacyRandomState* rng,
                                int64_t from_len, int64_t to_len, int64_t block,
                                int64_t r, int64_t last_idx) {
  TORCH_CHECK(from_len / block == to_len / block,
              "Error the number of blocks needs to be same!");
  const int64_t blocks = from_len / block;
  BlockTable table(blocks - 2, r);
  if (rng == nullptr) return table;  // Eval: no randomness.
  const std::vector<int32_t> middle = Arange(1, to_len / block - 1);
  int64_t last = to_len / block - 1;
  if (last_idx > 2 * block) last = last_idx / block - 1;
  for (int64_t i = 1; i < blocks - 1; ++i) {
    int64_t start = i - 2;
    const int64_t end = i;
    std::vector<int32_t> candidates;
    if (i == 1) {
      candidates = Slice(middle, 2, last);
    } else if (i == 2) {
      candidates = Slice(middle, 3, last);
    } else if (i == blocks - 3 || i == blocks - 2) {
      candidates = Slice(middle, 0, last);
    } else if (start > last) {
      start = last;
      candidates = Slice(middle, 0, start);
    } else if (end + 1 == last) {
      candidates = Slice(middle, 0, start);
    } else {
      candidates = Slice(middle, 0, start);
      const std::vector<int32_t> tail = Slice(middle, end + 1, last);
      candidates.insert(candidates.end(), tail.begin(), tail.end());
    }
    PermutationPrefix(*rng, candidates, table.row(i - 1), r);
  }
  return table;
}

// _get_single_block_row_attention with the reference's defaults (window
// and global blocks 1 on each side): up to `r` permuted blocks of
// [to_start, to_end) outside the window, the global blocks and, for the
// second and second-to-last rows, each other's neighbour.
inline std::vector<int32_t> SingleBlockRow(numpy_random::LegacyRandomState& rng,
                                           int64_t block_id, int64_t to_start,
                                           int64_t to_end, int64_t r) {
  const std::vector<int32_t> perm = rng.Permutation(Arange(to_start, to_end));
  std::vector<int64_t> illegal = {block_id - 1, block_id, block_id + 1, 0,
                                  to_end - 1};
  if (block_id == 1) illegal.push_back(to_end - 2);
  if (block_id == to_end - 2) illegal.push_back(1);
  std::vector<int32_t> selected;
  for (int32_t candidate : perm) {
    if (std::find(illegal.begin(), illegal.end(), candidate) == illegal.end()) {
      selected.push_back(candidate);
    }
    if (static_cast<int64_t>(selected.size()) == r) break;
  }
  return selected;
}

// _get_rand_attn_plan: where the random blocks of longer sequences go.
struct RandAttnPlan {
  std::vector<int64_t> from_length;
  std::vector<int64_t> num_rand_blocks;
};

inline RandAttnPlan GetRandAttnPlan(int64_t from_len, int64_t block,
                                    int64_t r) {
  const int64_t blocks = from_len / block;
  if (2 * r + 5 < blocks) return {{(2 * r + 5) * block, from_len}, {r, 0}};
  if (r + 5 < blocks) return {{(r + 5) * block, from_len}, {r / 2, r - r / 2}};
  return {{from_len}, {r}};
}

// _bigbird_block_rand_mask_with_head for `heads` heads: per head a
// (blocks - 2) x sum(plan's random blocks) table, drawn plan part by plan
// part, row by row, head by head (the reference's loop order, which fixes
// the order of the draws; rows later cut off still draw).
inline std::vector<BlockTable> BlockRandMaskWithHead(
    numpy_random::LegacyRandomState* rng, int64_t from_len, int64_t to_len,
    int64_t block, int64_t heads, const RandAttnPlan& plan) {
  TORCH_CHECK(from_len / block == to_len / block,
              "Error the number of blocks needs to be same!");
  const auto& plan_rand = plan.num_rand_blocks;
  const auto max_plan =
      std::find(plan.from_length.begin(), plan.from_length.end(), from_len) -
      plan.from_length.begin();
  TORCH_CHECK(max_plan < static_cast<int64_t>(plan.from_length.size()),
              "Error from sequence length not in plan!");
  const int64_t blocks = from_len / block;
  std::vector<int64_t> plan_blocks;
  for (int64_t length : plan.from_length) plan_blocks.push_back(length / block);
  auto rand_sum = [&](int64_t n) {
    return std::accumulate(plan_rand.begin(), plan_rand.begin() + n,
                           int64_t{0});
  };
  std::vector<BlockTable> full(heads,
                               BlockTable(blocks, rand_sum(max_plan + 1)));
  // rand_attn[h][row, begin:end] = _get_single_block_row_attention(...).
  auto draw = [&](int64_t row, int64_t begin, int64_t end, int64_t to_start,
                  int64_t to_end, int64_t r) {
    for (int64_t h = 0; h < heads; ++h) {
      const std::vector<int32_t> picked =
          SingleBlockRow(*rng, row, to_start, to_end, r);
      TORCH_CHECK(static_cast<int64_t>(picked.size()) == end - begin,
                  "BigBird: could not pick ", end - begin, " random blocks");
      std::copy(picked.begin(), picked.end(), full[h].row(row) + begin);
    }
  };
  for (int64_t p = 0; rng != nullptr && p <= max_plan; ++p) {
    int64_t r_count = 0;
    if (p > 0) {
      if (plan_rand[p] > 0) {
        r_count = rand_sum(p);
        for (int64_t row = 1; row < plan_blocks[p - 1]; ++row) {
          draw(row, r_count, rand_sum(p + 1), plan_blocks[p - 1],
               plan_blocks[p], plan_rand[p]);
        }
      }
      for (int64_t q = 0; q < p; ++q) {
        if (plan_rand[q] == 0) continue;
        for (int64_t row = plan_blocks[p - 1]; row < plan_blocks[p]; ++row) {
          draw(row, q > 0 ? rand_sum(q) : 0, rand_sum(q + 1),
               q > 0 ? plan_blocks[q - 1] : 0, plan_blocks[q], plan_rand[q]);
        }
      }
    }
    if (plan_rand[p] == 0) continue;
    int64_t from_start = 1;
    int64_t to_start = 0;
    if (p > 0) {
      r_count = rand_sum(p);
      from_start = plan_blocks[p - 1];
      to_start = plan_blocks[p - 1];
    }
    for (int64_t row = from_start; row < plan_blocks[p]; ++row) {
      draw(row, r_count, rand_sum(p + 1), to_start, plan_blocks[p],
           plan_rand[p]);
    }
  }
  // Drop the global first and last rows.
  std::vector<BlockTable> out;
  for (const BlockTable& t : full) {
    BlockTable cut(blocks - 2, t.columns);
    std::copy(t.ids.begin() + t.columns, t.ids.end() - t.columns,
              cut.ids.begin());
    out.push_back(std::move(cut));
  }
  return out;
}

// The rand_attn tensor of one layer's forward: heads x (blocks - 2) x r
// block ids (int64, on the host), `training` as the module's mode,
// `max_positions` config.max_position_embeddings (the old plans draw over
// it), `seed` the layer index.
inline torch::Tensor RandomBlocks(int64_t seq_len, int64_t block, int64_t heads,
                                  int64_t r, int64_t max_positions,
                                  uint32_t seed, bool training) {
  std::optional<numpy_random::LegacyRandomState> rng;
  if (training) rng.emplace(seed);
  numpy_random::LegacyRandomState* state = rng ? &*rng : nullptr;
  const int64_t rows = seq_len / block - 2;
  std::vector<BlockTable> tables;
  if (seq_len == 1024 || seq_len == 3072 || seq_len == 4096) {
    for (int64_t h = 0; h < heads; ++h) {
      tables.push_back(BlockRandMask(state, max_positions, max_positions, block,
                                     r, /*last_idx=*/1024));
    }
  } else {
    tables = BlockRandMaskWithHead(state, seq_len, seq_len, block, heads,
                                   GetRandAttnPlan(seq_len, block, r));
  }
  torch::Tensor out = torch::empty({heads, rows, r}, torch::kLong);
  auto acc = out.accessor<int64_t, 3>();
  for (int64_t h = 0; h < heads; ++h) {
    TORCH_CHECK(tables[h].rows >= rows && tables[h].columns == r,
                "BigBird: random block table of the wrong shape");
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < r; ++j) acc[h][i][j] = tables[h].row(i)[j];
    }
  }
  return out;
}

}  // namespace torchbench::big_bird

#endif  // TORCHBENCH_MODELS_NLP_COMMON_BIG_BIRD_RANDOM_BLOCKS_H_
