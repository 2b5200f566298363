// models/common/numpy_random.h against numpy 2.4.6's legacy generator
// (values printed by np.random.seed(s); np.random.permutation(...)).
#include "common/numpy_random.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace torchbench::numpy_random {
namespace {

std::vector<int32_t> Iota(int32_t start, int32_t stop) {
  std::vector<int32_t> out(stop - start);
  std::iota(out.begin(), out.end(), start);
  return out;
}

TEST(NumpyRandomTest, PermutationMatchesNumpy) {
  // np.random.seed(0); np.random.permutation(np.arange(10))
  LegacyRandomState seed0(0);
  EXPECT_EQ(seed0.Permutation(Iota(0, 10)),
            (std::vector<int32_t>{2, 8, 4, 9, 1, 6, 7, 3, 0, 5}));
  // np.random.seed(7); np.random.permutation(np.arange(3, 40))
  LegacyRandomState seed7(7);
  EXPECT_EQ(
      seed7.Permutation(Iota(3, 40)),
      (std::vector<int32_t>{36, 5,  27, 4,  21, 16, 12, 18, 25, 8,  37, 23, 30,
                            20, 14, 3,  15, 24, 19, 39, 9,  34, 29, 13, 33, 32,
                            11, 35, 17, 38, 31, 10, 26, 22, 6,  28, 7}));
}

TEST(NumpyRandomTest, SuccessiveDrawsAndLargestSeed) {
  // np.random.seed(2**32 - 1); permutation(arange(1000)) twice: the second
  // starts with [101, 162, 332, 896, 423, 347, 591, 692].
  LegacyRandomState rng(4294967295U);
  const std::vector<int32_t> first = rng.Permutation(Iota(0, 1000));
  EXPECT_EQ(std::accumulate(first.begin(), first.end(), int64_t{0}), 499500);
  const std::vector<int32_t> second = rng.Permutation(Iota(0, 1000));
  EXPECT_EQ(std::vector<int32_t>(second.begin(), second.begin() + 8),
            (std::vector<int32_t>{101, 162, 332, 896, 423, 347, 591, 692}));
}

TEST(NumpyRandomTest, ShortArrays) {
  // np.random.seed(11); [permutation(arange(n)) for n in (0, 1, 2, 5)]:
  // sizes 0 and 1 draw nothing.
  LegacyRandomState rng(11);
  EXPECT_TRUE(rng.Permutation(std::vector<int32_t>{}).empty());
  EXPECT_EQ(rng.Permutation(Iota(0, 1)), (std::vector<int32_t>{0}));
  EXPECT_EQ(rng.Permutation(Iota(0, 2)), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(rng.Permutation(Iota(0, 5)), (std::vector<int32_t>{4, 2, 1, 3, 0}));
}

}  // namespace
}  // namespace torchbench::numpy_random
