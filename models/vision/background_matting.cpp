// TorchBench's Background_Matting (torchbenchmark/models/Background_Matting
// at 43ca0857, a copy of senguptaumd/Background-Matting's train_real_fixed.py):
// the self-supervised "Real_fixed" stage. netG is a ResnetConditionHR
// (n_blocks1 7, n_blocks2 3; four encoders for image, background,
// segmentation guide and four motion frames, BatchNorm, an alpha and a
// foreground head) with conv_init; netB is a second ResnetConditionHR,
// default-initialised (the reference loads no weights into it), in eval mode
// with requires_grad off, the pseudo-supervision teacher; netD is a
// MultiscaleDiscriminator with num_D 1 (one PatchGAN of 4x4 convolutions
// padded by 2, InstanceNorm) with conv_init.
//
// One Train call is Model.train() on its one batch (num_of_batches 1):
// netB's alpha and foreground; masks alpha_sup > -0.98 and seg_gt > 0.95;
// netG's outputs; al_loss (normalised L1 to alpha_sup + 0.5 x the Sobel
// alpha-gradient loss), fg_loss, comp_loss; bg permuted, or back_rnd when
// random_sample() > 0.5; compose_image_withshift (detached, as its
// Variable() does); netD's LSGAN loss on it; lossG = ganG + 0.05 (comp + al +
// fg); zero_grad, backward (which also fills netD's gradients), Adam(lr
// 1e-4) step of netG; lossD = (real + fake) / 2 on the shifted composite and
// the image; as i % 5 == 0 at i = 0, zero_grad, backward, Adam(lr 1e-5) step
// of netD; the eight losses read to the host, as its tensorboardX add_scalar
// calls do. netG's model_enc_multi runs but its output is unused (the
// reference's comb_multi takes cat(img_feat, back_feat)), so its parameters
// get no gradient and Adam skips them, as in the reference. eval() raises
// NotImplementedError: this port registers Train only.
//
// Inputs: the reference reads Background_Matting_inputs.tar.gz (an LFS
// pointer in the checkout) through VideoData: 512x512 crops around the
// person, to_tensor's 2 x / 255 - 1 of 8-bit images; it trains on the first
// prefetched batch only, which stays in host memory (its __init__ discards
// the data[key].to(device) results), so every train() call copies the six
// tensors to the device; the port keeps its batch on the host and copies it
// the same way. Here that batch is synthetic and deterministic,
// drawn after the networks from LibTorch's generator, on the 8-bit grid in
// [-1, 1]: per sample an upright ellipse for the person (centre row
// 0.45..0.6 H, column 0.4..0.6 W, semi-axes 0.3..0.4 H and 0.14..0.18 W);
// seg-gt its hard mask (+1 inside, -1 outside, as a 0/255 segmentation);
// seg, the guide create_seg_guide erodes, dilates and blurs (Gaussian
// 21..41 px at 512) from it, a soft ellipse 0.9..1.1 times as large; fg, bg
// and back-rnd U(-1, 1); image the seg-gt composite of fg on bg; multi_fr
// four frames of image's grayscale (cv2 BGR2GRAY on RGB arrays, as the
// reference) plus U(-0.05, 0.05) noise each.
//
// The numpy draws (permutation, random_sample, randint) come from a host
// Mersenne Twister seeded once from LibTorch's generator, so the values
// differ from numpy's; the golden check fills them on both sides.
//
// Differences from the reference:
//  - The torch.save of netG, netD and both optimizers' state at the end of
//    each call and the tensorboardX event writes are not ported (disk I/O);
//    the loss reads to the host that add_scalar makes are.
//  - Model.__init__'s _maybe_trace (one forward of netB and netG) is not
//    run: its only lasting effect is one update of netG's BatchNorm running
//    statistics, which train-mode forwards never read.
//  - image_sh, mask0, the GAN labels and the Sobel filters are made in the
//    inputs' dtype (the reference's float32 ones make its fp16 path fail at
//    netD(image_sh)); the masks stay float32, as .type(torch.FloatTensor).
//    Each is made on the host and copied to the device, as the reference's.
//
// With ModelConfig::small_inputs the images are 48x48 instead of 512x512
// (same layers; the shift range stays non-empty): a full-size Train call is
// about 10 TFLOP at the fixed batch of 4, minutes on one core.
#include <torch/nn/functional/conv.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/padding.h>
#include <torch/nn/modules/upsampling.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/pix2pix_networks.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace background_matting_model {
namespace {

namespace F = torch::nn::functional;
namespace nn = torch::nn;

constexpr int64_t kImageSize = 512;  // opt.resolution
constexpr int64_t kSmallImageSize = 48;
constexpr int64_t kNgf = 64;
constexpr int64_t kNfPart = 64;
constexpr int kBlocks1 = 7;  // n_blocks1
constexpr int kBlocks2 = 3;  // n_blocks2
constexpr double kLrG = 1e-4;
constexpr double kLrD = 1e-5;
// The golden check (tools/golden/adapters/Background_Matting.py).
constexpr int64_t kGoldenSize = 32;
constexpr int64_t kGoldenBandBegin = 12, kGoldenBandEnd = 20;
constexpr int kGoldenCalls = 2;

nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                int64_t padding, bool bias) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel)
                        .stride(stride)
                        .padding(padding)
                        .bias(bias));
}

nn::ReLU Relu() { return nn::ReLU(nn::ReLUOptions().inplace(true)); }

nn::Upsample Upsample2() {
  return nn::Upsample(nn::UpsampleOptions()
                          .scale_factor(std::vector<double>{2, 2})
                          .mode(torch::kBilinear)
                          .align_corners(true));
}

// Appends conv, BatchNorm2d (of the conv's output channels), ReLU.
void PushConvBnRelu(nn::Sequential& s, nn::Conv2d conv) {
  const int64_t out = conv->options.out_channels();
  s->push_back(conv);
  s->push_back(nn::BatchNorm2d(out));
  s->push_back(Relu());
}

// An encoder: reflection pad 3, 7x7 convolution to ngf, then `downsamplings`
// stride-2 3x3 convolutions doubling the channels, each with BatchNorm, ReLU.
nn::Sequential Encoder(int64_t input_nc, int downsamplings) {
  nn::Sequential s(nn::ReflectionPad2d(3));
  PushConvBnRelu(s, Conv(input_nc, kNgf, 7, 1, 0, true));
  for (int i = 0; i < downsamplings; ++i) {
    PushConvBnRelu(s, Conv(kNgf << i, kNgf << (i + 1), 3, 2, 1, true));
  }
  return s;
}

void PushResBlocks(nn::Sequential& s, int n, int64_t dim) {
  for (int i = 0; i < n; ++i) {
    s->push_back(pix2pix::ResnetBlock(dim, pix2pix::BlockNorm::kBatch));
  }
}

// A 1x1 combination of image and other features: conv (no bias), BN, ReLU.
nn::Sequential Combine(int64_t in, int64_t out) {
  nn::Sequential s;
  PushConvBnRelu(s, Conv(in, out, 1, 1, 0, false));
  return s;
}

// An upsampling stage: bilinear x2 (align_corners), 3x3 convolution, BN,
// ReLU.
void PushUp(nn::Sequential& s, int64_t in, int64_t out) {
  s->push_back(Upsample2());
  PushConvBnRelu(s, Conv(in, out, 3, 1, 1, true));
}

// networks.py's ResnetConditionHR(input_nc=(3, 3, 1, 4), output_nc=4),
// modules registered in the reference's order.
class ResnetConditionHRImpl : public nn::Module {
 public:
  ResnetConditionHRImpl() {
    constexpr int64_t kFeat = kNgf * 4;  // 256 channels at H/4
    model_enc1 = register_module("model_enc1", Encoder(3, 1));
    nn::Sequential enc2;
    PushConvBnRelu(enc2, Conv(kNgf * 2, kFeat, 3, 2, 1, true));
    model_enc2 = register_module("model_enc2", enc2);
    model_enc_back = register_module("model_enc_back", Encoder(3, 2));
    model_enc_seg = register_module("model_enc_seg", Encoder(1, 2));
    model_enc_multi = register_module("model_enc_multi", Encoder(4, 2));
    comb_back = register_module("comb_back", Combine(kFeat * 2, kNfPart));
    comb_seg = register_module("comb_seg", Combine(kFeat * 2, kNfPart));
    comb_multi = register_module("comb_multi", Combine(kFeat * 2, kNfPart));
    nn::Sequential res_dec;
    PushConvBnRelu(res_dec, Conv(kFeat + 3 * kNfPart, kFeat, 1, 1, 0, false));
    PushResBlocks(res_dec, kBlocks1, kFeat);
    model_res_dec = register_module("model_res_dec", res_dec);
    nn::Sequential res_dec_al, res_dec_fg;
    PushResBlocks(res_dec_al, kBlocks2, kFeat);
    PushResBlocks(res_dec_fg, kBlocks2, kFeat);
    model_res_dec_al = register_module("model_res_dec_al", res_dec_al);
    model_res_dec_fg = register_module("model_res_dec_fg", res_dec_fg);
    nn::Sequential al_out;
    PushUp(al_out, kFeat, kFeat / 2);
    PushUp(al_out, kFeat / 2, kNgf);
    al_out->push_back(nn::ReflectionPad2d(3));
    al_out->push_back(Conv(kNgf, 1, 7, 1, 0, true));
    al_out->push_back(nn::Tanh());
    model_al_out = register_module("model_al_out", al_out);
    nn::Sequential dec_fg1;
    PushUp(dec_fg1, kFeat, kNgf * 2);
    model_dec_fg1 = register_module("model_dec_fg1", dec_fg1);
    nn::Sequential fg_out;
    PushUp(fg_out, kFeat, kNgf);
    fg_out->push_back(nn::ReflectionPad2d(3));
    fg_out->push_back(Conv(kNgf, 3, 7, 1, 0, true));
    model_fg_out = register_module("model_fg_out", fg_out);
  }

  // Returns (alpha, foreground).
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& image,
                                                  const torch::Tensor& back,
                                                  const torch::Tensor& seg,
                                                  const torch::Tensor& multi) {
    const torch::Tensor img_feat1 = model_enc1->forward(image);
    const torch::Tensor img_feat = model_enc2->forward(img_feat1);
    const torch::Tensor back_feat = model_enc_back->forward(back);
    const torch::Tensor seg_feat = model_enc_seg->forward(seg);
    // Computed and never used, as in the reference (comb_multi below takes
    // the background features).
    model_enc_multi->forward(multi);
    const torch::Tensor oth_feat =
        torch::cat({comb_back->forward(torch::cat({img_feat, back_feat}, 1)),
                    comb_seg->forward(torch::cat({img_feat, seg_feat}, 1)),
                    comb_multi->forward(torch::cat({img_feat, back_feat}, 1))},
                   1);
    const torch::Tensor out_dec =
        model_res_dec->forward(torch::cat({img_feat, oth_feat}, 1));
    torch::Tensor al_out =
        model_al_out->forward(model_res_dec_al->forward(out_dec));
    const torch::Tensor out_dec_fg1 =
        model_dec_fg1->forward(model_res_dec_fg->forward(out_dec));
    torch::Tensor fg_out =
        model_fg_out->forward(torch::cat({out_dec_fg1, img_feat1}, 1));
    return {al_out, fg_out};
  }

  nn::Sequential model_enc1{nullptr}, model_enc2{nullptr},
      model_enc_back{nullptr}, model_enc_seg{nullptr}, model_enc_multi{nullptr},
      comb_back{nullptr}, comb_seg{nullptr}, comb_multi{nullptr},
      model_res_dec{nullptr}, model_res_dec_al{nullptr},
      model_res_dec_fg{nullptr}, model_al_out{nullptr}, model_dec_fg1{nullptr},
      model_fg_out{nullptr};
};
TORCH_MODULE(ResnetConditionHR);

// MultiscaleDiscriminator(input_nc=3, num_D=1, norm_layer=InstanceNorm2d,
// ndf=64): one NLayerDiscriminator's model registered as `layer0`; with one
// scale its AvgPool2d downsample (no parameters) never runs.
class MultiscaleDiscriminatorImpl : public nn::Module {
 public:
  MultiscaleDiscriminatorImpl() {
    layer0 = register_module("layer0",
                             pix2pix::PatchGanLayers(3, 64, 3, /*padding=*/2));
  }
  torch::Tensor forward(const torch::Tensor& x) { return layer0->forward(x); }

  nn::Sequential layer0{nullptr};
};
TORCH_MODULE(MultiscaleDiscriminator);

// networks.py's conv_init, as Module.apply calls it: every convolution
// xavier_uniform (gain sqrt 2) with zero bias, every BatchNorm2d weight
// N(1, 0.2) with zero bias.
void ConvInit(nn::Module& net) {
  torch::NoGradGuard no_grad;
  for (const auto& m : net.modules(/*include_self=*/false)) {
    if (auto* conv = m->as<nn::Conv2d>()) {
      nn::init::xavier_uniform_(conv->weight, std::sqrt(2.0));
      if (conv->bias.defined()) conv->bias.zero_();
    } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
      bn->weight.normal_(1.0, 0.2);
      bn->bias.zero_();
    }
  }
}

// Model's netB, netG and netD under their attribute names.
class BackgroundMattingNetsImpl : public nn::Module {
 public:
  BackgroundMattingNetsImpl() {
    netB = register_module("netB", ResnetConditionHR());
    netG = register_module("netG", ResnetConditionHR());
    netD = register_module("netD", MultiscaleDiscriminator());
    netB->eval();
    for (auto& p : netB->parameters()) p.requires_grad_(false);
    ConvInit(*netG);
    ConvInit(*netD);
  }

  ResnetConditionHR netB{nullptr}, netG{nullptr};
  MultiscaleDiscriminator netD{nullptr};
};
TORCH_MODULE(BackgroundMattingNets);

// The numpy draws train() makes: a host Mersenne Twister seeded once from
// LibTorch's generator, or, for the golden check, the adapter's filled ones.
class Draws {
 public:
  Draws()
      : engine_(static_cast<uint64_t>(
            torch::randint(int64_t{1} << 62, {1}, torch::kLong)
                .item<int64_t>())) {}

  // np.random.permutation(n), as an int64 CPU tensor.
  torch::Tensor Permutation(int64_t n) {
    if (filled_) {
      return torch::argsort(DeterministicTensor("draw.perm", {n}),
                            /*stable=*/true, /*dim=*/0, /*descending=*/false);
    }
    std::vector<int64_t> out(n);
    std::iota(out.begin(), out.end(), 0);
    std::shuffle(out.begin(), out.end(), engine_);
    return torch::tensor(out, torch::kLong);
  }
  // np.random.random_sample().
  double Uniform() {
    if (filled_) return (uniform_[next_uniform_++].item<double>() + 1) / 2;
    return std::uniform_real_distribution<double>(0.0, 1.0)(engine_);
  }
  // np.random.randint(low, high), which rejects an empty range.
  int64_t RandInt(int64_t low, int64_t high) {
    if (high <= low) throw std::invalid_argument("randint: low >= high");
    if (filled_)
      return low + shift_[next_shift_++].item<int64_t>() % (high - low);
    return std::uniform_int_distribution<int64_t>(low, high - 1)(engine_);
  }
  void UseFilled(int64_t batch) {
    filled_ = true;
    uniform_ =
        DeterministicTensor("draw.uniform", {kGoldenCalls}, torch::kDouble);
    shift_ = DeterministicIntegers("draw.shift", {kGoldenCalls * batch}, 0,
                                   int64_t{1} << 20);
  }

 private:
  std::mt19937_64 engine_;
  bool filled_ = false;
  torch::Tensor uniform_, shift_;
  int64_t next_uniform_ = 0, next_shift_ = 0;
};

// normalized_l1_loss: the batch mean of each sample's masked L1 over its
// mask's sum, skipping samples whose mask is empty (a host read per sample,
// as the reference's `if mask[i].sum() > 0`).
torch::Tensor NormalizedL1(const torch::Tensor& alpha,
                           const torch::Tensor& alpha_pred,
                           const torch::Tensor& mask) {
  constexpr double kEps = 1e-6;
  torch::Tensor loss;
  for (int64_t i = 0; i < alpha.size(0); ++i) {
    const torch::Tensor m = mask[i];
    if (m.sum().item<double>() > 0) {
      const torch::Tensor term =
          torch::sum(torch::abs(alpha[i] * m - alpha_pred[i] * m)) /
          (torch::sum(m) + kEps);
      loss = loss.defined() ? loss + term : term;
    }
  }
  if (!loss.defined()) return torch::zeros({}, alpha_pred.options());
  return loss / alpha.size(0);
}

// alpha_gradient_loss: normalised L1 between the Sobel x and y gradients.
torch::Tensor AlphaGradientLoss(const torch::Tensor& alpha,
                                const torch::Tensor& alpha_pred,
                                const torch::Tensor& mask) {
  // Made on the host and copied each call, as the reference does.
  // fy is fx transposed.
  const torch::Tensor sobel =
      torch::tensor({1., 0., -1., 2., 0., -2., 1., 0., -1.},
                    torch::dtype(alpha.scalar_type()))
          .view({3, 3});
  const torch::Tensor fx = sobel.view({1, 1, 3, 3}).to(alpha.device());
  const torch::Tensor fy = sobel.t().reshape({1, 1, 3, 3}).to(alpha.device());
  const auto conv = F::Conv2dFuncOptions().padding(1);
  return NormalizedL1(F::conv2d(alpha, fx, conv),
                      F::conv2d(alpha_pred, fx, conv), mask) +
         NormalizedL1(F::conv2d(alpha, fy, conv),
                      F::conv2d(alpha_pred, fy, conv), mask);
}

// compose_loss: the prediction composited on bg against the image.
torch::Tensor ComposeLoss(const torch::Tensor& image,
                          const torch::Tensor& alpha_pred,
                          const torch::Tensor& fg, const torch::Tensor& bg,
                          const torch::Tensor& mask) {
  const torch::Tensor a = (alpha_pred + 1) / 2;
  return NormalizedL1(image, fg * a + (1 - a) * bg, mask);
}

// GANloss over num_D = 1 scales: MSE against ones (real) or zeros, the
// labels made on the host and copied to pred's device, as the reference's
// torch.ones(...).cuda() are.
torch::Tensor GanLoss(const torch::Tensor& pred, bool real) {
  const auto host = torch::dtype(pred.scalar_type());
  const torch::Tensor labels =
      real ? torch::ones(pred.sizes(), host) : torch::zeros(pred.sizes(), host);
  return F::mse_loss(pred, labels.to(pred.device()));
}

// compose_image_withshift, detached as the reference's Variable(image_sh):
// each sample rolled horizontally by randint(10 - y1, W - y2 - 10), where
// [y1, y2] are the columns of its guide with (seg + 1) / 2 > 0.1 (read on
// the host, as the reference's to_image does), then composited on bg into
// an image_sh zeroed on the host and copied to the device, as the
// reference's torch.zeros(fg_pred.shape).cuda() is.
torch::Tensor ComposeWithShift(const torch::Tensor& alpha_pred,
                               const torch::Tensor& fg_pred,
                               const torch::Tensor& bg,
                               const torch::Tensor& seg, Draws& draws) {
  torch::NoGradGuard no_grad;
  const int64_t width = seg.size(-1);
  torch::Tensor image_sh =
      torch::zeros(fg_pred.sizes(), torch::dtype(bg.scalar_type()))
          .to(bg.device());
  for (int64_t t = 0; t < fg_pred.size(0); ++t) {
    const torch::Tensor columns =
        (((seg[t].to(torch::kCPU) + 1) / 2) > 0.1).any(1).any(0);
    const torch::Tensor where = columns.nonzero();
    if (where.numel() == 0) {
      throw std::runtime_error("compose_image_withshift: empty segmentation");
    }
    const int64_t y1 = where.min().item<int64_t>();
    const int64_t y2 = where.max().item<int64_t>();
    const int64_t n = draws.RandInt(-(y1 - 10), width - y2 - 10);
    const torch::Tensor a = (torch::roll(alpha_pred[t], n, -1) + 1) / 2;
    const torch::Tensor f = torch::roll(fg_pred[t], n, -1);
    image_sh[t].copy_(f * a + (1 - a) * bg[t]);
  }
  return image_sh;
}

// One VideoData batch (see the header comment).
struct Batch {
  torch::Tensor bg, image, seg, multi_fr, seg_gt, back_rnd;
};

Batch SyntheticBatch(int64_t b, int64_t size,
                     const torch::TensorOptions& options) {
  auto grid = [](const torch::Tensor& x) {  // to_tensor of an 8-bit image
    return torch::round((x.clamp(-1, 1) + 1) * 127.5) / 127.5 - 1;
  };
  auto uniform = [&](int64_t c) {
    return torch::rand({b, c, size, size}) * 2 - 1;
  };
  auto per_sample = [&](double low, double high) {
    return (low + (high - low) * torch::rand({b, 1, 1, 1})) * size;
  };
  const torch::Tensor centre_y = per_sample(0.45, 0.6);
  const torch::Tensor centre_x = per_sample(0.4, 0.6);
  const torch::Tensor radius_y = per_sample(0.3, 0.4);
  const torch::Tensor radius_x = per_sample(0.14, 0.18);
  const torch::Tensor guide_scale = 0.9 + 0.2 * torch::rand({b, 1, 1, 1});
  const torch::Tensor pos = torch::arange(size, torch::kFloat) + 0.5;
  const torch::Tensor r =
      torch::sqrt(((pos.view({1, 1, size, 1}) - centre_y) / radius_y).square() +
                  ((pos.view({1, 1, 1, size}) - centre_x) / radius_x).square());
  const torch::Tensor inside = (r < 1).to(torch::kFloat);
  const torch::Tensor seg =
      grid(2 * torch::sigmoid((1 - r / guide_scale) / 0.05) - 1);
  const torch::Tensor fg = grid(uniform(3));
  const torch::Tensor bg = grid(uniform(3));
  const torch::Tensor back_rnd = grid(uniform(3));
  const torch::Tensor image = grid(inside * fg + (1 - inside) * bg);
  const torch::Tensor gray = 0.114 * image.select(1, 0) +
                             0.587 * image.select(1, 1) +
                             0.299 * image.select(1, 2);
  const torch::Tensor multi_fr =
      grid(gray.unsqueeze(1) + (torch::rand({b, 4, size, size}) - 0.5) * 0.1);
  return {bg.to(options),
          image.to(options),
          seg.to(options),
          multi_fr.to(options),
          (inside * 2 - 1).to(options),
          back_rnd.to(options)};
}

using Golden = std::map<std::string, torch::Tensor>;

// RecordEdgeParameters into `recorder` while it captures.
void RecordEdges(GoldenRecorder& recorder, const nn::Module& module,
                 const std::string& prefix, bool gradients) {
  if (!recorder.recording()) return;
  Golden edges;
  RecordEdgeParameters(module, prefix, gradients, &edges);
  for (const auto& [key, value] : edges) recorder.Record(key, value);
}

class BackgroundMatting final : public Model, public GoldenCheck {
 public:
  explicit BackgroundMatting(const ModelConfig& config)
      : device_(config.device), dtype_(config.dtype()) {
    nets_->to(config.device);
    const int64_t size = config.small_inputs ? kSmallImageSize : kImageSize;
    // In host memory: the reference's __init__ drops its data[key].to()
    // results, so its train() copies the batch over on every call.
    batch_ = SyntheticBatch(config.batch_size, size, torch::kFloat);
    optimizer_g_ = std::make_unique<optim::Adam>(nets_->netG->parameters(),
                                                 optim::AdamOptions{.lr = kLrG},
                                                 config.optimizer);
    optimizer_d_ = std::make_unique<optim::Adam>(nets_->netD->parameters(),
                                                 optim::AdamOptions{.lr = kLrD},
                                                 config.optimizer);
  }

  torch::Tensor Step() override { return TrainCall(); }

  nn::Module& module() override { return *nets_; }

  // Two train() calls of the reference's own code
  // (tools/golden/adapters/Background_Matting.py) on filled weights and a
  // filled 32x32 batch, in float64, with the numpy draws filled on both
  // sides.
  Golden GoldenOutputs() override {
    nets_->to(torch::kDouble);  // In place: the optimizers keep the tensors.
    dtype_ = torch::kDouble;
    const int64_t b = batch_.image.size(0);
    auto filled = [&](const char* name, int64_t c) {
      return DeterministicTensor(name, {b, c, kGoldenSize, kGoldenSize},
                                 torch::kDouble);
    };
    batch_.bg = filled("bg", 3);
    batch_.image = filled("image", 3);
    batch_.seg = filled("seg", 1);
    batch_.seg.narrow(-1, 0, kGoldenBandBegin).fill_(-1);
    batch_.seg.narrow(-1, kGoldenBandEnd, kGoldenSize - kGoldenBandEnd)
        .fill_(-1);
    batch_.multi_fr = filled("multi_fr", 4);
    batch_.seg_gt = filled("seg-gt", 1);
    batch_.back_rnd = filled("back-rnd", 3);
    draws_.UseFilled(b);
    Golden out = recorder_.Capture([&] {
      for (golden_call_ = 0; golden_call_ < kGoldenCalls; ++golden_call_) {
        TrainCall();
      }
    });
    RecordEdgeParameters(*nets_->netG, "after:netG.", false, &out);
    RecordEdgeParameters(*nets_->netD, "after:netD.", false, &out);
    out["after:netG.comb_seg.0.weight"] =
        nets_->netG->comb_seg->named_parameters()["0.weight"].detach().clone();
    return out;
  }

 private:
  // Model.train(). Records golden call golden_call_'s losses and gradients
  // (and its outputs for call 0). Returns lossG.
  torch::Tensor TrainCall() {
    BackgroundMattingNets& n = nets_;
    n->netG->train();
    n->netD->train();
    // bg.to(device), image.to(device), ...: the batch's six copies to the
    // device, then mask0 made on the host and copied over, as the reference
    // does on every call.
    const Batch d{
        batch_.bg.to(device_, dtype_),     batch_.image.to(device_, dtype_),
        batch_.seg.to(device_, dtype_),    batch_.multi_fr.to(device_, dtype_),
        batch_.seg_gt.to(device_, dtype_), batch_.back_rnd.to(device_, dtype_)};
    const torch::Tensor mask0 =
        torch::ones(d.seg.sizes(), torch::dtype(d.seg.scalar_type()))
            .to(device_);

    auto [alpha_sup, fg_sup] =
        n->netB->forward(d.image, d.bg, d.seg, d.multi_fr);
    const torch::Tensor mask = (alpha_sup > -0.98).to(torch::kFloat);
    const torch::Tensor mask1 = (d.seg_gt > 0.95).to(torch::kFloat);

    auto [alpha_pred, fg_pred] =
        n->netG->forward(d.image, d.bg, d.seg, d.multi_fr);
    const torch::Tensor al_loss =
        NormalizedL1(alpha_sup, alpha_pred, mask0) +
        0.5 * AlphaGradientLoss(alpha_sup, alpha_pred, mask0);
    const torch::Tensor fg_loss = NormalizedL1(fg_sup, fg_pred, mask);
    const torch::Tensor comp_loss =
        ComposeLoss(d.image, alpha_pred, fg_pred, d.bg, mask1);

    torch::Tensor bg_sh = d.bg.index_select(
        0, draws_.Permutation(d.bg.size(0)).to(d.bg.device()));
    const torch::Tensor al_mask = (alpha_pred > 0.95).to(torch::kFloat);
    if (draws_.Uniform() > 0.5) bg_sh = d.back_rnd;
    const torch::Tensor image_sh = ComposeWithShift(
        alpha_pred, d.image * al_mask + fg_pred * (1 - al_mask), bg_sh, d.seg,
        draws_);

    const torch::Tensor loss_gan_g = GanLoss(n->netD->forward(image_sh), true);
    const torch::Tensor loss_g =
        loss_gan_g + (0.05 * comp_loss + 0.05 * al_loss + 0.05 * fg_loss);
    optimizer_g_->ZeroGrad();
    Backward(loss_g);
    const std::string prefix = "call" + std::to_string(golden_call_) + ":";
    if (recorder_.recording()) {
      RecordEdges(recorder_, *n->netG, prefix + "grad:netG.", true);
      recorder_.Record(
          prefix + "grad:netG.comb_seg.0.weight",
          n->netG->comb_seg->named_parameters()["0.weight"].grad().clone());
      recorder_.Record(
          prefix + "grad:netG.model_al_out.9.weight",
          n->netG->model_al_out->named_parameters()["9.weight"].grad().clone());
    }
    optimizer_g_->Step();

    const torch::Tensor loss_gan_d_fake =
        GanLoss(n->netD->forward(image_sh), false);
    const torch::Tensor loss_gan_d_real =
        GanLoss(n->netD->forward(d.image), true);
    const torch::Tensor loss_d = (loss_gan_d_real + loss_gan_d_fake) * 0.5;
    // `if i % 5 == 0` with i = 0.
    optimizer_d_->ZeroGrad();
    Backward(loss_d);
    RecordEdges(recorder_, *n->netD, prefix + "grad:netD.", true);
    optimizer_d_->Step();

    // The eight add_scalar calls each read their loss to the host.
    const std::map<std::string, torch::Tensor> losses = {
        {"lossG", loss_g},
        {"lossD", loss_d},
        {"loss_ganG", loss_gan_g},
        {"loss_ganD_real", loss_gan_d_real},
        {"loss_ganD_fake", loss_gan_d_fake},
        {"al_loss", al_loss},
        {"fg_loss", fg_loss},
        {"comp_loss", comp_loss}};
    for (const auto& [name, loss] : losses) {
      loss.item();
      if (recorder_.recording()) {
        recorder_.Record(prefix + "loss_" + name, loss);
      }
    }
    if (recorder_.recording() && golden_call_ == 0) {
      recorder_.Record("call0:alpha_sup", alpha_sup);
      recorder_.Record("call0:fg_sup", fg_sup);
      recorder_.Record("call0:alpha", alpha_pred);
      recorder_.Record("call0:fg", fg_pred);
      recorder_.Record("call0:image_sh", image_sh);
    }
    return loss_g.detach();
  }

  torch::Device device_;
  torch::ScalarType dtype_;
  BackgroundMattingNets nets_;
  Batch batch_;  // In host memory, fp32 (float64 for the golden check).
  std::unique_ptr<optim::Adam> optimizer_g_, optimizer_d_;
  Draws draws_;
  GoldenRecorder recorder_;
  int golden_call_ = 0;  // Which golden call TrainCall() records.
};

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "Background_Matting",
         .domain = "vision",
         .task = "background matting (self-supervised GAN)",
         .reference = "TorchBench Background_Matting "
                      "(senguptaumd/Background-Matting Real_fixed: "
                      "ResnetConditionHR G + frozen teacher, PatchGAN D, "
                      "512x512)",
         .modes = {Mode::kTrain},  // eval() raises NotImplementedError
         // DEFAULT_TRAIN_BSIZE (DEFAULT_EVAL_BSIZE 1 is never used).
         .train_batch_size = 4,
         .fixed_batch_size = true,  // ALLOW_CUSTOMIZE_BSIZE = False
         // netB and netG (each ResnetConditionHR(input_nc=(3, 3, 1, 4),
         // output_nc=4, n_blocks1=7, n_blocks2=3): 17,908,420 parameters,
         // 18,606 BatchNorm buffer elements) and netD (MultiscaleDiscriminator,
         // num_D 1, InstanceNorm: 2,764,737 parameters, no buffers), built from
         // the reference's networks.py in the venv, counted with
         // sum(p.numel() ...) over parameters() and buffers().
         .reference_parameters = 2 * 17908420 + 2764737,
         .reference_buffers = 2 * 18606,
         // TorchBench's metadata.yaml (tests/golden/cudnn_flags.txt).
         .train_cudnn = {.benchmark = true},
         .checks = {.golden_file = "Background_Matting.golden"}}),
    MakeModel<BackgroundMatting>());

}  // namespace background_matting_model
}  // namespace torchbench
