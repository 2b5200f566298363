#include "torchbench/vision_ops.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "amp_internal.h"
#include "support/golden_file.h"
#include "torchbench/amp.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"

namespace torchbench::vision_ops {
namespace {

// The inputs of tools/golden/make_vision_ops_golden.py, op for op.
struct Boxes {
  torch::Tensor boxes, scores, idxs;
};

Boxes MakeBoxes(const std::string& prefix, int64_t n) {
  auto t = [&](const char* name, double offset, double scale) {
    return DeterministicTensor(prefix + "/" + name, {n}, torch::kFloat, offset,
                               scale);
  };
  torch::Tensor cx = t("cx", 50, 40), cy = t("cy", 50, 40);
  torch::Tensor w = t("w", 20, 15), h = t("h", 20, 15);
  return {
      torch::stack({cx - w * 0.5, cy - h * 0.5, cx + w * 0.5, cy + h * 0.5}, 1),
      t("scores", 0.5, 0.5),
      DeterministicIntegers(prefix + "/idxs", {n}, 0, 5)};
}

torch::Tensor MakeRois(int64_t k) {
  torch::Tensor batch =
      DeterministicIntegers("roi/batch", {k}, 0, 2).to(torch::kFloat);
  torch::Tensor x1 = DeterministicTensor("roi/x1", {k}, torch::kFloat, 20, 18);
  torch::Tensor y1 = DeterministicTensor("roi/y1", {k}, torch::kFloat, 16, 14);
  torch::Tensor w = DeterministicTensor("roi/w", {k}, torch::kFloat, 10, 8);
  torch::Tensor h = DeterministicTensor("roi/h", {k}, torch::kFloat, 10, 8);
  return torch::stack({batch, x1, y1, x1 + w, y1 + h}, 1);
}

torch::Tensor RoiInput() {
  return DeterministicTensor("roi/input", {2, 3, 20, 24}).requires_grad_();
}

class VisionOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status status = Load();
    ASSERT_TRUE(status.ok()) << status;
    auto golden = ReadGoldenFile(std::string(TORCHBENCH_TEST_GOLDEN_DIR) +
                                 "/vision_ops.golden");
    ASSERT_TRUE(golden.ok()) << golden.status();
    golden_ = *golden;
  }

  // The same kernels on the same inputs: every figure must be equal.
  void ExpectEqual(const std::string& key, const torch::Tensor& actual) {
    auto it = golden_.tensors.find(key);
    ASSERT_NE(it, golden_.tensors.end()) << key;
    EXPECT_EQ(GoldenError(it->second, actual), 0.0) << key;
  }

  void ExpectIndicesEqual(const std::string& key, const torch::Tensor& keep) {
    ExpectEqual(key, keep);
    torch::Tensor weights =
        torch::arange(1, keep.numel() + 1, torch::dtype(torch::kDouble));
    ExpectEqual(key + ":weighted", keep.to(torch::kDouble) * weights);
  }

  GoldenFile golden_;
};

TEST_F(VisionOpsTest, NmsEqualsTorchvision) {
  Boxes b = MakeBoxes("nms", 300);
  ExpectIndicesEqual("nms/iou0.3", Nms(b.boxes, b.scores, 0.3));
  ExpectIndicesEqual("nms/iou0.5", Nms(b.boxes, b.scores, 0.5));
  ExpectIndicesEqual("nms/iou0.7", Nms(b.boxes, b.scores, 0.7));
}

TEST_F(VisionOpsTest, BatchedNmsBothBranchesEqualTorchvision) {
  const int64_t threshold = BatchedNmsLoopThreshold(torch::kCPU);
  EXPECT_EQ(threshold, 4000);
  EXPECT_EQ(BatchedNmsLoopThreshold(torch::Device(torch::kCUDA, 0)), 100000);
  Boxes small = MakeBoxes("nms", 300);
  ASSERT_LE(small.boxes.numel(), threshold);
  ExpectIndicesEqual("batched_nms/offset",
                     BatchedNms(small.boxes, small.scores, small.idxs, 0.5));
  Boxes large = MakeBoxes("nms_large", 1500);
  ASSERT_GT(large.boxes.numel(), threshold);
  ExpectIndicesEqual("batched_nms/loop",
                     BatchedNms(large.boxes, large.scores, large.idxs, 0.5));
  EXPECT_EQ(BatchedNms(torch::zeros({0, 4}), torch::zeros({0}),
                       torch::zeros({0}, torch::kLong), 0.5)
                .numel(),
            0);
}

TEST_F(VisionOpsTest, RoiAlignAndItsGradientEqualTorchvision) {
  torch::Tensor rois = MakeRois(12);
  for (bool aligned : {false, true}) {
    for (int64_t sampling : {0, 2}) {
      torch::Tensor x = RoiInput();
      torch::Tensor out = RoiAlign(x, rois, 0.5, 5, 4, sampling, aligned);
      (out * DeterministicTensor("roi/grad_output", out.sizes()))
          .sum()
          .backward();
      const std::string key = std::string("roi_align/") +
                              (aligned ? "true/" : "false/") +
                              std::to_string(sampling);
      ExpectEqual(key + "/output", out);
      ExpectEqual(key + "/grad_input", x.grad());
    }
  }
}

TEST_F(VisionOpsTest, RoiPoolAndItsGradientEqualTorchvision) {
  torch::Tensor x = RoiInput();
  auto [out, argmax] = RoiPool(x, MakeRois(12), 0.5, 5, 4);
  EXPECT_FALSE(argmax.requires_grad());
  (out * DeterministicTensor("roi/grad_output", out.sizes())).sum().backward();
  ExpectEqual("roi_pool/output", out);
  ExpectEqual("roi_pool/argmax", argmax);
  ExpectEqual("roi_pool/grad_input", x.grad());
}

// What the detection heads rely on: a box/mask head's loss reaches the
// backbone's weights through roi_align.
TEST_F(VisionOpsTest, BackboneReceivesGradientThroughRoiAlign) {
  torch::nn::Conv2d backbone(torch::nn::Conv2dOptions(3, 4, 3).padding(1));
  torch::Tensor features = backbone(RoiInput().detach());
  RoiAlign(features, MakeRois(12), 0.5, 7, 7, 0, true).pow(2).sum().backward();
  ASSERT_TRUE(backbone->weight.grad().defined());
  EXPECT_GT(backbone->weight.grad().abs().sum().item<double>(), 0);
}

TEST_F(VisionOpsTest, DoubleBackwardIsRefused) {
  torch::Tensor x = RoiInput();
  torch::Tensor out = RoiAlign(x, MakeRois(12), 0.5, 5, 4, 0, true);
  torch::Tensor grad_output = torch::ones_like(out).requires_grad_();
  torch::Tensor grad_x = torch::autograd::grad({out}, {x}, {grad_output},
                                               /*retain_graph=*/true,
                                               /*create_graph=*/true)[0];
  ASSERT_TRUE(grad_x.requires_grad());
  try {
    grad_x.sum().backward();
    FAIL() << "double backward through roi_align ran";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "double backwards on roi_align not supported"),
              std::string::npos)
        << e.what();
  }
}

// torchvision's Autocast kernels: the op runs in float32, the result comes
// back in the input's dtype.
TEST_F(VisionOpsTest, AutocastRunsInFloat32) {
  torch::Tensor x = RoiInput().detach().to(torch::kBFloat16);
  torch::Tensor rois = MakeRois(12).to(torch::kBFloat16);
  torch::Tensor expected =
      RoiAlign(x.to(torch::kFloat), rois.to(torch::kFloat), 0.5, 5, 4, 0, true)
          .to(torch::kBFloat16);
  Boxes b = MakeBoxes("nms", 300);
  torch::Tensor expected_keep =
      Nms(b.boxes.to(torch::kBFloat16).to(torch::kFloat),
          b.scores.to(torch::kBFloat16).to(torch::kFloat), 0.5);
  AutocastScope autocast(torch::kCPU, true, torch::kBFloat16);
  torch::Tensor out = RoiAlign(x, rois, 0.5, 5, 4, 0, true);
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(out, expected));
  EXPECT_TRUE(torch::equal(
      Nms(b.boxes.to(torch::kBFloat16), b.scores.to(torch::kBFloat16), 0.5),
      expected_keep));
}

// A LibTorch without torchvision: one line saying what to install. Run in a
// fresh process (the library loads once per process).
TEST(VisionOpsMissingLibraryTest, SaysWhatToInstall) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("TORCHBENCH_TORCHVISION_LIBRARY", "/nonexistent/_C_stable.so",
               1);
        try {
          RequireLoaded();
        } catch (const std::exception& e) {
          std::cerr << e.what() << "\n";
          std::exit(3);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(3),
      "torchvision's operator library was not found at "
      "/nonexistent/_C_stable.so: install");
}

}  // namespace
}  // namespace torchbench::vision_ops
