// DALLE2_pytorch, part 3: the library's Unet (cross-attention conditioning
// on time, image and text tokens; pixel-unshuffle downsampling,
// pixel-shuffle upsampling). Included by dalle2_pytorch.cpp only, after
// dalle2_pytorch_prior.h.
#ifndef TORCHBENCH_MODELS_VISION_DALLE2_PYTORCH_UNET_H_
#define TORCHBENCH_MODELS_VISION_DALLE2_PYTORCH_UNET_H_

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/padding.h>
#include <torch/nn/functional/pixelshuffle.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vision/dalle2_pytorch_prior.h"

namespace torchbench {
namespace dalle2_pytorch_model {
namespace {

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel,
                       int64_t padding = 0) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, kernel).padding(padding));
}

torch::nn::Linear LinearNoBias(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

// (b, c, h, w) <-> (b, h*w, c), EinopsToAndFrom's 'b c h w' -> 'b (h w) c'.
torch::Tensor ToTokens(const torch::Tensor& x) {
  return x.flatten(2).transpose(1, 2);
}
torch::Tensor FromTokens(const torch::Tensor& t, const torch::Tensor& like) {
  return t.transpose(1, 2).reshape(like.sizes());
}

// CrossAttention(dim, context_dim, dim_head 64, heads 8), dot-product.
class CrossAttentionImpl : public torch::nn::Module {
 public:
  CrossAttentionImpl(int64_t dim, int64_t context_dim) {
    constexpr int64_t kHeads = 8, kDimHead = 64;
    norm = register_module("norm", GainLayerNorm(dim));
    null_kv = register_parameter("null_kv", torch::randn({2, kDimHead}));
    to_q = register_module("to_q", LinearNoBias(dim, kHeads * kDimHead));
    to_kv = register_module("to_kv",
                            LinearNoBias(context_dim, 2 * kHeads * kDimHead));
    auto to_out =
        register_module("to_out", std::make_shared<torch::nn::Module>());
    out_proj =
        to_out->register_module("0", LinearNoBias(kHeads * kDimHead, dim));
    out_norm = to_out->register_module("1", GainLayerNorm(dim));
  }
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& context) {
    constexpr int64_t kHeads = 8;
    const int64_t b = x.size(0), n = x.size(1);
    x = norm->forward(x);
    auto heads = [&](const torch::Tensor& t) {
      return t.unflatten(-1, {kHeads, -1}).transpose(1, 2);
    };
    auto kv = to_kv->forward(context).chunk(2, -1);
    torch::Tensor q = heads(to_q->forward(x));
    torch::Tensor k = heads(kv[0]), v = heads(kv[1]);
    const int64_t d = null_kv.size(1);
    k = torch::cat({null_kv[0].expand({b, kHeads, 1, d}), k}, -2);
    v = torch::cat({null_kv[1].expand({b, kHeads, 1, d}), v}, -2);
    const double scale = std::sqrt(std::pow(static_cast<double>(d), -0.5));
    q = q * scale;
    k = k * scale;
    torch::Tensor sim = torch::matmul(q, k.transpose(-2, -1));
    torch::Tensor attn = sim.softmax(-1, torch::kFloat).to(sim.scalar_type());
    torch::Tensor out =
        torch::matmul(attn, v).transpose(1, 2).reshape({b, n, -1});
    return out_norm->forward(out_proj->forward(out));
  }
  GainLayerNorm norm{nullptr}, out_norm{nullptr};
  torch::Tensor null_kv;
  torch::nn::Linear to_q{nullptr}, to_kv{nullptr}, out_proj{nullptr};
};
TORCH_MODULE(CrossAttention);

// Block: 3x3 conv, GroupNorm(8), optional scale-shift, SiLU.
class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(int64_t dim, int64_t dim_out) {
    project = register_module("project", Conv(dim, dim_out, 3, 1));
    norm = register_module(
        "norm", torch::nn::GroupNorm(torch::nn::GroupNormOptions(8, dim_out)));
  }
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& scale,
                        const torch::Tensor& shift) {
    x = norm->forward(project->forward(x));
    if (scale.defined()) x = x * (scale + 1) + shift;
    return torch::silu(x);
  }
  torch::nn::Conv2d project{nullptr};
  torch::nn::GroupNorm norm{nullptr};
};
TORCH_MODULE(Block);

// ResnetBlock(dim, dim_out, cond_dim?, time_cond_dim).
class ResnetBlockImpl : public torch::nn::Module {
 public:
  ResnetBlockImpl(int64_t dim, int64_t dim_out, int64_t cond_dim,
                  int64_t time_cond_dim) {
    auto time_mlp =
        register_module("time_mlp", std::make_shared<torch::nn::Module>());
    time_linear = time_mlp->register_module(
        "1", torch::nn::Linear(time_cond_dim, dim_out * 2));
    if (cond_dim > 0) {
      auto wrap =
          register_module("cross_attn", std::make_shared<torch::nn::Module>());
      cross_attn =
          wrap->register_module("fn", CrossAttention(dim_out, cond_dim));
    }
    block1 = register_module("block1", Block(dim, dim_out));
    block2 = register_module("block2", Block(dim_out, dim_out));
    if (dim != dim_out)
      res_conv = register_module("res_conv", Conv(dim, dim_out, 1));
  }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& t,
                        const torch::Tensor& cond) {
    auto ss = time_linear->forward(torch::silu(t))
                  .unsqueeze(-1)
                  .unsqueeze(-1)
                  .chunk(2, 1);
    torch::Tensor h = block1->forward(x, ss[0], ss[1]);
    if (cross_attn) {
      h = FromTokens(cross_attn->forward(ToTokens(h), cond), h) + h;
    }
    h = block2->forward(h, torch::Tensor(), torch::Tensor());
    return h + (res_conv ? res_conv->forward(x) : x);
  }
  torch::nn::Linear time_linear{nullptr};
  CrossAttention cross_attn{nullptr};
  Block block1{nullptr}, block2{nullptr};
  torch::nn::Conv2d res_conv{nullptr};
};
TORCH_MODULE(ResnetBlock);

struct UnetOptions {
  int64_t dim;
  std::vector<int64_t> dim_mults;
  bool lowres_cond;
  bool cond_on_image_embeds;
  bool cond_on_text_encodings;
  int64_t channels_out;
};

// Unet(dim, image_embed_dim 512, cond_dim 128, text_embed_dim 512) after the
// Decoder's cast_model_parameters: no self attention but at the middle,
// cross embed init conv (3, 7, 15), two resnet blocks per stage.
class UnetImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kCondDim = 128, kEmbedDim = 512, kMaxTextLen = 256;

  explicit UnetImpl(const UnetOptions& o) : o_(o) {
    const int64_t dim = o.dim, time_dim = 4 * dim;
    const int64_t init_channels = 3 * (o.lowres_cond ? 2 : 1);
    auto init =
        register_module("init_conv", std::make_shared<torch::nn::Module>());
    init_convs = init->register_module("convs", torch::nn::ModuleList());
    const int64_t kernels[] = {3, 7, 15};
    const int64_t scales[] = {dim / 2, dim / 4, dim - dim / 2 - dim / 4};
    for (int i = 0; i < 3; ++i) {
      init_convs->push_back(
          Conv(init_channels, scales[i], kernels[i], (kernels[i] - 1) / 2));
    }
    time_hiddens = Sub("to_time_hiddens")
                       ->register_module("1", torch::nn::Linear(dim, time_dim));
    time_tokens =
        Sub("to_time_tokens")
            ->register_module("0", torch::nn::Linear(time_dim, kCondDim * 2));
    time_cond =
        Sub("to_time_cond")
            ->register_module("0", torch::nn::Linear(time_dim, time_dim));
    if (o.cond_on_image_embeds) {
      image_tokens = Sub("image_to_tokens")
                         ->register_module(
                             "0", torch::nn::Linear(kEmbedDim, kCondDim * 4));
      image_hiddens =
          Sub("to_image_hiddens")
              ->register_module("0", torch::nn::Linear(kEmbedDim, time_dim));
    }
    norm_cond = register_module(
        "norm_cond",
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({kCondDim})));
    norm_mid_cond = register_module(
        "norm_mid_cond",
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({kCondDim})));
    if (o.cond_on_text_encodings) {
      text_to_cond = register_module("text_to_cond",
                                     torch::nn::Linear(kEmbedDim, kCondDim));
    }
    null_image_embed =
        register_parameter("null_image_embed", torch::randn({1, 4, kCondDim}));
    null_image_hiddens =
        register_parameter("null_image_hiddens", torch::randn({1, time_dim}));
    null_text_embed = register_parameter(
        "null_text_embed", torch::randn({1, kMaxTextLen, kCondDim}));

    std::vector<int64_t> dims = {dim};
    for (int64_t m : o.dim_mults) dims.push_back(dim * m);
    const int64_t stages = static_cast<int64_t>(o.dim_mults.size());
    downs = register_module("downs", torch::nn::ModuleList());
    for (int64_t i = 0; i < stages; ++i) {
      const int64_t in = dims[i], out = dims[i + 1];
      const int64_t cond = i == 0 ? 0 : kCondDim;
      auto stage = std::make_shared<torch::nn::Module>();
      down_init.push_back(
          stage->register_module("1", ResnetBlock(in, in, 0, time_dim)));
      auto blocks = stage->register_module("2", torch::nn::ModuleList());
      down_blocks.emplace_back();
      for (int r = 0; r < 2; ++r) {
        down_blocks.back().push_back(ResnetBlock(in, in, cond, time_dim));
        blocks->push_back(down_blocks.back().back());
      }
      if (i < stages - 1) {
        auto post =
            stage->register_module("4", std::make_shared<torch::nn::Module>());
        down_post.push_back(post->register_module("1", Conv(in * 4, out, 1)));
      } else {
        down_post.push_back(stage->register_module("4", Conv(in, out, 1)));
      }
      downs->push_back(stage);
    }
    const int64_t mid = dims.back();
    mid_block1 = register_module("mid_block1",
                                 ResnetBlock(mid, mid, kCondDim, time_dim));
    auto mid_wrap = Sub("mid_attn");
    auto residual =
        mid_wrap->register_module("fn", std::make_shared<torch::nn::Module>());
    mid_attn = residual->register_module(
        "fn", Attention(mid, 32, 16, /*causal=*/false, /*cosine_sim=*/false));
    mid_block2 = register_module("mid_block2",
                                 ResnetBlock(mid, mid, kCondDim, time_dim));
    ups = register_module("ups", torch::nn::ModuleList());
    for (int64_t i = stages - 1; i >= 0; --i) {
      const int64_t in = dims[i], out = dims[i + 1];
      const bool last = i == 0;
      const int64_t cond = last ? 0 : kCondDim;
      auto stage = std::make_shared<torch::nn::Module>();
      up_init.push_back(stage->register_module(
          "0", ResnetBlock(out + in, out, cond, time_dim)));
      auto blocks = stage->register_module("1", torch::nn::ModuleList());
      up_blocks.emplace_back();
      for (int r = 0; r < 2; ++r) {
        up_blocks.back().push_back(ResnetBlock(out + in, out, cond, time_dim));
        blocks->push_back(up_blocks.back().back());
      }
      if (!last) {
        auto up =
            stage->register_module("3", std::make_shared<torch::nn::Module>());
        auto net =
            up->register_module("net", std::make_shared<torch::nn::Module>());
        up_convs.push_back(net->register_module("0", Conv(out, in * 4, 1)));
      }
      ups->push_back(stage);
    }
    final_resnet_block = register_module(
        "final_resnet_block", ResnetBlock(2 * dim, dim, 0, time_dim));
    to_out = register_module(
        "to_out", Conv(dim + (o.lowres_cond ? 3 : 0), o.channels_out, 1));
    torch::NoGradGuard no_grad;
    to_out->weight.zero_();  // zero_init_
    to_out->bias.zero_();
  }

  bool lowres_cond() const { return o_.lowres_cond; }

  torch::Tensor forward(torch::Tensor x, const torch::Tensor& time,
                        const torch::Tensor& image_embed,
                        const torch::Tensor& text_encodings,
                        const torch::Tensor& lowres_cond_img, double image_drop,
                        double text_drop, Randomness& rng) {
    const int64_t b = x.size(0);
    if (lowres_cond_img.defined()) x = torch::cat({x, lowres_cond_img}, 1);
    std::vector<torch::Tensor> fmaps;
    for (const auto& conv : *init_convs) {
      fmaps.push_back(conv->as<torch::nn::Conv2d>()->forward(x));
    }
    x = torch::cat(fmaps, 1);
    torch::Tensor r = x.clone();
    torch::Tensor th = F::gelu(time_hiddens->forward(
        SinusoidalPosEmb(time.to(x.scalar_type()), o_.dim)));
    torch::Tensor tokens = time_tokens->forward(th).unflatten(-1, {2, -1});
    torch::Tensor t = time_cond->forward(th);
    torch::Tensor image_keep = rng.Mask(b, 1 - image_drop, x.device());
    torch::Tensor text_keep =
        rng.Mask(b, 1 - text_drop, x.device()).view({b, 1, 1});
    torch::Tensor c = tokens;
    if (image_hiddens) {
      torch::Tensor ih = F::gelu(image_hiddens->forward(image_embed));
      t = t + torch::where(image_keep.view({b, 1}), ih,
                           null_image_hiddens.to(ih.scalar_type()));
    }
    if (o_.cond_on_image_embeds) {
      torch::Tensor it =
          image_tokens->forward(image_embed).unflatten(-1, {4, -1});
      it = torch::where(image_keep.view({b, 1, 1}), it,
                        null_image_embed.to(it.scalar_type()));
      c = torch::cat({c, it}, -2);
    }
    torch::Tensor mid_c = c;
    if (text_encodings.defined() && o_.cond_on_text_encodings) {
      torch::Tensor mask = (text_encodings != 0.).any(-1);
      torch::Tensor tt = text_to_cond->forward(text_encodings);
      tt = tt.slice(1, 0, kMaxTextLen);
      mask = mask.slice(1, 0, kMaxTextLen);
      const int64_t remainder = kMaxTextLen - tt.size(1);
      if (remainder > 0) {
        tt = F::pad(tt, F::PadFuncOptions({0, 0, 0, remainder}));
        mask = F::pad(mask, F::PadFuncOptions({0, remainder}).value(0));
      }
      tt = torch::where(mask.unsqueeze(-1) & text_keep, tt,
                        null_text_embed.to(tt.scalar_type()));
      mid_c = torch::cat({c, tt}, -2);
    }
    c = norm_cond->forward(c);
    mid_c = norm_mid_cond->forward(mid_c);

    std::vector<torch::Tensor> hiddens;
    const size_t stages = down_init.size();
    for (size_t i = 0; i < stages; ++i) {
      x = down_init[i]->forward(x, t, c);
      for (auto& block : down_blocks[i]) {
        x = block->forward(x, t, c);
        hiddens.push_back(x.contiguous());
      }
      hiddens.push_back(x.contiguous());
      if (i + 1 < stages) {
        // Rearrange('b c (h s1) (w s2) -> b (c s1 s2) h w', s1=2, s2=2).
        const int64_t n = x.size(0), ch = x.size(1), h = x.size(2),
                      w = x.size(3);
        x = x.view({n, ch, h / 2, 2, w / 2, 2})
                .permute({0, 1, 3, 5, 2, 4})
                .reshape({n, ch * 4, h / 2, w / 2});
      }
      x = down_post[i]->forward(x);
    }
    x = mid_block1->forward(x, t, mid_c);
    x = FromTokens(mid_attn->forward(ToTokens(x), torch::Tensor()), x) + x;
    x = mid_block2->forward(x, t, mid_c);
    for (size_t i = 0; i < stages; ++i) {
      x = torch::cat({x, Pop(hiddens)}, 1);
      x = up_init[i]->forward(x, t, c);
      for (auto& block : up_blocks[i]) {
        x = torch::cat({x, Pop(hiddens)}, 1);
        x = block->forward(x, t, c);
      }
      if (i < up_convs.size()) {
        x = F::pixel_shuffle(torch::silu(up_convs[i]->forward(x)), 2);
      }
    }
    x = torch::cat({x, r}, 1);
    x = final_resnet_block->forward(x, t, torch::Tensor());
    if (lowres_cond_img.defined()) x = torch::cat({x, lowres_cond_img}, 1);
    return to_out->forward(x);
  }

  torch::nn::ModuleList init_convs{nullptr}, downs{nullptr}, ups{nullptr};
  torch::nn::Linear time_hiddens{nullptr}, time_tokens{nullptr},
      time_cond{nullptr}, image_tokens{nullptr}, image_hiddens{nullptr},
      text_to_cond{nullptr};
  torch::nn::LayerNorm norm_cond{nullptr}, norm_mid_cond{nullptr};
  torch::Tensor null_image_embed, null_image_hiddens, null_text_embed;
  ResnetBlock mid_block1{nullptr}, mid_block2{nullptr},
      final_resnet_block{nullptr};
  Attention mid_attn{nullptr};
  torch::nn::Conv2d to_out{nullptr};
  std::vector<ResnetBlock> down_init, up_init;
  std::vector<std::vector<ResnetBlock>> down_blocks, up_blocks;
  std::vector<torch::nn::Conv2d> down_post, up_convs;

 private:
  std::shared_ptr<torch::nn::Module> Sub(const std::string& name) {
    return register_module(name, std::make_shared<torch::nn::Module>());
  }
  static torch::Tensor Pop(std::vector<torch::Tensor>& v) {
    torch::Tensor t = v.back();
    v.pop_back();
    return t;
  }
  UnetOptions o_;
};
TORCH_MODULE(Unet);

}  // namespace
}  // namespace dalle2_pytorch_model
}  // namespace torchbench

#endif  // TORCHBENCH_MODELS_VISION_DALLE2_PYTORCH_UNET_H_
