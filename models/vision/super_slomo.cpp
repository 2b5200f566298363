// TorchBench's Super_SloMo (torchbenchmark/models/Super_SloMo at 43ca0857,
// a copy of avinashpaliwal/Super-SloMo): model_wrapper.Model, i.e. the
// flow-computation UNet(6, 4), the arbitrary-time flow-interpolation
// UNet(20, 5), backWarp (grid_sample on a pixel grid) and VGG16's first 22
// feature layers (through conv4_3) for the perceptual loss, with the
// training loss computed inside forward():
//   204 * L1(Ft_p, IFrame) + 102 * warp L1 + 0.005 * MSE(vgg(Ft_p),
//   vgg(IFrame)) + flow smoothness.
//
// One Train call is TorchBench's train(): zero_grad, forward, backward and
// Adam(lr 1e-4) over model.parameters() (the frozen VGG gets no gradients,
// so Adam skips it). One Eval call is eval(): the same forward (Ft_p and the
// loss), under no_grad; Step returns Ft_p.
//
// Not faithful: the reference loads torchvision's ImageNet VGG16 weights
// (IMAGENET1K_V1, downloaded); here VGG16 is randomly initialised as
// torchvision does without weights (kaiming-normal convolutions, zero
// biases). Shapes, parameter counts, FLOPs and the code path are the same;
// the perceptual loss's values are not.
//
// Inputs are synthetic and deterministic. The reference prefetches the first
// batch of its SuperSloMo training set (Super_SloMo_inputs.tar.gz, an
// S3/LFS pointer in the checkout): per sample, three 352x352 crops of a
// 640x360 clip (I0, an intermediate frame, I1), ToTensor then minus the mean
// (0.429, 0.431, 0.397) with std 1, and the intermediate frame's index in
// [0, 6]. Here pixels are U(0, 1) minus that mean, and indices uniform in
// [0, 6], drawn with LibTorch's generator. The reference passes
// (frameIndex, I0, intermediate, I1) to forward(trainFrameIndex, I0, I1,
// IFrame), so the intermediate frame is used as I1 and the far frame as the
// target; the port keeps that order.
//
// With ModelConfig::small_inputs the frames are 64x64 instead of 352x352
// (both divisible by the UNets' 2^5; the same layers run).
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/functional/pooling.h>
#include <torch/nn/functional/upsampling.h>
#include <torch/nn/functional/vision.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/vgg_features.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace super_slomo_model {
namespace {

namespace F = torch::nn::functional;

constexpr int64_t kImageSize = 352;  // randomCropSize; backWarp(352, 352)
constexpr int64_t kSmallImageSize = 64;
constexpr int64_t kGoldenImageSize = 32;
constexpr int64_t kIntermediateFrames = 7;
constexpr size_t kVggConv43Layers = 22;
constexpr double kLr = 1e-4;
constexpr std::array<double, 3> kMean = {0.429, 0.431, 0.397};

torch::Tensor LeakyRelu(const torch::Tensor& x) {
  return F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.1));
}

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, kernel).padding((kernel - 1) / 2));
}

// slomo_model.down: 2x2 average pool, then two convolutions with
// LeakyReLU(0.1).
class DownImpl : public torch::nn::Module {
 public:
  DownImpl(int64_t in, int64_t out, int64_t kernel)
      : conv1_(register_module("conv1", Conv(in, out, kernel))),
        conv2_(register_module("conv2", Conv(out, out, kernel))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = F::avg_pool2d(x, F::AvgPool2dFuncOptions(2));
    x = LeakyRelu(conv1_->forward(x));
    return LeakyRelu(conv2_->forward(x));
  }

 private:
  torch::nn::Conv2d conv1_, conv2_;
};
TORCH_MODULE(Down);

// slomo_model.up: bilinear x2 upsampling, a convolution, concatenation with
// the skip connection and a second convolution, each with LeakyReLU(0.1).
class UpImpl : public torch::nn::Module {
 public:
  UpImpl(int64_t in, int64_t out)
      : conv1_(register_module("conv1", Conv(in, out, 3))),
        conv2_(register_module("conv2", Conv(2 * out, out, 3))) {}

  torch::Tensor forward(torch::Tensor x, const torch::Tensor& skip) {
    x = F::interpolate(x, F::InterpolateFuncOptions()
                              .scale_factor(std::vector<double>{2.0, 2.0})
                              .mode(torch::kBilinear)
                              .align_corners(false));
    x = LeakyRelu(conv1_->forward(x));
    return LeakyRelu(conv2_->forward(torch::cat({x, skip}, 1)));
  }

 private:
  torch::nn::Conv2d conv1_, conv2_;
};
TORCH_MODULE(Up);

// slomo_model.UNet: two 7x7 convolutions, five Down and five Up blocks and
// a 3x3 head, every layer followed by LeakyReLU(0.1).
class UNetImpl : public torch::nn::Module {
 public:
  UNetImpl(int64_t in, int64_t out)
      : conv1_(register_module("conv1", Conv(in, 32, 7))),
        conv2_(register_module("conv2", Conv(32, 32, 7))),
        down1_(register_module("down1", Down(32, 64, 5))),
        down2_(register_module("down2", Down(64, 128, 3))),
        down3_(register_module("down3", Down(128, 256, 3))),
        down4_(register_module("down4", Down(256, 512, 3))),
        down5_(register_module("down5", Down(512, 512, 3))),
        up1_(register_module("up1", Up(512, 512))),
        up2_(register_module("up2", Up(512, 256))),
        up3_(register_module("up3", Up(256, 128))),
        up4_(register_module("up4", Up(128, 64))),
        up5_(register_module("up5", Up(64, 32))),
        conv3_(register_module("conv3", Conv(32, out, 3))) {}

  torch::Tensor forward(const torch::Tensor& input) {
    torch::Tensor x = LeakyRelu(conv1_->forward(input));
    const torch::Tensor s1 = LeakyRelu(conv2_->forward(x));
    const torch::Tensor s2 = down1_->forward(s1);
    const torch::Tensor s3 = down2_->forward(s2);
    const torch::Tensor s4 = down3_->forward(s3);
    const torch::Tensor s5 = down4_->forward(s4);
    x = down5_->forward(s5);
    x = up1_->forward(x, s5);
    x = up2_->forward(x, s4);
    x = up3_->forward(x, s3);
    x = up4_->forward(x, s2);
    x = up5_->forward(x, s1);
    return LeakyRelu(conv3_->forward(x));
  }

 private:
  torch::nn::Conv2d conv1_, conv2_;
  Down down1_, down2_, down3_, down4_, down5_;
  Up up1_, up2_, up3_, up4_, up5_;
  torch::nn::Conv2d conv3_;
};
TORCH_MODULE(UNet);

// slomo_model.backWarp: samples `img` at pixel (x + u, y + v), normalised
// as the reference does (2 * (x / W - 0.5)), with grid_sample's defaults
// (bilinear, zero padding, align_corners false). Its grids are plain
// tensors, not buffers, in the reference too.
class BackWarp {
 public:
  BackWarp(int64_t width, int64_t height, torch::Device device)
      : width_(width), height_(height) {
    auto grids = torch::meshgrid(
        {torch::arange(height, torch::TensorOptions().device(device)),
         torch::arange(width, torch::TensorOptions().device(device))},
        "ij");
    grid_y_ = grids[0];
    grid_x_ = grids[1];
  }

  torch::Tensor operator()(const torch::Tensor& img,
                           const torch::Tensor& flow) const {
    const torch::Tensor u = flow.select(1, 0);
    const torch::Tensor v = flow.select(1, 1);
    torch::Tensor x = grid_x_.unsqueeze(0).expand_as(u).to(u.scalar_type()) + u;
    torch::Tensor y = grid_y_.unsqueeze(0).expand_as(v).to(u.scalar_type()) + v;
    x = 2 * (x / width_ - 0.5);
    y = 2 * (y / height_ - 0.5);
    return F::grid_sample(img, torch::stack({x, y}, 3),
                          F::GridSampleFuncOptions()
                              .mode(torch::kBilinear)
                              .padding_mode(torch::kZeros)
                              .align_corners(false));
  }

 private:
  int64_t width_, height_;
  torch::Tensor grid_x_, grid_y_;
};

// t of each sample's intermediate frame, shaped (B, 1, 1, 1):
// linspace(0.125, 0.875, 7)[indices] in the frames' dtype.
torch::Tensor FrameTime(const torch::Tensor& indices,
                        const torch::Tensor& like) {
  return torch::linspace(0.125, 0.875, kIntermediateFrames, like.options())
      .index({indices})
      .view({-1, 1, 1, 1});
}

torch::Tensor MeanAbsDiff(const torch::Tensor& a, const torch::Tensor& b) {
  return torch::mean(torch::abs(a - b));
}

// The flow's smoothness term: mean |horizontal| + mean |vertical| steps.
torch::Tensor Smoothness(const torch::Tensor& f) {
  using torch::indexing::Slice;
  const auto all = Slice();
  return MeanAbsDiff(
             f.index({all, all, all, Slice(0, -1)}),
             f.index({all, all, all, Slice(1, torch::indexing::None)})) +
         MeanAbsDiff(f.index({all, all, Slice(0, -1), all}),
                     f.index({all, all, Slice(1, torch::indexing::None), all}));
}

// model_wrapper.Model.
class SloMoImpl : public torch::nn::Module {
 public:
  SloMoImpl(int64_t image_size, torch::Device device)
      : flowComp(register_module("flowComp", UNet(6, 4))),
        ArbTimeFlowIntrp(register_module("ArbTimeFlowIntrp", UNet(20, 5))),
        vgg16_conv_4_3(register_module(
            "vgg16_conv_4_3",
            vgg::MakeFeatures(vgg::Vgg16Config(), kVggConv43Layers))),
        warp_(image_size, image_size, device) {
    vgg::InitConvolutions(*vgg16_conv_4_3);
    for (auto& p : vgg16_conv_4_3->parameters()) p.requires_grad_(false);
  }

  void set_image_size(int64_t size, torch::Device device) {
    warp_ = BackWarp(size, size, device);
  }

  // forward(trainFrameIndex, I0, I1, IFrame): the interpolated frame Ft_p
  // and the training loss.
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& index,
                                                  const torch::Tensor& i0,
                                                  const torch::Tensor& i1,
                                                  const torch::Tensor& target) {
    using torch::indexing::Slice;
    const auto all = Slice();
    const torch::Tensor flow_out = flowComp->forward(torch::cat({i0, i1}, 1));
    const torch::Tensor f_0_1 = flow_out.index({all, Slice(0, 2)});
    const torch::Tensor f_1_0 = flow_out.index({all, Slice(2)});

    // getFlowCoeff: C00 = C11 = -(1 - t) t, C01 = t^2, C10 = (1 - t)^2.
    const torch::Tensor t = FrameTime(index, i0);
    const torch::Tensor c00 = -(1 - t) * t;
    const torch::Tensor c01 = t * t;
    const torch::Tensor c10 = (1 - t) * (1 - t);
    const torch::Tensor& c11 = c00;
    const torch::Tensor f_t_0 = c00 * f_0_1 + c01 * f_1_0;
    const torch::Tensor f_t_1 = c10 * f_0_1 + c11 * f_1_0;
    const torch::Tensor g_i0_f_t_0 = warp_(i0, f_t_0);
    const torch::Tensor g_i1_f_t_1 = warp_(i1, f_t_1);

    const torch::Tensor intrp_out = ArbTimeFlowIntrp->forward(torch::cat(
        {i0, i1, f_0_1, f_1_0, f_t_1, f_t_0, g_i1_f_t_1, g_i0_f_t_0}, 1));
    const torch::Tensor f_t_0_f = intrp_out.index({all, Slice(0, 2)}) + f_t_0;
    const torch::Tensor f_t_1_f = intrp_out.index({all, Slice(2, 4)}) + f_t_1;
    const torch::Tensor v_t_0 =
        torch::sigmoid(intrp_out.index({all, Slice(4, 5)}));
    const torch::Tensor v_t_1 = 1 - v_t_0;
    const torch::Tensor g_i0_f_t_0_f = warp_(i0, f_t_0_f);
    const torch::Tensor g_i1_f_t_1_f = warp_(i1, f_t_1_f);

    // getWarpCoeff: C0 = 1 - t, C1 = t.
    const torch::Tensor w0 = 1 - t;
    const torch::Tensor& w1 = t;
    const torch::Tensor ft_p =
        (w0 * v_t_0 * g_i0_f_t_0_f + w1 * v_t_1 * g_i1_f_t_1_f) /
        (w0 * v_t_0 + w1 * v_t_1);

    const torch::Tensor recn_loss = F::l1_loss(ft_p, target);
    const torch::Tensor prcp_loss = F::mse_loss(
        vgg16_conv_4_3->forward(ft_p), vgg16_conv_4_3->forward(target));
    const torch::Tensor warp_loss =
        F::l1_loss(g_i0_f_t_0, target) + F::l1_loss(g_i1_f_t_1, target) +
        F::l1_loss(warp_(i0, f_1_0), i1) + F::l1_loss(warp_(i1, f_0_1), i0);
    const torch::Tensor loss_smooth = Smoothness(f_1_0) + Smoothness(f_0_1);
    const torch::Tensor loss =
        204 * recn_loss + 102 * warp_loss + 0.005 * prcp_loss + loss_smooth;
    return {ft_p, loss};
  }

  UNet flowComp, ArbTimeFlowIntrp;
  torch::nn::Sequential vgg16_conv_4_3;

 private:
  BackWarp warp_;
};
TORCH_MODULE(SloMo);

class SuperSloMo final : public Model, public GoldenCheck {
 public:
  explicit SuperSloMo(const ModelConfig& config)
      : mode_(config.mode),
        device_(config.device),
        net_(config.small_inputs ? kSmallImageSize : kImageSize,
             config.device) {
    net_->to(config.device);
    const int64_t size = config.small_inputs ? kSmallImageSize : kImageSize;
    const int64_t b = config.batch_size;
    // Frames before the index, as the reference's loader yields them.
    const torch::Tensor mean =
        torch::tensor(std::vector<double>(kMean.begin(), kMean.end()))
            .to(torch::kFloat)
            .view({1, 3, 1, 1});
    for (torch::Tensor* frame : {&i0_, &intermediate_, &i1_}) {
      *frame =
          (torch::rand({b, 3, size, size}) - mean).to(config.float_options());
    }
    frame_index_ =
        torch::randint(kIntermediateFrames, {b}, torch::kLong).to(device_);
    if (mode_ == Mode::kTrain) {
      net_->train();
      optimizer_ = std::make_unique<optim::Adam>(
          net_->parameters(), optim::AdamOptions{.lr = kLr}, config.optimizer);
    } else {
      net_->eval();
    }
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) return Forward().first;
    optimizer_->ZeroGrad();
    torch::Tensor loss = Forward().second;
    Backward(loss);
    optimizer_->Step();
    return loss.detach();
  }

  torch::nn::Module& module() override { return *net_; }

  // eval() and one train() of the reference's own code
  // (tools/golden/adapters/Super_SloMo.py) on filled weights and frames at
  // 32x32, in float64: grid_sample's bilinear weights and the division by
  // the visibility blend make float32 results differ beyond 1e-4 between
  // two summation orders.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    net_->to(torch::kDouble);  // In place: the optimizer keeps the tensors.
    net_->set_image_size(kGoldenImageSize, device_);
    const int64_t b = i0_.size(0);
    const std::vector<int64_t> shape = {b, 3, kGoldenImageSize,
                                        kGoldenImageSize};
    frame_index_ =
        DeterministicIntegers("frame_index", {b}, 0, kIntermediateFrames);
    i0_ = DeterministicTensor("frame0", shape, torch::kDouble);
    intermediate_ = DeterministicTensor("frame_t", shape, torch::kDouble);
    i1_ = DeterministicTensor("frame1", shape, torch::kDouble);
    std::map<std::string, torch::Tensor> out;
    {
      torch::NoGradGuard no_grad;
      auto [ft_p, loss] = Forward();
      out["eval:Ft_p"] = ft_p;
      out["eval:loss"] = loss;
    }
    optimizer_->ZeroGrad();
    auto [ft_p, loss] = Forward();
    Backward(loss);
    out["train:Ft_p"] = ft_p.detach();
    out["train:loss"] = loss.detach();
    RecordEdgeParameters(*net_->flowComp, "grad:flowComp.", true, &out);
    RecordEdgeParameters(*net_->ArbTimeFlowIntrp, "grad:ArbTimeFlowIntrp.",
                         true, &out);
    optimizer_->Step();
    RecordEdgeParameters(*net_->flowComp, "after_step:flowComp.", false, &out);
    RecordEdgeParameters(*net_->ArbTimeFlowIntrp,
                         "after_step:ArbTimeFlowIntrp.", false, &out);
    return out;
  }

 private:
  // Model.example_inputs = (frameIndex, I0, intermediate, I1) into
  // forward(trainFrameIndex, I0, I1, IFrame).
  std::pair<torch::Tensor, torch::Tensor> Forward() {
    return net_->forward(frame_index_, i0_, intermediate_, i1_);
  }

  Mode mode_;
  torch::Device device_;
  SloMo net_;
  torch::Tensor frame_index_, i0_, intermediate_, i1_;
  std::unique_ptr<optim::Adam> optimizer_;
};

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    ModelSpec({.name = "Super_SloMo",
               .domain = "vision",
               .task = "video frame interpolation",
               .reference = "TorchBench Super_SloMo "
                            "(avinashpaliwal/Super-SloMo: two UNets, "
                            "backWarp, VGG16 conv4_3 perceptual loss, "
                            "352x352)",
               .train_batch_size = 6,  // DEFAULT_TRAIN_BSIZE
               .eval_batch_size = 6,   // DEFAULT_EVAL_BSIZE
               // model_wrapper.Model built in the venv (pinned torch,
               // pinned torchvision; vgg16 with weights=None, which has the
               // same shapes), counted with sum(p.numel() ...) over
               // parameters() and buffers(): flowComp 19,794,116,
               // ArbTimeFlowIntrp 19,816,357, vgg16_conv_4_3 7,635,264 (frozen,
               // still counted); no buffers (backWarp's grids are plain
               // tensors).
               .reference_parameters = 47245737,
               .reference_buffers = 0,
               // TorchBench's metadata.yaml (tests/golden/cudnn_flags.txt).
               .train_cudnn = {.deterministic = true},
               .eval_cudnn = {.deterministic = true},
               .checks = {.golden_file = "Super_SloMo.golden"}}),
    MakeModel<SuperSloMo>());

}  // namespace super_slomo_model
}  // namespace torchbench
