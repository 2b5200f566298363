#include "support/golden_file.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "torchbench/golden.h"

namespace torchbench {
namespace {

// ctest runs each test in its own process, in parallel: the name must differ
// per process and per call (std::rand() gave every process the same one).
std::string WriteTemp(const std::string& text) {
  static int calls = 0;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("golden_" + std::to_string(::getpid()) + "_" +
                             std::to_string(calls++) + ".golden"))
                               .string();
  std::ofstream(path) << text;
  return path;
}

constexpr char kValid[] = R"(torchbench-golden 1
fill 1
model tiny
reference somewhere at some commit
mode train
batch_size 2
dtype float32
note dropout off on both sides
tensor output 2,2 10 10 4
sample output 0 1
sample output 3 4
tensor loss - 0.5 0.5 0.5
sample loss 0 0.5
)";

TEST(GoldenFileTest, ReadsEveryField) {
  const std::string path = WriteTemp(kValid);
  auto golden = ReadGoldenFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(golden.ok()) << golden.status();
  EXPECT_EQ(golden->fill_version, 1);
  EXPECT_EQ(golden->model, "tiny");
  EXPECT_EQ(golden->reference, "somewhere at some commit");
  EXPECT_EQ(golden->mode, "train");
  EXPECT_EQ(golden->batch_size, 2);
  ASSERT_EQ(golden->notes.size(), 1u);
  ASSERT_EQ(golden->tensors.size(), 2u);
  const TensorSummary& out = golden->tensors.at("output");
  EXPECT_EQ(out.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(out.samples.size(), 2u);
  EXPECT_TRUE(golden->tensors.at("loss").shape.empty());

  torch::Tensor exact = torch::tensor({{1.0, 2.0}, {3.0, 4.0}}, torch::kDouble);
  EXPECT_EQ(GoldenError(out, exact), 0.0);
  EXPECT_NEAR(GoldenError(out, exact + 1e-3), 4e-3 / 10, 1e-9);
  EXPECT_TRUE(std::isinf(GoldenError(out, torch::ones({4}))));
  EXPECT_EQ(GoldenError(golden->tensors.at("loss"), torch::tensor(0.5)), 0.0);
}

TEST(GoldenFileTest, MalformedFilesNameTheLine) {
  for (const char* text :
       {"not golden\n", "torchbench-golden 1\nmode sideways\n",
        "torchbench-golden 1\nsample output 0 1\n",
        "torchbench-golden 1\ntensor output 2,x 1 1 1\n",
        "torchbench-golden 1\nmodel m\nmode eval\nbatch_size 1\n"}) {
    const std::string path = WriteTemp(text);
    auto golden = ReadGoldenFile(path);
    std::remove(path.c_str());
    EXPECT_EQ(golden.status().code(), absl::StatusCode::kInvalidArgument)
        << text;
    EXPECT_NE(golden.status().message().find(".golden:"), std::string::npos);
  }
  EXPECT_EQ(ReadGoldenFile("/no/such.golden").status().code(),
            absl::StatusCode::kNotFound);
}

// int8 outputs are compared in steps of their grid: one requantization
// rounding moves a value a whole step, and 1 % of the elements may do so.
TEST(GoldenFileTest, QuantizedKeysAreComparedInSteps) {
  // 200 values on a grid of 0.5: 0.5 * (i % 7 - 3).
  torch::Tensor golden_values =
      (torch::arange(200, torch::kDouble).remainder(7) - 3) * 0.5;
  TensorSummary summary = Summarize(golden_values);
  std::string text =
      "torchbench-golden 1\nmodel q\nmode eval\nbatch_size 1\n"
      "tensor out 200 " +
      std::to_string(summary.sum) + " " + std::to_string(summary.abs_sum) +
      " " + std::to_string(summary.max_abs) + "\n";
  for (const auto& [index, value] : summary.samples) {
    text += "sample out " + std::to_string(index) + " " +
            std::to_string(value) + "\n";
  }
  text += "quantized out 0.5 1\n";
  const std::string path = WriteTemp(text);
  auto golden = ReadGoldenFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(golden.ok()) << golden.status();
  const TensorSummary& out = golden->tensors.at("out");
  EXPECT_EQ(out.quantum, 0.5);
  EXPECT_EQ(out.allowed_steps, 1);

  EXPECT_EQ(GoldenStepError(out, golden_values), 0.0);
  // Two elements one step up: within one step per hundred elements.
  torch::Tensor two_flips = golden_values.clone();
  two_flips[1] += 0.5;
  two_flips[2] += 0.5;
  EXPECT_LE(GoldenStepError(out, two_flips), 1.0);
  // A wrong kernel shifts most values: many steps.
  EXPECT_GT(GoldenStepError(out, golden_values * 1.5), 1.0);
  EXPECT_GT(GoldenStepError(out, golden_values + 0.5), 1.0);
  EXPECT_TRUE(std::isinf(GoldenStepError(out, torch::zeros({100}))));
  // Without a quantized line there is no step to count in.
  EXPECT_TRUE(std::isinf(GoldenStepError(TensorSummary{}, golden_values)));

  for (const char* bad : {"quantized out 0 1\n", "quantized nothing 0.5 1\n",
                          "quantized out 0.5\n"}) {
    const std::string bad_path = WriteTemp(text + bad);
    auto malformed = ReadGoldenFile(bad_path);
    std::remove(bad_path.c_str());
    EXPECT_EQ(malformed.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(GoldenFileTest, SamplesSpreadOverTheTensor) {
  EXPECT_TRUE(SampleIndices(0).empty());
  EXPECT_EQ(SampleIndices(1), (std::vector<int64_t>{0}));
  EXPECT_EQ(SampleIndices(3), (std::vector<int64_t>{0, 1, 2}));
  const auto many = SampleIndices(1000);
  ASSERT_EQ(many.size(), 32u);
  EXPECT_EQ(many.front(), 0);
  EXPECT_EQ(many.back(), 999);
}

}  // namespace
}  // namespace torchbench
