// models/nlp/common/big_bird_random_blocks.h against transformers 5.24.0's
// own BigBirdBlockSparseAttention: the values below were printed by running
// its _bigbird_block_rand_mask (lengths 1024, 3072, 4096) and
// _get_rand_attn_plan + _bigbird_block_rand_mask_with_head (other lengths)
// after np.random.seed(seed), 12 heads, block 64, 3 random blocks, max
// positions 4096, as bigbird_block_sparse_attention calls them, stacked to
// heads x rows x 3.
#include "nlp/common/big_bird_random_blocks.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace torchbench::big_bird {
namespace {

struct Expected {
  uint32_t seed;
  int64_t length;
  int64_t rows;
  int64_t checksum;  // sum(flat[i] * (i % 97 + 1))
  std::vector<int64_t> head0_row0, last_head_last_row, head3_row5;
};

std::vector<int64_t> Row(const torch::Tensor& t, int64_t head, int64_t row) {
  torch::Tensor r = t[head][row].contiguous();
  return {r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel()};
}

TEST(BigBirdRandomBlocksTest, TrainingDrawsMatchTheReference) {
  const std::vector<Expected> cases = {
      {0, 1024, 14, 189015, {9, 14, 7}, {6, 7, 10}, {4, 14, 12}},
      {5, 1024, 14, 189955, {8, 4, 10}, {6, 11, 8}, {11, 12, 4}},
      {0, 832, 11, 92572, {4, 6, 7}, {5, 9, 2}, {1, 2, 9}},
      {11, 832, 11, 92957, {6, 3, 8}, {9, 7, 4}, {1, 3, 2}},
      {1, 768, 10, 79877, {3, 4, 6}, {5, 3, 7}, {3, 8, 1}},
      {2, 4096, 62, 867920, {7, 3, 13}, {10, 14, 12}, {1, 8, 4}},
      {3, 3072, 46, 653942, {9, 7, 4}, {4, 12, 2}, {2, 4, 9}},
      {4, 1600, 23, 198290, {3, 8, 4}, {4, 8, 2}, {3, 2, 1}},
  };
  for (const Expected& e : cases) {
    SCOPED_TRACE("seed " + std::to_string(e.seed) + " length " +
                 std::to_string(e.length));
    const torch::Tensor t = RandomBlocks(e.length, 64, 12, 3, 4096, e.seed,
                                         /*training=*/true);
    ASSERT_EQ(t.sizes(), torch::IntArrayRef({12, e.rows, 3}));
    const torch::Tensor weights =
        torch::arange(t.numel(), torch::kLong).remainder(97) + 1;
    EXPECT_EQ((t.reshape(-1) * weights).sum().item<int64_t>(), e.checksum);
    EXPECT_EQ(Row(t, 0, 0), e.head0_row0);
    EXPECT_EQ(Row(t, 11, e.rows - 1), e.last_head_last_row);
    EXPECT_EQ(Row(t, 3, 5), e.head3_row5);
  }
}

TEST(BigBirdRandomBlocksTest, EvalDrawsNothing) {
  for (int64_t length : {832, 1024}) {
    const torch::Tensor t =
        RandomBlocks(length, 64, 12, 3, 4096, 0, /*training=*/false);
    ASSERT_EQ(t.sizes(), torch::IntArrayRef({12, length / 64 - 2, 3}));
    EXPECT_EQ(t.abs().sum().item<int64_t>(), 0);
  }
}

TEST(BigBirdRandomBlocksTest, Plans) {
  // _get_rand_attn_plan(832 | 640 | 448, 64, 3).
  const RandAttnPlan a = GetRandAttnPlan(832, 64, 3);
  EXPECT_EQ(a.from_length, (std::vector<int64_t>{704, 832}));
  EXPECT_EQ(a.num_rand_blocks, (std::vector<int64_t>{3, 0}));
  const RandAttnPlan b = GetRandAttnPlan(640, 64, 3);
  EXPECT_EQ(b.from_length, (std::vector<int64_t>{512, 640}));
  EXPECT_EQ(b.num_rand_blocks, (std::vector<int64_t>{1, 2}));
  const RandAttnPlan c = GetRandAttnPlan(448, 64, 3);
  EXPECT_EQ(c.from_length, (std::vector<int64_t>{448}));
  EXPECT_EQ(c.num_rand_blocks, (std::vector<int64_t>{3}));
}

}  // namespace
}  // namespace torchbench::big_bird
