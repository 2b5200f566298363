// models/common/detectron2/mask_head.h against detectron2's mask branch run
// alone (tests/golden/detectron2_mask.golden, made by
// tools/golden/make_detectron2_mask_golden.py on the same inputs).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/coco_synthetic.h"
#include "common/detectron2/box_ops.h"
#include "common/detectron2/mask_head.h"
#include "support/golden_file.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"

namespace torchbench::detectron2 {
namespace {

constexpr double kTolerance = 1e-4;

// The foreground proposals of coco_synthetic images 0 and 1, as the golden
// script builds them (boxes in double, then float32).
std::pair<std::vector<Instances>, std::vector<ImageTargets>> LossInputs() {
  std::vector<Instances> instances;
  std::vector<ImageTargets> targets;
  for (const auto& [image, count] :
       std::vector<std::pair<int, int64_t>>{{0, 5}, {1, 3}}) {
    const coco_synthetic::ImageInfo info = coco_synthetic::MakeImageInfo(image);
    const std::string tag = std::to_string(image);
    const torch::Tensor gt_index =
        DeterministicIntegers("d2mask/gt_index/" + tag, {count}, 0,
                              static_cast<int64_t>(info.annotations.size()));
    const torch::Tensor jitter = DeterministicTensor(
        "d2mask/jitter/" + tag, {count, 4}, torch::kDouble, 0.0, 0.2);
    torch::Tensor boxes = torch::empty({count, 4}, torch::kDouble);
    torch::Tensor classes = torch::empty({count}, torch::kLong);
    for (int64_t r = 0; r < count; ++r) {
      const auto& a =
          info.annotations[static_cast<size_t>(gt_index[r].item<int64_t>())];
      const auto [x, y, w, h] = a.bbox_xywh;
      const auto j = jitter[r];
      boxes[r][0] = x + j[0].item<double>() * w;
      boxes[r][1] = y + j[1].item<double>() * h;
      boxes[r][2] = x + w + j[2].item<double>() * w;
      boxes[r][3] = y + h + j[3].item<double>() * h;
      classes[r] = a.contiguous_label % 6;
    }
    Instances inst;
    inst.image_height = info.height;
    inst.image_width = info.width;
    inst.proposal_boxes = boxes.to(torch::kFloat);
    inst.gt_classes = classes;
    inst.gt_index = gt_index;
    instances.push_back(inst);
    ImageTargets t;
    for (const auto& a : info.annotations) t.gt_polygons.push_back({a.polygon});
    targets.push_back(std::move(t));
  }
  return {instances, targets};
}

class Detectron2MaskHeadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(1);
    auto golden = ReadGoldenFile(std::string(TORCHBENCH_TEST_GOLDEN_DIR) +
                                 "/detectron2_mask.golden");
    ASSERT_TRUE(golden.ok()) << golden.status();
    golden_ = *golden;
  }

  void Check(const std::string& key, const torch::Tensor& actual,
             double tolerance = kTolerance) {
    auto it = golden_.tensors.find(key);
    ASSERT_NE(it, golden_.tensors.end()) << key;
    const double error = GoldenError(it->second, actual.to(torch::kDouble));
    EXPECT_LE(error, tolerance) << key;
  }

  // Logits, loss and gradients of a head, as head_lines() records them.
  void CheckHead(const std::string& prefix, const MaskHeadOptions& options,
                 int64_t side) {
    auto head = std::make_shared<MaskRCNNConvUpsampleHead>(options);
    DeterministicFill(*head);
    const auto [instances, targets] = LossInputs();
    const torch::Tensor x =
        DeterministicTensor(prefix + "/features",
                            {8, options.in_channels, side, side})
            .requires_grad_();
    {
      torch::NoGradGuard no_grad;
      Check(prefix + "/logits", head->Layers(x));
    }
    const torch::Tensor loss = head->Losses(x, instances, targets);
    loss.backward();
    Check(prefix + "/loss_mask", loss);
    Check(prefix + "/grad:features", x.grad());
    std::map<std::string, torch::Tensor> edges;
    RecordEdgeParameters(*head, prefix + "/", /*gradients=*/true, &edges);
    for (const auto& [key, grad] : edges) {
      Check(key.substr(0, prefix.size() + 1) +
                "grad:" + key.substr(prefix.size() + 1),
            grad);
    }
  }

  GoldenFile golden_;
};

TEST_F(Detectron2MaskHeadTest, FpnHeadLogitsLossGradients) {
  CheckHead(
      "fpn",
      {.in_channels = 16, .num_classes = 6, .num_conv = 4, .conv_dim = 16}, 14);
}

TEST_F(Detectron2MaskHeadTest, C4HeadLogitsLossGradients) {
  CheckHead(
      "c4",
      {.in_channels = 32, .num_classes = 6, .num_conv = 0, .conv_dim = 16}, 7);
}

TEST_F(Detectron2MaskHeadTest, ClassAgnosticLoss) {
  MaskRCNNConvUpsampleHead head(
      {.in_channels = 16, .num_classes = 1, .num_conv = 4, .conv_dim = 16});
  DeterministicFill(head);
  const auto [instances, targets] = LossInputs();
  const torch::Tensor x = DeterministicTensor("fpn/features", {8, 16, 14, 14});
  Check("fpn_agnostic/loss_mask", head.Losses(x, instances, targets));
}

TEST_F(Detectron2MaskHeadTest, NoForegroundGivesZeroLoss) {
  MaskRCNNConvUpsampleHead head(
      {.in_channels = 4, .num_classes = 3, .num_conv = 1, .conv_dim = 4});
  std::vector<Instances> empty(2);
  std::vector<ImageTargets> targets(2);
  const torch::Tensor x = torch::randn({0, 4, 14, 14}, torch::requires_grad());
  const torch::Tensor loss = head.Losses(x, empty, targets);
  EXPECT_EQ(loss.item<float>(), 0.0f);
  loss.backward();  // still connected to the head, as pred.sum() * 0
}

TEST_F(Detectron2MaskHeadTest, Inference) {
  const torch::Tensor logits = DeterministicTensor(
      "inference/logits", {6, 6, 28, 28}, torch::kFloat, 0.0, 4.0);
  std::vector<Instances> preds(2);
  for (int i = 0; i < 2; ++i) {
    preds[static_cast<size_t>(i)].pred_classes = DeterministicIntegers(
        "inference/classes/" + std::to_string(i), {3}, 0, 6);
  }
  MaskRcnnInference(logits, preds);
  Check("inference/pred_masks0", preds[0].pred_masks, 0.0);
  Check("inference/pred_masks1", preds[1].pred_masks, 0.0);
}

// The golden script's paste inputs.
std::pair<torch::Tensor, torch::Tensor> PasteInputs() {
  const torch::Tensor masks =
      DeterministicTensor("paste/masks", {7, 28, 28}, torch::kFloat, 0.0, 4.0)
          .sigmoid();
  const torch::Tensor x0 =
      DeterministicTensor("paste/x0", {7}, torch::kFloat, 40.0, 35.0);
  const torch::Tensor y0 =
      DeterministicTensor("paste/y0", {7}, torch::kFloat, 30.0, 25.0);
  const torch::Tensor w =
      DeterministicTensor("paste/w", {7}, torch::kFloat, 20.0, 18.0);
  const torch::Tensor h =
      DeterministicTensor("paste/h", {7}, torch::kFloat, 15.0, 13.0);
  torch::Tensor boxes = torch::stack({x0, y0, x0 + w, y0 + h}, 1);
  boxes[0] = torch::tensor({-6.5f, -3.25f, 20.75f, 18.5f});
  return {masks, boxes};
}

TEST_F(Detectron2MaskHeadTest, PasteMasksInImage) {
  const auto [masks, boxes] = PasteInputs();
  const torch::Tensor pasted = PasteMasksInImage(masks, boxes, 60, 80, 0.5);
  EXPECT_EQ(pasted.scalar_type(), torch::kBool);
  Check("paste/masks", pasted, 0.0);
  EXPECT_EQ(
      PasteMasksInImage(masks.narrow(0, 0, 0), boxes.narrow(0, 0, 0), 60, 80)
          .scalar_type(),
      torch::kByte);
}

TEST_F(Detectron2MaskHeadTest, DetectorPostprocessMasks) {
  const auto [masks, boxes] = PasteInputs();
  torch::Tensor boxes_in = boxes * 1.5;
  boxes_in[3] = torch::tensor({125.0f, 10.0f, 140.0f, 30.0f});
  // detector_postprocess from a 90x120 input to a 60x80 output.
  torch::Tensor out = ScaleBoxes(boxes_in, 80.0 / 120.0, 60.0 / 90.0);
  out = ClipBoxes(out, 60, 80);
  const torch::Tensor keep = NonemptyBoxes(out);
  out = out.index({keep});
  MaskRCNNConvUpsampleHead head(
      {.in_channels = 4, .num_classes = 3, .num_conv = 0, .conv_dim = 4});
  const torch::Tensor pasted =
      head.PasteMasks(masks.unsqueeze(1).index({keep}), out, 60, 80, 0.5);
  Check("postprocess/boxes", out, 0.0);
  Check("postprocess/masks", pasted, 0.0);
}

}  // namespace
}  // namespace torchbench::detectron2
