// The part of numpy's legacy global generator (np.random.seed /
// np.random.permutation, i.e. numpy.random.RandomState on MT19937) that
// reference models draw host-side indices from, so a port draws the same
// numbers from the same seed.
//
// numpy's RandomState.seed(int) is MT19937's init_genrand (mt19937_seed in
// numpy/random/src/mt19937), which is how std::mt19937 seeds from one
// 32-bit value, and both produce genrand_int32. permutation(array) shuffles
// a copy with the Fisher-Yates loop of RandomState._shuffle_raw:
// for i = n-1 .. 1, j = random_interval(i), swap x[i], x[j]; random_interval
// draws 32-bit words masked to the smallest all-ones mask >= max until one
// is <= max (distributions.c). Checked against numpy in
// tests/models/numpy_random_test.cpp.
#ifndef TORCHBENCH_MODELS_COMMON_NUMPY_RANDOM_H_
#define TORCHBENCH_MODELS_COMMON_NUMPY_RANDOM_H_

#include <c10/util/Exception.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace torchbench::numpy_random {

class LegacyRandomState {
 public:
  // np.random.seed(seed) for an integer seed.
  explicit LegacyRandomState(uint32_t seed) : engine_(seed) {}

  // random_interval(max): uniform in [0, max] (only the 32-bit branch; the
  // ports never shuffle 2^32 items).
  uint32_t Interval(uint64_t max) {
    TORCH_CHECK(max <= 0xffffffffULL, "Interval: max ", max,
                " needs numpy's 64-bit branch");
    if (max == 0) return 0;
    uint64_t mask = max;
    for (int shift : {1, 2, 4, 8, 16}) mask |= mask >> shift;
    uint64_t value = 0;
    do {
      value = engine_() & mask;
    } while (value > max);
    return static_cast<uint32_t>(value);
  }

  // np.random.permutation(x) for a 1-d array x: a shuffled copy.
  template <typename T>
  std::vector<T> Permutation(std::vector<T> x) {
    for (size_t i = x.size(); i-- > 1;) {
      std::swap(x[i], x[Interval(i)]);
    }
    return x;
  }

 private:
  std::mt19937 engine_;
};

}  // namespace torchbench::numpy_random

#endif  // TORCHBENCH_MODELS_COMMON_NUMPY_RANDOM_H_
