// DALLE2_pytorch, part 2: the library's noise schedule, layers
// shared with the Unet (LayerNorm, Attention) and the DiffusionPrior with its
// causal transformer (dim 512, depth 6, rotary embeddings). Included by
// dalle2_pytorch.cpp only, after dalle2_pytorch_clip.h.
#ifndef TORCHBENCH_MODELS_VISION_DALLE2_PYTORCH_PRIOR_H_
#define TORCHBENCH_MODELS_VISION_DALLE2_PYTORCH_PRIOR_H_

#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "vision/dalle2_pytorch_clip.h"
#include "vision/dalle2_pytorch_random.h"

namespace torchbench {
namespace dalle2_pytorch_model {
namespace {

// extract(a, t, x_shape): a[t] shaped (b, 1, ..., 1).
torch::Tensor Extract(const torch::Tensor& a, const torch::Tensor& t,
                      int64_t dims) {
  std::vector<int64_t> shape(dims, 1);
  shape[0] = t.size(0);
  return a.gather(-1, t).reshape(shape);
}

// NoiseScheduler(beta_schedule, timesteps, loss_type='l2'), p2 gamma 0.
class NoiseSchedulerImpl : public torch::nn::Module {
 public:
  NoiseSchedulerImpl(bool cosine, int64_t timesteps)
      : cosine_(cosine), timesteps_(timesteps) {
    for (const char* name : kNames) {
      buffers_[name] = register_buffer(name, torch::zeros({timesteps}));
    }
    Reset();
  }

  // Writes the schedule into the buffers (again after the golden fill).
  void Reset() {
    torch::NoGradGuard no_grad;
    const auto f64 = torch::TensorOptions().dtype(torch::kDouble);
    const int64_t t = timesteps_;
    torch::Tensor betas;
    if (cosine_) {
      constexpr double s = 0.008;
      torch::Tensor x = torch::linspace(0, t, t + 1, f64);
      torch::Tensor ac =
          torch::cos(((x / t) + s) / (1 + s) * M_PI * 0.5).pow(2);
      ac = ac / ac[0];
      betas = torch::clip(1 - (ac.slice(0, 1) / ac.slice(0, 0, t)), 0, 0.999);
    } else {
      const double scale = 1000.0 / t;
      betas = torch::linspace(scale * 0.0001, scale * 0.02, t, f64);
    }
    torch::Tensor alphas = 1. - betas;
    torch::Tensor ac = torch::cumprod(alphas, 0);
    torch::Tensor ac_prev =
        torch::cat({torch::ones({1}, f64), ac.slice(0, 0, t - 1)});
    torch::Tensor posterior_variance = betas * (1. - ac_prev) / (1. - ac);
    const std::map<std::string, torch::Tensor> values = {
        {"betas", betas},
        {"alphas_cumprod", ac},
        {"alphas_cumprod_prev", ac_prev},
        {"sqrt_alphas_cumprod", torch::sqrt(ac)},
        {"sqrt_one_minus_alphas_cumprod", torch::sqrt(1. - ac)},
        {"log_one_minus_alphas_cumprod", torch::log(1. - ac)},
        {"sqrt_recip_alphas_cumprod", torch::sqrt(1. / ac)},
        {"sqrt_recipm1_alphas_cumprod", torch::sqrt(1. / ac - 1)},
        {"posterior_variance", posterior_variance},
        {"posterior_log_variance_clipped",
         torch::log(posterior_variance.clamp_min(1e-20))},
        {"posterior_mean_coef1", betas * torch::sqrt(ac_prev) / (1. - ac)},
        {"posterior_mean_coef2",
         (1. - ac_prev) * torch::sqrt(alphas) / (1. - ac)},
        {"p2_loss_weight", torch::ones({t}, f64)}};
    for (auto& [name, buffer] : buffers_) {
      buffer.copy_(values.at(name).to(torch::kFloat));
    }
  }

  const torch::Tensor& operator[](const std::string& name) const {
    return buffers_.at(name);
  }
  int64_t num_timesteps() const { return timesteps_; }

  torch::Tensor QSample(const torch::Tensor& x_start, const torch::Tensor& t,
                        const torch::Tensor& noise) const {
    const int64_t d = x_start.dim();
    return Extract((*this)["sqrt_alphas_cumprod"], t, d) * x_start +
           Extract((*this)["sqrt_one_minus_alphas_cumprod"], t, d) * noise;
  }

  // q_posterior: (mean, log variance clipped).
  std::pair<torch::Tensor, torch::Tensor> QPosterior(
      const torch::Tensor& x_start, const torch::Tensor& x_t,
      const torch::Tensor& t) const {
    const int64_t d = x_t.dim();
    torch::Tensor mean =
        Extract((*this)["posterior_mean_coef1"], t, d) * x_start +
        Extract((*this)["posterior_mean_coef2"], t, d) * x_t;
    return {mean, Extract((*this)["posterior_log_variance_clipped"], t, d)};
  }

  torch::Tensor PredictStartFromNoise(const torch::Tensor& x_t,
                                      const torch::Tensor& t,
                                      const torch::Tensor& noise) const {
    const int64_t d = x_t.dim();
    return Extract((*this)["sqrt_recip_alphas_cumprod"], t, d) * x_t -
           Extract((*this)["sqrt_recipm1_alphas_cumprod"], t, d) * noise;
  }

 private:
  static constexpr const char* kNames[] = {"betas",
                                           "alphas_cumprod",
                                           "alphas_cumprod_prev",
                                           "sqrt_alphas_cumprod",
                                           "sqrt_one_minus_alphas_cumprod",
                                           "log_one_minus_alphas_cumprod",
                                           "sqrt_recip_alphas_cumprod",
                                           "sqrt_recipm1_alphas_cumprod",
                                           "posterior_variance",
                                           "posterior_log_variance_clipped",
                                           "posterior_mean_coef1",
                                           "posterior_mean_coef2",
                                           "p2_loss_weight"};
  bool cosine_;
  int64_t timesteps_;
  std::map<std::string, torch::Tensor> buffers_;
};
TORCH_MODULE(NoiseScheduler);

// The library's LayerNorm (parameter `g`, no bias; eps 1e-5 in float32 and
// 1e-3 otherwise; `stable` divides by the detached max first).
class GainLayerNormImpl : public torch::nn::Module {
 public:
  explicit GainLayerNormImpl(int64_t dim, bool stable = false)
      : stable_(stable) {
    g = register_parameter("g", torch::ones({dim}));
  }
  torch::Tensor forward(torch::Tensor x) {
    const double eps = x.scalar_type() == torch::kFloat ? 1e-5 : 1e-3;
    if (stable_) x = x / x.amax(-1, true).detach();
    torch::Tensor var =
        x.var(at::IntArrayRef{-1}, /*unbiased=*/false, /*keepdim=*/true);
    torch::Tensor mean = x.mean(-1, true);
    return (x - mean) * (var + eps).rsqrt() * g;
  }
  torch::Tensor g;

 private:
  bool stable_;
};
TORCH_MODULE(GainLayerNorm);

// rotary_embedding_torch 0.1.5 RotaryEmbedding(dim=32): `freqs` is a buffer.
class RotaryEmbeddingImpl : public torch::nn::Module {
 public:
  explicit RotaryEmbeddingImpl(int64_t dim) : dim_(dim) {
    freqs = register_buffer("freqs", torch::zeros({dim / 2}));
    Reset();
  }
  void Reset() {
    torch::NoGradGuard no_grad;
    freqs.copy_(
        1. /
        torch::pow(
            10000.,
            torch::arange(0, dim_, 2).slice(0, 0, dim_ / 2).to(torch::kFloat) /
                dim_));
  }
  // rotate_queries_or_keys(t), sequence at dim -2.
  torch::Tensor Rotate(const torch::Tensor& t) {
    const int64_t n = t.size(-2);
    torch::Tensor pos = torch::arange(n, t.options().dtype(torch::kLong))
                            .to(freqs.scalar_type());
    torch::Tensor f = torch::outer(pos, freqs).repeat_interleave(2, -1).to(t);
    torch::Tensor rot = t.slice(-1, 0, f.size(-1));
    torch::Tensor pairs = rot.unflatten(-1, {-1, 2});
    torch::Tensor half =
        torch::stack({-pairs.select(-1, 1), pairs.select(-1, 0)}, -1)
            .flatten(-2);
    rot = rot * f.cos() + half * f.sin();
    return torch::cat({rot, t.slice(-1, f.size(-1))}, -1);
  }
  torch::Tensor freqs;

 private:
  int64_t dim_;
};
TORCH_MODULE(RotaryEmbedding);

// The library's Attention: one shared key/value head (to_kv) with a learned
// null key/value, cosine-sim or scaled dot products, optional causal mask,
// rotary embeddings and additive bias.
class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(int64_t dim, int64_t dim_head, int64_t heads, bool causal,
                bool cosine_sim, RotaryEmbedding rotary = nullptr,
                bool register_rotary = false)
      : heads_(heads),
        causal_(causal),
        cosine_sim_(cosine_sim),
        scale_(cosine_sim ? 16.0 : std::pow(dim_head, -0.5)),
        rotary_(std::move(rotary)) {
    norm = register_module("norm", GainLayerNorm(dim));
    null_kv = register_parameter("null_kv", torch::randn({2, dim_head}));
    to_q = register_module(
        "to_q",
        torch::nn::Linear(
            torch::nn::LinearOptions(dim, dim_head * heads).bias(false)));
    to_kv = register_module(
        "to_kv", torch::nn::Linear(
                     torch::nn::LinearOptions(dim, dim_head * 2).bias(false)));
    // Shared by all layers: Python lists it once, under the first layer.
    if (register_rotary) register_module("rotary_emb", rotary_);
    auto to_out =
        register_module("to_out", std::make_shared<torch::nn::Module>());
    out_proj = to_out->register_module(
        "0", torch::nn::Linear(
                 torch::nn::LinearOptions(dim_head * heads, dim).bias(false)));
    out_norm = to_out->register_module("1", GainLayerNorm(dim));
  }

  torch::Tensor forward(torch::Tensor x, const torch::Tensor& attn_bias) {
    const int64_t b = x.size(0), n = x.size(1);
    x = norm->forward(x);
    torch::Tensor q = to_q->forward(x);
    auto kv = to_kv->forward(x).chunk(2, -1);
    torch::Tensor k = kv[0], v = kv[1];
    q = q.unflatten(-1, {heads_, -1}).transpose(1, 2) * scale_;
    if (rotary_) {
      q = rotary_->Rotate(q);
      k = rotary_->Rotate(k);
    }
    const int64_t d = null_kv.size(1);
    k = torch::cat({null_kv[0].expand({b, 1, d}), k}, -2);
    v = torch::cat({null_kv[1].expand({b, 1, d}), v}, -2);
    if (cosine_sim_) {
      q = L2Norm(q);
      k = L2Norm(k);
    }
    q = q * std::sqrt(scale_);
    k = k * std::sqrt(scale_);
    torch::Tensor sim = torch::einsum("bhid,bjd->bhij", {q, k});
    if (attn_bias.defined()) sim = sim + attn_bias;
    if (causal_) {
      const int64_t i = sim.size(-2), j = sim.size(-1);
      torch::Tensor mask =
          torch::ones({i, j}, sim.options().dtype(torch::kBool))
              .triu(j - i + 1);
      sim = sim.masked_fill(mask, MaxNeg(sim.scalar_type()));
    }
    torch::Tensor attn = sim.softmax(-1, torch::kFloat).to(sim.scalar_type());
    torch::Tensor out = torch::einsum("bhij,bjd->bhid", {attn, v});
    out = out.transpose(1, 2).reshape({b, n, -1});
    return out_norm->forward(out_proj->forward(out));
  }

  static double MaxNeg(torch::ScalarType dtype) {
    switch (dtype) {
      case torch::kHalf:
        return -65504.0;
      case torch::kBFloat16:
        return -3.3895313892515355e38;
      case torch::kDouble:
        return -std::numeric_limits<double>::max();
      default:
        return -std::numeric_limits<float>::max();
    }
  }

  GainLayerNorm norm{nullptr}, out_norm{nullptr};
  torch::Tensor null_kv;
  torch::nn::Linear to_q{nullptr}, to_kv{nullptr}, out_proj{nullptr};

 private:
  int64_t heads_;
  bool causal_, cosine_sim_;
  double scale_;
  RotaryEmbedding rotary_;
};
TORCH_MODULE(Attention);

// FeedForward(dim, mult 4): LayerNorm, Linear to 2x inner, SwiGLU, Linear.
class FeedForwardImpl : public torch::nn::Module {
 public:
  explicit FeedForwardImpl(int64_t dim) {
    const int64_t inner = 4 * dim;
    norm = register_module("0", GainLayerNorm(dim));
    proj_in = register_module(
        "1", torch::nn::Linear(
                 torch::nn::LinearOptions(dim, inner * 2).bias(false)));
    proj_out = register_module(
        "5",
        torch::nn::Linear(torch::nn::LinearOptions(inner, dim).bias(false)));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto parts = proj_in->forward(norm->forward(x)).chunk(2, -1);
    return proj_out->forward(parts[0] * torch::silu(parts[1]));
  }
  GainLayerNorm norm{nullptr};
  torch::nn::Linear proj_in{nullptr}, proj_out{nullptr};
};
TORCH_MODULE(FeedForward);

// CausalTransformer(dim 512, depth 6, dim_head 64, heads 8): T5 relative
// position bias, rotary embeddings, stable final norm, output projection.
class CausalTransformerImpl : public torch::nn::Module {
 public:
  CausalTransformerImpl(int64_t dim, int64_t depth, int64_t dim_head,
                        int64_t heads) {
    auto rel =
        register_module("rel_pos_bias", std::make_shared<torch::nn::Module>());
    relative_attention_bias = rel->register_module(
        "relative_attention_bias", torch::nn::Embedding(32, heads));
    rotary = RotaryEmbedding(std::min<int64_t>(32, dim_head));
    layers = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < depth; ++i) {
      torch::nn::ModuleList pair;
      pair->push_back(Attention(dim, dim_head, heads, /*causal=*/true,
                                /*cosine_sim=*/true, rotary, i == 0));
      pair->push_back(FeedForward(dim));
      layers->push_back(pair);
    }
    norm = register_module("norm", GainLayerNorm(dim, /*stable=*/true));
    project_out = register_module(
        "project_out",
        torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  }

  torch::Tensor forward(torch::Tensor x) {
    const int64_t n = x.size(1);
    torch::Tensor bias = RelPosBias(n, n + 1, x.device());
    for (const auto& layer : *layers) {
      auto pair = layer->as<torch::nn::ModuleList>();
      x = pair->at<AttentionImpl>(0).forward(x, bias) + x;
      x = pair->at<FeedForwardImpl>(1).forward(x) + x;
    }
    return project_out->forward(norm->forward(x));
  }

  torch::nn::Embedding relative_attention_bias{nullptr};
  RotaryEmbedding rotary{nullptr};
  torch::nn::ModuleList layers{nullptr};
  GainLayerNorm norm{nullptr};
  torch::nn::Linear project_out{nullptr};

 private:
  torch::Tensor RelPosBias(int64_t i, int64_t j, const torch::Device& device) {
    const auto opts = torch::TensorOptions().dtype(torch::kLong).device(device);
    torch::Tensor rel = torch::arange(j, opts).unsqueeze(0) -
                        torch::arange(i, opts).unsqueeze(1);
    torch::Tensor n = torch::clamp_min(-rel, 0);
    constexpr int64_t kBuckets = 32, kMaxExact = 16;
    torch::Tensor large =
        kMaxExact + (torch::log(n.to(torch::kFloat) / kMaxExact) /
                     std::log(128.0 / kMaxExact) * (kBuckets - kMaxExact))
                        .to(torch::kLong);
    large = torch::clamp_max(large, kBuckets - 1);
    torch::Tensor bucket = torch::where(n < kMaxExact, n, large);
    return relative_attention_bias->forward(bucket).permute({2, 0, 1});
  }
};
TORCH_MODULE(CausalTransformer);

// SinusoidalPosEmb(dim) on `x`, cast back to x's dtype as the reference does
// (integer timesteps therefore truncate the embedding to integers).
torch::Tensor SinusoidalPosEmb(const torch::Tensor& x, int64_t dim) {
  const int64_t half = dim / 2;
  const double step = std::log(10000.0) / (half - 1);
  torch::Tensor emb = torch::exp(torch::arange(half, x.options()) * -step);
  emb = x.unsqueeze(1) * emb.unsqueeze(0);
  return torch::cat({emb.sin(), emb.cos()}, -1).to(x.scalar_type());
}

// DiffusionPriorNetwork(dim=512, depth=6, dim_head=64, heads=8): continuous
// time embedding (SinusoidalPosEmb + MLP), one text/image/time token each.
class DiffusionPriorNetworkImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kMaxTextLen = 256;

  explicit DiffusionPriorNetworkImpl(int64_t dim) : dim_(dim) {
    // to_time_embeds.0.1 = MLP(dim, dim): expansion 2, depth 2, no norm.
    auto outer = register_module("to_time_embeds",
                                 std::make_shared<torch::nn::Module>());
    auto inner =
        outer->register_module("0", std::make_shared<torch::nn::Module>());
    auto mlp =
        inner->register_module("1", std::make_shared<torch::nn::Module>());
    const int64_t hidden = 2 * dim;
    auto net =
        mlp->register_module("net", std::make_shared<torch::nn::Module>());
    auto layer0 =
        net->register_module("0", std::make_shared<torch::nn::Module>());
    auto layer1 =
        net->register_module("1", std::make_shared<torch::nn::Module>());
    time_mlp = {layer0->register_module("0", torch::nn::Linear(dim, hidden)),
                layer1->register_module("0", torch::nn::Linear(hidden, hidden)),
                net->register_module("2", torch::nn::Linear(hidden, dim))};
    learned_query = register_parameter("learned_query", torch::randn({dim}));
    causal_transformer =
        register_module("causal_transformer", CausalTransformer(dim, 6, 64, 8));
    null_text_encodings = register_parameter(
        "null_text_encodings", torch::randn({1, kMaxTextLen, dim}));
    null_text_embeds =
        register_parameter("null_text_embeds", torch::randn({1, 1, dim}));
    null_image_embed =
        register_parameter("null_image_embed", torch::randn({1, dim}));
  }

  torch::Tensor forward(torch::Tensor image_embed, const torch::Tensor& times,
                        torch::Tensor text_embed, torch::Tensor text_encodings,
                        double text_drop, double image_drop, Randomness& rng) {
    const int64_t b = image_embed.size(0);
    text_embed = text_embed.unsqueeze(1);
    image_embed = image_embed.unsqueeze(1);
    torch::Tensor text_keep =
        rng.Mask(b, 1 - text_drop, image_embed.device()).view({b, 1, 1});
    torch::Tensor image_keep =
        rng.Mask(b, 1 - image_drop, image_embed.device()).view({b, 1, 1});
    torch::Tensor mask = (text_encodings != 0.).any(-1);
    text_encodings = text_encodings.slice(1, 0, kMaxTextLen);
    mask = mask.slice(1, 0, kMaxTextLen);
    const int64_t remainder = kMaxTextLen - text_encodings.size(1);
    if (remainder > 0) {
      text_encodings =
          F::pad(text_encodings, F::PadFuncOptions({0, 0, 0, remainder}));
      mask = F::pad(mask, F::PadFuncOptions({0, remainder}).value(0));
    }
    text_encodings =
        torch::where(mask.unsqueeze(-1) & text_keep, text_encodings,
                     null_text_encodings.to(text_encodings.scalar_type()));
    text_embed = torch::where(text_keep, text_embed,
                              null_text_embeds.to(text_embed.scalar_type()));
    image_embed = torch::where(image_keep, image_embed,
                               null_image_embed.to(image_embed.scalar_type()));
    // MLP.forward's x.float(): the MLP's own dtype (float32 unless the
    // harness converted the module).
    torch::Tensor time_embed =
        SinusoidalPosEmb(times, dim_).to(time_mlp[0]->weight.scalar_type());
    time_embed = torch::silu(time_mlp[0]->forward(time_embed));
    time_embed = torch::silu(time_mlp[1]->forward(time_embed));
    time_embed = time_mlp[2]->forward(time_embed);
    torch::Tensor queries = learned_query.expand({b, 1, dim_});
    torch::Tensor tokens =
        torch::cat({text_encodings, text_embed, time_embed.unsqueeze(1),
                    image_embed, queries},
                   -2);
    return causal_transformer->forward(tokens).select(1, -1);
  }

  std::vector<torch::nn::Linear> time_mlp;
  torch::Tensor learned_query, null_text_encodings, null_text_embeds,
      null_image_embed;
  CausalTransformer causal_transformer{nullptr};

 private:
  int64_t dim_;
};
TORCH_MODULE(DiffusionPriorNetwork);

// DiffusionPrior(net, clip, timesteps=1, cond_drop_prob=0.2): cosine
// schedule, predicts x0, l2 loss, image embeddings scaled by sqrt(512).
class DiffusionPriorImpl : public torch::nn::Module {
 public:
  explicit DiffusionPriorImpl(ClipAdapter clip_adapter) {
    noise_scheduler =
        register_module("noise_scheduler", NoiseScheduler(true, 1));
    clip = register_module("clip", std::move(clip_adapter));
    net = register_module("net", DiffusionPriorNetwork(kDim));
    register_buffer("_dummy", torch::ones({1}, torch::kBool));
  }

  // forward(text, image): the training loss.
  torch::Tensor Loss(const torch::Tensor& text, const torch::Tensor& image,
                     Randomness& rng) {
    torch::Tensor image_embed = clip->EmbedImage(image);
    auto [text_embed, text_encodings] = clip->EmbedText(text);
    const int64_t b = image_embed.size(0);
    torch::Tensor times =
        rng.Times(b, noise_scheduler->num_timesteps(), image_embed.device());
    image_embed = image_embed * std::sqrt(static_cast<double>(kDim));
    torch::Tensor noise = rng.Randn(image_embed.sizes(), image_embed.options());
    torch::Tensor noisy = noise_scheduler->QSample(image_embed, times, noise);
    torch::Tensor pred = net->forward(noisy, times, text_embed, text_encodings,
                                      kCondDrop, kCondDrop, rng);
    return F::mse_loss(pred, image_embed);
  }

  // sample(text, num_samples_per_batch=2): the embedding of the two samples
  // closest to the text embedding, one DDPM step (timesteps=1).
  torch::Tensor Sample(const torch::Tensor& text, Randomness& rng) {
    constexpr int64_t kSamples = 2;
    torch::Tensor repeated = text.repeat_interleave(kSamples, 0);
    auto [text_embed, text_encodings] = clip->EmbedText(repeated);
    const int64_t batch = repeated.size(0);
    torch::Tensor x = rng.Randn({batch, kDim}, text_embed.options());
    for (int64_t i = 0; i < noise_scheduler->num_timesteps(); ++i) {
      torch::Tensor t =
          torch::full({batch}, i, text_embed.options().dtype(torch::kLong));
      torch::Tensor x_start =
          net->forward(x, t, text_embed, text_encodings, 0., 0., rng);
      auto [mean, log_variance] = noise_scheduler->QPosterior(x_start, x, t);
      torch::Tensor noise = rng.Randn(x.sizes(), x.options());
      torch::Tensor nonzero =
          (1 - (t == 0).to(x.scalar_type())).view({batch, 1});
      x = mean + nonzero * (0.5 * log_variance).exp() * noise;
    }
    torch::Tensor image_embeds =
        (x / std::sqrt(static_cast<double>(kDim))).view({-1, kSamples, kDim});
    torch::Tensor text_embeds = text_embed.view({-1, kSamples, kDim});
    torch::Tensor sims = (L2Norm(text_embeds) * L2Norm(image_embeds)).sum(-1);
    torch::Tensor top = std::get<1>(sims.topk(1));
    return image_embeds.gather(1, top.unsqueeze(-1).expand({-1, 1, kDim}))
        .squeeze(1);
  }

  static constexpr int64_t kDim = 512;
  static constexpr double kCondDrop = 0.2;
  NoiseScheduler noise_scheduler{nullptr};
  ClipAdapter clip{nullptr};
  DiffusionPriorNetwork net{nullptr};
};
TORCH_MODULE(DiffusionPrior);

}  // namespace
}  // namespace dalle2_pytorch_model
}  // namespace torchbench

#endif  // TORCHBENCH_MODELS_VISION_DALLE2_PYTORCH_PRIOR_H_
