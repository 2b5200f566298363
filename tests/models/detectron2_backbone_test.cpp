// models/common/detectron2/ against detectron2 at c470ca3 (TorchBench's pin),
// figures measured by running the reference through tools/golden/
// detectron2_env.py in the project's venv (build_model of the model-zoo
// configs, LazyConfig fcos_R_50_FPN_1x; counts are sum(numel) over
// parameters() and buffers(); the resize sums are LibTorch's uint8 bilinear
// antialias kernel as torch.nn.functional.interpolate runs it in Python;
// PIL's resize sums 326464880 and 52258336 there).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "common/coco_synthetic.h"
#include "common/detectron2/anchor_generator.h"
#include "common/detectron2/backbone.h"
#include "common/detectron2/image_list.h"
#include "torchbench/model.h"

namespace torchbench::detectron2 {
namespace {

int64_t Trainable(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) {
    if (p.requires_grad()) n += p.numel();
  }
  return n;
}

TEST(Detectron2BackboneTest, ResNet50FpnCountsNamesAndShapes) {
  torch::NoGradGuard no_grad;
  FPN fpn = BuildResNetFPNBackbone(ResNetOptions(), FPNOptions());
  const ElementCounts counts = CountElements(*fpn);
  EXPECT_EQ(counts.parameters, 26799296);
  EXPECT_EQ(counts.buffers, 106240);
  EXPECT_EQ(Trainable(*fpn), 26576896);  // freeze_at 2: stem and res2
  const auto params = fpn->named_parameters();
  EXPECT_EQ(params.size(), 69u);
  for (const char* name :
       {"fpn_lateral2.weight", "fpn_output5.bias",
        "bottom_up.stem.conv1.weight", "bottom_up.res2.0.shortcut.weight",
        "bottom_up.res5.2.conv3.weight"}) {
    EXPECT_TRUE(params.contains(name)) << name;
  }
  const auto buffers = fpn->named_buffers();
  EXPECT_EQ(buffers.size(), 212u);
  EXPECT_TRUE(buffers.contains("bottom_up.stem.conv1.norm.running_var"));
  EXPECT_EQ(fpn->size_divisibility(), 32);

  const FeatureMap out = fpn->forward(torch::zeros({1, 3, 320, 416}));
  const std::vector<std::vector<int64_t>> shapes = {{1, 256, 80, 104},
                                                    {1, 256, 40, 52},
                                                    {1, 256, 20, 26},
                                                    {1, 256, 10, 13},
                                                    {1, 256, 5, 7}};
  ASSERT_EQ(fpn->out_features(),
            (std::vector<std::string>{"p2", "p3", "p4", "p5", "p6"}));
  std::vector<torch::Tensor> levels;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& f = out.at(fpn->out_features()[i]);
    EXPECT_EQ(f.sizes().vec(), shapes[i]) << fpn->out_features()[i];
    levels.push_back(f);
  }

  // The R-CNN RPN's anchor generator on these levels.
  using Lists = std::vector<std::vector<double>>;
  DefaultAnchorGenerator anchors(Lists{{32}, {64}, {128}, {256}, {512}},
                                 Lists{{0.5, 1.0, 2.0}},
                                 std::vector<int64_t>{4, 8, 16, 32, 64});
  EXPECT_EQ(CountElements(*anchors).buffers, 60);
  const auto grid = anchors->forward(levels);
  const std::vector<int64_t> rows = {24960, 6240, 1560, 390, 105};
  const std::vector<double> sums = {18170879.999824524, 4492799.985786438,
                                    1098240.0012283325, 262080.00379180908,
                                    67200.00173950195};
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(grid[i].size(0), rows[i]);
    EXPECT_NEAR(grid[i].to(torch::kDouble).sum().item<double>(), sums[i],
                1e-6 * sums[i]);
  }
  EXPECT_FLOAT_EQ(grid[0][3][0].item<float>(), -18.627416610717773f);
}

TEST(Detectron2BackboneTest, OtherBackboneCounts) {
  // C4: ResNet up to res4, and Res5ROIHeads' res5 stage.
  ResNet c4(ResNetOptions().out_features({"res4"}));
  EXPECT_EQ(CountElements(*c4).parameters, 8512704);
  EXPECT_EQ(CountElements(*c4).buffers, 61184);
  BottleneckOptions res5;
  res5.in_channels = 1024;
  res5.out_channels = 2048;
  res5.bottleneck_channels = 512;
  res5.stride = 2;
  res5.stride_in_1x1 = true;
  auto stage = MakeBottleneckStage(3, res5);
  EXPECT_EQ(CountElements(*stage).parameters, 14942208);
  EXPECT_EQ(CountElements(*stage).buffers, 45056);
  // R-101 DC5: res5 dilated, stride 16.
  ResNet dc5(
      ResNetOptions().depth(101).res5_dilation(2).out_features({"res5"}));
  EXPECT_EQ(CountElements(*dc5).parameters, 42394816);
  EXPECT_EQ(CountElements(*dc5).buffers, 210688);
  EXPECT_EQ(dc5->output_shape().at("res5").stride, 16);
  // FCOS: res3..res5, P6/P7 from p5.
  FPN fcos = BuildResNetFPNBackbone(ResNetOptions(),
                                    FPNOptions()
                                        .in_features({"res3", "res4", "res5"})
                                        .top_block(TopBlock::kLastLevelP6P7)
                                        .top_block_in_feature("p5"));
  EXPECT_EQ(CountElements(*fcos).parameters, 27323584);
  EXPECT_EQ(CountElements(*fcos).buffers, 106240);
  EXPECT_EQ(fcos->out_features(),
            (std::vector<std::string>{"p3", "p4", "p5", "p6", "p7"}));
  EXPECT_EQ(fcos->output_shape().at("p7").stride, 128);
}

TEST(Detectron2BackboneTest, InputsAsTheTestMapperMakesThem) {
  const auto size = ResizeShortestEdgeSize(480, 640, 800, 1333);
  EXPECT_EQ(size[0], 800);
  EXPECT_EQ(size[1], 1067);
  const auto pixels = coco_synthetic::MakeImagePixels(0);
  const auto big = TestImage(pixels, 800, 1067);
  EXPECT_EQ(big.sizes().vec(), (std::vector<int64_t>{3, 800, 1067}));
  EXPECT_EQ(big.to(torch::kLong).sum().item<int64_t>(), 326465174);
  EXPECT_EQ(big[0].to(torch::kLong).sum().item<int64_t>(), 108849492);
  const auto small = TestImage(pixels, 320, 427);
  EXPECT_EQ(small.to(torch::kLong).sum().item<int64_t>(), 52258348);
  EXPECT_EQ(
      small.select(1, 5).select(1, 7).to(torch::kLong).sum().item<int64_t>(),
      291);

  const auto mean = torch::tensor({103.530, 116.280, 123.675}).view({3, 1, 1});
  const auto std = torch::ones({3, 1, 1});
  const ImageList list = PreprocessImages({small, big}, mean, std, 32);
  EXPECT_EQ(list.tensor.sizes().vec(), (std::vector<int64_t>{2, 3, 800, 1088}));
  EXPECT_EQ(list.image_sizes[0], (std::array<int64_t, 2>{320, 427}));
  EXPECT_EQ(list.tensor[0][0][0][500].item<float>(), 0.0f);  // padding
  EXPECT_FLOAT_EQ(list.tensor[1][2][0][0].item<float>(),
                  big[2][0][0].item<float>() - 123.675f);
}

}  // namespace
}  // namespace torchbench::detectron2
