// DALLE2_pytorch, part 1: OpenAI CLIP ViT-B/32 (clip-anytorch's
// clip/model.py, the architecture clip.load('ViT-B/32') builds from OpenAI's
// weights; here with random or deterministic-fill weights, since those weights
// cannot be downloaded), dalle2_pytorch's OpenAIClipAdapter and the
// resize_right resize the adapter uses to bring images to 224x224. Included by
// dalle2_pytorch.cpp only.
#ifndef TORCHBENCH_MODELS_VISION_DALLE2_PYTORCH_CLIP_H_
#define TORCHBENCH_MODELS_VISION_DALLE2_PYTORCH_CLIP_H_

#include <torch/nn/functional/linear.h>
#include <torch/nn/functional/normalization.h>
#include <torch/nn/functional/padding.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace torchbench {
namespace dalle2_pytorch_model {
namespace {

namespace F = torch::nn::functional;

// clip.load('ViT-B/32') hyper-parameters (build_model reads them off the
// weights).
constexpr int64_t kClipEmbedDim = 512;
constexpr int64_t kClipImageSize = 224;
constexpr int64_t kClipPatch = 32;
constexpr int64_t kClipVisionWidth = 768;
constexpr int64_t kClipLayers = 12;
constexpr int64_t kClipContext = 77;
constexpr int64_t kClipVocab = 49408;
constexpr int64_t kClipTextWidth = 512;
constexpr int64_t kClipEosId = 49407;

// F.normalize(t, dim=-1).
torch::Tensor L2Norm(const torch::Tensor& t) {
  return F::normalize(t, F::NormalizeFuncOptions().dim(-1));
}

// CLIP's fp16-safe LayerNorm: computes in its weights' dtype (float32 when
// clip.load made the linear weights half on CUDA) and returns the input's.
torch::Tensor ClipLayerNorm(torch::nn::LayerNorm ln, const torch::Tensor& x) {
  return ln->forward(x.to(ln->weight.scalar_type())).to(x.scalar_type());
}

// nn.MultiheadAttention(width, heads) with its packed in_proj; sequences
// are batch-first here (the reference runs LND; the arithmetic is the same).
class ClipAttentionImpl : public torch::nn::Module {
 public:
  ClipAttentionImpl(int64_t width, int64_t heads) : heads_(heads) {
    in_proj_weight =
        register_parameter("in_proj_weight", torch::empty({3 * width, width}));
    in_proj_bias =
        register_parameter("in_proj_bias", torch::zeros({3 * width}));
    out_proj = register_module("out_proj", torch::nn::Linear(width, width));
    torch::NoGradGuard no_grad;
    torch::nn::init::xavier_uniform_(in_proj_weight);
  }

  // `mask`: the additive causal mask (text) or undefined (image).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
    const int64_t b = x.size(0), n = x.size(1), width = x.size(2);
    const int64_t head_dim = width / heads_;
    auto qkv = F::linear(x, in_proj_weight, in_proj_bias).chunk(3, -1);
    auto split = [&](const torch::Tensor& t) {
      return t.reshape({b, n, heads_, head_dim}).transpose(1, 2);
    };
    torch::Tensor q = split(qkv[0]) * std::pow(head_dim, -0.5);
    torch::Tensor sim = torch::matmul(q, split(qkv[1]).transpose(-2, -1));
    if (mask.defined()) {
      // clip-anytorch's attn_mask[..., -n:, -n:] for texts shorter than 77.
      sim = sim + mask.slice(0, kClipContext - n)
                      .slice(1, kClipContext - n)
                      .to(sim.options());
    }
    torch::Tensor out = torch::matmul(sim.softmax(-1), split(qkv[2]));
    return out_proj->forward(out.transpose(1, 2).reshape({b, n, width}));
  }

  torch::Tensor in_proj_weight, in_proj_bias;
  torch::nn::Linear out_proj{nullptr};

 private:
  int64_t heads_;
};
TORCH_MODULE(ClipAttention);

// ResidualAttentionBlock: attention and an MLP with QuickGELU, pre-norm.
class ResidualAttentionBlockImpl : public torch::nn::Module {
 public:
  ResidualAttentionBlockImpl(int64_t width, int64_t heads) {
    attn = register_module("attn", ClipAttention(width, heads));
    ln_1 = register_module(
        "ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
    auto mlp = register_module("mlp", std::make_shared<torch::nn::Module>());
    c_fc = mlp->register_module("c_fc", torch::nn::Linear(width, 4 * width));
    c_proj =
        mlp->register_module("c_proj", torch::nn::Linear(4 * width, width));
    ln_2 = register_module(
        "ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
  }

  torch::Tensor forward(torch::Tensor x, const torch::Tensor& mask) {
    x = x + attn->forward(ClipLayerNorm(ln_1, x), mask);
    torch::Tensor h = c_fc->forward(ClipLayerNorm(ln_2, x));
    h = h * torch::sigmoid(1.702 * h);  // QuickGELU
    return x + c_proj->forward(h);
  }

  ClipAttention attn{nullptr};
  torch::nn::Linear c_fc{nullptr}, c_proj{nullptr};
  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
};
TORCH_MODULE(ResidualAttentionBlock);

// clip.model.Transformer: `resblocks`.
class ClipTransformerImpl : public torch::nn::Module {
 public:
  ClipTransformerImpl(int64_t width, int64_t layers, int64_t heads) {
    resblocks = register_module("resblocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < layers; ++i) {
      resblocks->push_back(ResidualAttentionBlock(width, heads));
    }
  }
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& mask) {
    for (const auto& block : *resblocks) {
      x = block->as<ResidualAttentionBlock>()->forward(x, mask);
    }
    return x;
  }
  torch::nn::ModuleList resblocks{nullptr};
};
TORCH_MODULE(ClipTransformer);

// clip.model.VisionTransformer(224, 32, 768, 12, 12, 512).
class VisionTransformerImpl : public torch::nn::Module {
 public:
  VisionTransformerImpl() {
    const double scale = std::pow(kClipVisionWidth, -0.5);
    const int64_t grid = kClipImageSize / kClipPatch;
    conv1 = register_module(
        "conv1", torch::nn::Conv2d(
                     torch::nn::Conv2dOptions(3, kClipVisionWidth, kClipPatch)
                         .stride(kClipPatch)
                         .bias(false)));
    class_embedding = register_parameter(
        "class_embedding", scale * torch::randn({kClipVisionWidth}));
    positional_embedding = register_parameter(
        "positional_embedding",
        scale * torch::randn({grid * grid + 1, kClipVisionWidth}));
    ln_pre = register_module(
        "ln_pre",
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({kClipVisionWidth})));
    transformer = register_module(
        "transformer",
        ClipTransformer(kClipVisionWidth, kClipLayers, kClipVisionWidth / 64));
    ln_post = register_module(
        "ln_post",
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({kClipVisionWidth})));
    proj = register_parameter(
        "proj", scale * torch::randn({kClipVisionWidth, kClipEmbedDim}));
  }
  torch::Tensor forward(const torch::Tensor& image) {
    torch::Tensor x = conv1->forward(image);
    x = x.reshape({x.size(0), x.size(1), -1}).permute({0, 2, 1});
    torch::Tensor cls = class_embedding.to(x.scalar_type()) +
                        torch::zeros({x.size(0), 1, x.size(-1)}, x.options());
    x = torch::cat({cls, x}, 1) + positional_embedding.to(x.scalar_type());
    x = ClipLayerNorm(ln_pre, x);
    x = transformer->forward(x, torch::Tensor());
    x = ClipLayerNorm(ln_post, x.select(1, 0));
    return torch::matmul(x, proj);
  }
  torch::nn::Conv2d conv1{nullptr};
  torch::Tensor class_embedding, positional_embedding, proj;
  torch::nn::LayerNorm ln_pre{nullptr}, ln_post{nullptr};
  ClipTransformer transformer{nullptr};
};
TORCH_MODULE(VisionTransformer);

// clip.model.CLIP for ViT-B/32.
class ClipImpl : public torch::nn::Module {
 public:
  ClipImpl() {
    visual = register_module("visual", VisionTransformer());
    transformer = register_module(
        "transformer",
        ClipTransformer(kClipTextWidth, kClipLayers, kClipTextWidth / 64));
    token_embedding = register_module(
        "token_embedding", torch::nn::Embedding(kClipVocab, kClipTextWidth));
    positional_embedding = register_parameter(
        "positional_embedding", torch::empty({kClipContext, kClipTextWidth}));
    ln_final = register_module(
        "ln_final",
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({kClipTextWidth})));
    text_projection = register_parameter(
        "text_projection", torch::empty({kClipTextWidth, kClipEmbedDim}));
    logit_scale =
        register_parameter("logit_scale", torch::full({}, std::log(1 / 0.07)));
    // initialize_parameters(): normal with CLIP's standard deviations.
    torch::NoGradGuard no_grad;
    torch::nn::init::normal_(token_embedding->weight, 0, 0.02);
    torch::nn::init::normal_(positional_embedding, 0, 0.01);
    const double width = kClipTextWidth;
    const double proj_std =
        std::pow(width, -0.5) * std::pow(2.0 * kClipLayers, -0.5);
    for (const auto& m : *transformer->resblocks) {
      auto block = m->as<ResidualAttentionBlock>();
      torch::nn::init::normal_(block->attn->in_proj_weight, 0,
                               std::pow(width, -0.5));
      torch::nn::init::normal_(block->attn->out_proj->weight, 0, proj_std);
      torch::nn::init::normal_(block->c_fc->weight, 0,
                               std::pow(2 * width, -0.5));
      torch::nn::init::normal_(block->c_proj->weight, 0, proj_std);
    }
    torch::nn::init::normal_(text_projection, 0, std::pow(width, -0.5));
    causal_mask_ = torch::full({kClipContext, kClipContext},
                               -std::numeric_limits<float>::infinity())
                       .triu(1);
  }

  // CLIP.dtype: the patch convolution's weight dtype.
  torch::ScalarType dtype() const {
    return visual->conv1->weight.scalar_type();
  }

  torch::Tensor EncodeImage(const torch::Tensor& image) {
    return visual->forward(image.to(dtype()));
  }

  // encode_text, also returning ln_final's output (the adapter's hook).
  std::pair<torch::Tensor, torch::Tensor> EncodeText(
      const torch::Tensor& text) {
    const int64_t n = text.size(-1);
    torch::Tensor x = token_embedding->forward(text).to(dtype());
    x = x + positional_embedding.slice(0, 0, n).to(dtype());
    x = transformer->forward(x, causal_mask_.to(x.device()));
    torch::Tensor encodings = ClipLayerNorm(ln_final, x);
    x = encodings.to(dtype());
    torch::Tensor rows = torch::arange(x.size(0), text.options());
    torch::Tensor eot = x.index({rows, text.argmax(-1)});
    return {torch::matmul(eot, text_projection), encodings};
  }

  // clip.model.convert_weights: clip.load keeps these in half on CUDA.
  void ConvertWeightsToHalf() {
    torch::NoGradGuard no_grad;
    for (auto& p : named_parameters()) {
      const std::string& name = p.key();
      const bool embedding_or_norm =
          name.find("embedding") != std::string::npos ||
          name.find("ln_") != std::string::npos || name == "logit_scale";
      if (!embedding_or_norm) p.value().set_data(p.value().to(torch::kHalf));
    }
  }

  VisionTransformer visual{nullptr};
  ClipTransformer transformer{nullptr};
  torch::nn::Embedding token_embedding{nullptr};
  torch::Tensor positional_embedding, text_projection, logit_scale;
  torch::nn::LayerNorm ln_final{nullptr};

 private:
  torch::Tensor causal_mask_;  // Not a buffer in the reference either.
};
TORCH_MODULE(Clip);

// resize_right.resize(x, scale_factors=s) on the last two dimensions with its
// defaults (cubic, antialiasing, zero padding), as a (out, in) weight matrix
// per dimension computed in float32 like the reference's.
torch::Tensor ResizeRightMatrix(int64_t in_size, double scale) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat);
  const int64_t out_size = static_cast<int64_t>(std::ceil(scale * in_size));
  const double eps = std::numeric_limits<float>::epsilon();
  const bool antialias = scale < 1.0;
  const double support = antialias ? 4.0 / scale : 4.0;
  torch::Tensor grid = torch::arange(out_size, torch::kLong)
                           .div(scale)
                           .add((in_size - 1) / 2.0)
                           .sub((out_size - 1) / (2 * scale));
  torch::Tensor left = (grid - support / 2 - eps).ceil().to(torch::kLong);
  const int64_t taps = static_cast<int64_t>(std::ceil(support - eps));
  torch::Tensor fov = left.unsqueeze(1) + torch::arange(taps, torch::kLong);
  torch::Tensor arg = grid.unsqueeze(1) - fov;
  if (antialias) arg = arg * scale;
  torch::Tensor a = arg.abs();
  torch::Tensor a2 = a.pow(2), a3 = a.pow(3);
  torch::Tensor w =
      (1.5 * a3 - 2.5 * a2 + 1.) * (a <= 1).to(f32) +
      (-0.5 * a3 + 2.5 * a2 - 4. * a + 2.) * ((a > 1) & (a <= 2)).to(f32);
  if (antialias) w = w * scale;
  torch::Tensor sum = w.sum(1, true);
  sum = torch::where(sum == 0, torch::ones_like(sum), sum);
  w = w / sum;
  // Taps outside [0, in) read the zero padding.
  torch::Tensor valid = ((fov >= 0) & (fov < in_size)).to(f32);
  torch::Tensor hot =
      torch::one_hot(fov.clamp(0, in_size - 1), in_size).to(f32);
  torch::Tensor matrix = (hot * (w * valid).unsqueeze(-1)).sum(1);
  return matrix;
}

torch::Tensor ResizeRight(const torch::Tensor& image, int64_t target) {
  const int64_t size = image.size(-1);
  if (size == target) return image;
  const double scale = static_cast<double>(target) / size;
  torch::Tensor m =
      ResizeRightMatrix(size, scale).to(image.device(), image.scalar_type());
  return torch::matmul(torch::matmul(m, image), m.t());
}

// OpenAIClipAdapter: CLIP plus the text mask, the ln_final hook and the
// image normalization of clip's preprocess.
class ClipAdapterImpl : public torch::nn::Module {
 public:
  ClipAdapterImpl() { clip = register_module("clip", Clip()); }

  // The reference's `.float()` of the embeddings: CLIP's LayerNorm dtype,
  // float32 unless the harness converted the module to fp16/bf16 (whose
  // networks reject float32 inputs).
  torch::ScalarType OutDtype() const {
    return clip->ln_final->weight.scalar_type();
  }

  std::pair<torch::Tensor, torch::Tensor> EmbedText(torch::Tensor text) {
    torch::NoGradGuard no_grad;
    const torch::ScalarType out = OutDtype();
    text = text.slice(-1, 0, std::min<int64_t>(text.size(-1), kClipContext));
    torch::Tensor excluding_eos = (text == kClipEosId).cumsum(-1) == 0;
    torch::Tensor mask =
        torch::cat({torch::ones({text.size(0), 1}, excluding_eos.options()),
                    excluding_eos.slice(-1, 0, text.size(-1) - 1)},
                   -1);
    auto [embed, encodings] = clip->EncodeText(text);
    encodings = encodings.masked_fill(~mask.unsqueeze(-1), 0.);
    return {L2Norm(embed.to(out)), encodings.to(out)};
  }

  // The reference asserts images of at least 224 pixels; the CPU tests'
  // small images are resized up the same way instead.
  torch::Tensor EmbedImage(torch::Tensor image) {
    torch::NoGradGuard no_grad;
    const torch::ScalarType out = OutDtype();
    image = ResizeRight(image, kClipImageSize);
    const auto opts = image.options();
    torch::Tensor mean =
        torch::tensor({0.48145466, 0.4578275, 0.40821073}, opts)
            .view({3, 1, 1});
    torch::Tensor std =
        torch::tensor({0.26862954, 0.26130258, 0.27577711}, opts)
            .view({3, 1, 1});
    image = (image - mean) / std;
    return L2Norm(clip->EncodeImage(image).to(out));
  }

  Clip clip{nullptr};
};
TORCH_MODULE(ClipAdapter);

}  // namespace
}  // namespace dalle2_pytorch_model
}  // namespace torchbench

#endif  // TORCHBENCH_MODELS_VISION_DALLE2_PYTORCH_CLIP_H_
