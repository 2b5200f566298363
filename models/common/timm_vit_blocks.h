// timm's VisionTransformer (timm/models/vision_transformer.py, pinned timm
// and 1.0.31) in the configuration the TorchBench ViT models use: class token,
// learned absolute position embedding added after the class token is prepended,
// pre-norm blocks with fused-QKV attention and a GELU MLP, final LayerNorm,
// class-token pooling and a linear head. No layer scale, register tokens,
// QK norm or dropout (all off or zero in vit_small_patch16_224 and
// vit_giant_patch14_224). Parameter names equal timm's state_dict names.
#ifndef TORCHBENCH_MODELS_COMMON_TIMM_VIT_BLOCKS_H_
#define TORCHBENCH_MODELS_COMMON_TIMM_VIT_BLOCKS_H_

#include <ATen/ops/scaled_dot_product_attention.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>

namespace torchbench::common {

// The VisionTransformer(...) arguments that distinguish the variants.
struct VitOptions {
  TORCH_ARG(int64_t, img_size) = 224;
  TORCH_ARG(int64_t, patch_size) = 16;
  TORCH_ARG(int64_t, embed_dim) = 384;
  TORCH_ARG(int64_t, depth) = 12;
  TORCH_ARG(int64_t, num_heads) = 6;
  // int(embed_dim * mlp_ratio), e.g. 6144 for vit_giant's 48/11 ratio.
  TORCH_ARG(int64_t, mlp_hidden) = 1536;
  TORCH_ARG(int64_t, num_classes) = 1000;
};

// timm's trunc_normal_(t, std) with the default cut-offs a=-2, b=2 (absolute
// values, so effectively untruncated for std=.02): inverse-CDF sampling.
inline void TimmTruncNormal(torch::Tensor& t, double std, double a = -2.0,
                            double b = 2.0) {
  torch::NoGradGuard no_grad;
  auto norm_cdf = [](double x) {
    return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0;
  };
  const double l = norm_cdf(a / std);
  const double u = norm_cdf(b / std);
  t.uniform_(2 * l - 1, 2 * u - 1);
  t.erfinv_();
  t.mul_(std * std::sqrt(2.0));
  t.clamp_(a, b);
}

inline torch::nn::LayerNorm VitLayerNorm(int64_t dim) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-6));
}

class VitAttentionImpl : public torch::nn::Module {
 public:
  VitAttentionImpl(int64_t dim, int64_t num_heads)
      : num_heads_(num_heads),
        qkv_(register_module("qkv", torch::nn::Linear(dim, dim * 3))),
        proj_(register_module("proj", torch::nn::Linear(dim, dim))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t b = x.size(0);
    const int64_t n = x.size(1);
    const int64_t c = x.size(2);
    // timm's fused path (use_fused_attn() is true in the installed timm).
    auto qkv = qkv_(x)
                   .reshape({b, n, 3, num_heads_, c / num_heads_})
                   .permute({2, 0, 3, 1, 4});
    auto qkv_parts = qkv.unbind(0);
    torch::Tensor out = at::scaled_dot_product_attention(
        qkv_parts[0], qkv_parts[1], qkv_parts[2]);
    return proj_(out.transpose(1, 2).reshape({b, n, c}));
  }

 private:
  int64_t num_heads_;
  torch::nn::Linear qkv_;
  torch::nn::Linear proj_;
};
TORCH_MODULE(VitAttention);

class VitMlpImpl : public torch::nn::Module {
 public:
  VitMlpImpl(int64_t dim, int64_t hidden)
      : fc1_(register_module("fc1", torch::nn::Linear(dim, hidden))),
        fc2_(register_module("fc2", torch::nn::Linear(hidden, dim))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    return fc2_(torch::gelu(fc1_(x)));
  }

 private:
  torch::nn::Linear fc1_;
  torch::nn::Linear fc2_;
};
TORCH_MODULE(VitMlp);

class VitBlockImpl : public torch::nn::Module {
 public:
  VitBlockImpl(int64_t dim, int64_t num_heads, int64_t mlp_hidden)
      : norm1_(register_module("norm1", VitLayerNorm(dim))),
        attn_(register_module("attn", VitAttention(dim, num_heads))),
        norm2_(register_module("norm2", VitLayerNorm(dim))),
        mlp_(register_module("mlp", VitMlp(dim, mlp_hidden))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = x + attn_(norm1_(x));
    return x + mlp_(norm2_(x));
  }

 private:
  torch::nn::LayerNorm norm1_;
  VitAttention attn_;
  torch::nn::LayerNorm norm2_;
  VitMlp mlp_;
};
TORCH_MODULE(VitBlock);

class VitPatchEmbedImpl : public torch::nn::Module {
 public:
  VitPatchEmbedImpl(int64_t patch_size, int64_t embed_dim)
      : proj_(register_module(
            "proj",
            torch::nn::Conv2d(torch::nn::Conv2dOptions(3, embed_dim, patch_size)
                                  .stride(patch_size)))) {}

  // (B, 3, H, W) -> (B, tokens, embed_dim).
  torch::Tensor forward(const torch::Tensor& x) {
    return proj_(x).flatten(2).transpose(1, 2);
  }

 private:
  torch::nn::Conv2d proj_;
};
TORCH_MODULE(VitPatchEmbed);

class VisionTransformerImpl : public torch::nn::Module {
 public:
  explicit VisionTransformerImpl(const VitOptions& o) {
    const int64_t grid = o.img_size() / o.patch_size();
    const int64_t dim = o.embed_dim();
    // Registration order follows timm's named_parameters().
    cls_token_ = register_parameter("cls_token", torch::zeros({1, 1, dim}));
    pos_embed_ = register_parameter("pos_embed",
                                    torch::zeros({1, grid * grid + 1, dim}));
    patch_embed_ =
        register_module("patch_embed", VitPatchEmbed(o.patch_size(), dim));
    blocks_ = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < o.depth(); ++i) {
      blocks_->push_back(VitBlock(dim, o.num_heads(), o.mlp_hidden()));
    }
    norm_ = register_module("norm", VitLayerNorm(dim));
    head_ = register_module("head", torch::nn::Linear(dim, o.num_classes()));
    InitWeights();
  }

  torch::Tensor forward(const torch::Tensor& images) {
    torch::Tensor x = patch_embed_(images);
    x = torch::cat({cls_token_.expand({x.size(0), -1, -1}), x}, 1);
    x = x + pos_embed_;
    for (auto& block : *blocks_) x = block->as<VitBlock>()->forward(x);
    x = norm_(x);
    return head_(x.select(1, 0));  // 'token' pooling
  }

 private:
  // init_weights_vit_timm (timm's default weight_init ''): Linear
  // trunc_normal(.02) and zero bias; patch conv and LayerNorm keep PyTorch's
  // defaults.
  void InitWeights() {
    torch::NoGradGuard no_grad;
    TimmTruncNormal(pos_embed_, 0.02);
    torch::nn::init::normal_(cls_token_, 0.0, 1e-6);
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* linear = m->as<torch::nn::Linear>()) {
        TimmTruncNormal(linear->weight, 0.02);
        torch::nn::init::zeros_(linear->bias);
      }
    }
  }

  torch::Tensor cls_token_;
  torch::Tensor pos_embed_;
  VitPatchEmbed patch_embed_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(VisionTransformer);

// VisionTransformer.no_weight_decay() (timm also lists dist_token and
// reg_token, which these models do not have).
inline std::set<std::string> VitNoWeightDecay() {
  return {"pos_embed", "cls_token", "dist_token", "reg_token"};
}

}  // namespace torchbench::common

#endif  // TORCHBENCH_MODELS_COMMON_TIMM_VIT_BLOCKS_H_
