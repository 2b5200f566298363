// File: support/golden_file.h (test support: the tests' reader of golden
// files, beside the tests as Google Benchmark keeps output_test_helper.cc)
//
// Golden outputs: what a model's reference code (TorchBench's own Python, run
// by tools/golden/make_golden.py on deterministically filled weights and
// inputs) computed, summarised in a small text file that the C++ port must
// reproduce.
//
// A golden file (tests/golden/<model>.golden) is line-based:
//   torchbench-golden 1
//   fill 1                        the deterministic fill's version
//   model <name>
//   reference <free text: repository, commit, path>
//   mode train|eval
//   batch_size <N>
//   dtype float32|float64
//   note <free text>              (any number; what is compared and how)
//   tensor <key> <d0,d1,...|-> <sum> <abs_sum> <max_abs>
//   sample <key> <flat index> <value>
//   quantized <key> <step> <allowed steps>
// Keys name what was computed ("output", "loss", "grad:<parameter>"). The
// samples sit at SampleIndices(numel), spread over the whole tensor. A
// quantized line (after its key's tensor line) marks dequantized int8
// values on a grid of `step`: they are compared in steps (GoldenStepError),
// since one requantization rounding is a whole step, far past any relative
// tolerance.
#ifndef TORCHBENCH_TESTS_SUPPORT_GOLDEN_FILE_H_
#define TORCHBENCH_TESTS_SUPPORT_GOLDEN_FILE_H_

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace torchbench {

struct TensorSummary {
  std::vector<int64_t> shape;
  double sum = 0;
  double abs_sum = 0;
  double max_abs = 0;
  std::vector<std::pair<int64_t, double>> samples;  // (flat index, value)
  // From a quantized line: the grid step (0: not quantized) and how many
  // steps the values may move.
  double quantum = 0;
  double allowed_steps = 0;
};

struct GoldenFile {
  int fill_version = 0;
  std::string model;
  std::string reference;
  std::string mode;  // "train" or "eval"
  int64_t batch_size = 0;
  std::string dtype;  // "float32" or "float64"
  std::vector<std::string> notes;
  std::map<std::string, TensorSummary> tensors;
};

// Reads and checks a golden file. Returns NotFound for a missing file,
// InvalidArgument naming the file and line for a malformed one.
absl::StatusOr<GoldenFile> ReadGoldenFile(const std::string& path);

// The flat indices sampled from a tensor of `numel` elements: up to 32,
// floor(k * (numel - 1) / 31) for k = 0..31, without repeats.
std::vector<int64_t> SampleIndices(int64_t numel);

// Summarises a tensor (in double) as a golden file does.
TensorSummary Summarize(const torch::Tensor& tensor);

// The relative error of `actual` against `golden`: the largest of
// |sum - sum'| / abs_sum', |abs_sum - abs_sum'| / abs_sum' and, over the
// samples, |x - x'| / max_abs' (each denominator floored at 1e-30).
// Infinity when the shapes differ or `actual` is not finite.
double GoldenError(const TensorSummary& golden, const torch::Tensor& actual);

// For a quantized key: how far `actual` is from `golden` in steps of
// golden.quantum, the largest of |x - x'| / step over the samples and
// |sum - sum'| / (step * F), |abs_sum - abs_sum'| / (step * F) with
// F = max(1, numel / 100): a net move of one step per hundred elements
// counts as one step. Infinity as GoldenError.
double GoldenStepError(const TensorSummary& golden,
                       const torch::Tensor& actual);

}  // namespace torchbench

#endif  // TORCHBENCH_TESTS_SUPPORT_GOLDEN_FILE_H_
