// Pieces that transformers (as pinned) shares across the hf_* networks, written
// once: multi-head attention through scaled_dot_product_attention (what the
// default attn_implementation "sdpa" runs) with causal and padding masks,
// GPT-2's tanh GELU ("gelu_new") and the language-model losses of
// transformers/loss/loss_utils.py.
#ifndef TORCHBENCH_MODELS_NLP_COMMON_HF_LAYERS_H_
#define TORCHBENCH_MODELS_NLP_COMMON_HF_LAYERS_H_

#include <ATen/ops/scaled_dot_product_attention.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/loss.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <optional>

namespace torchbench::hf {

// B x T x (H * D) -> B x H x T x D.
inline torch::Tensor SplitHeads(const torch::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, -1}).transpose(1, 2);
}

// B x H x T x D -> B x T x (H * D).
inline torch::Tensor MergeHeads(const torch::Tensor& x) {
  return x.transpose(1, 2).contiguous().view(
      {x.size(0), x.size(2), x.size(1) * x.size(3)});
}

// transformers' sdpa_attention_forward on B x H x T x D heads. `mask` is a
// padding (or other) mask broadcast to B x H x Tq x Tk, boolean (true:
// attend) or additive, or undefined. `causal` adds the lower-triangular
// mask: as is_causal=True when no other mask is given (what transformers
// does when the query has more than one position), else folded into `mask`.
// Returns B x H x Tq x D.
inline torch::Tensor Attend(const torch::Tensor& q, const torch::Tensor& k,
                            const torch::Tensor& v, const torch::Tensor& mask,
                            bool causal, double dropout, double scale) {
  causal = causal && q.size(2) > 1;
  std::optional<torch::Tensor> attn_mask;
  if (mask.defined()) {
    attn_mask = mask;
    if (causal) {
      torch::Tensor keep =
          torch::ones({q.size(2), k.size(2)},
                      torch::TensorOptions(torch::kBool).device(q.device()))
              .tril();
      attn_mask = mask.scalar_type() == torch::kBool
                      ? mask.logical_and(keep)
                      : torch::where(keep, mask,
                                     -std::numeric_limits<double>::infinity());
      causal = false;
    }
  }
  return at::scaled_dot_product_attention(q, k, v, attn_mask, dropout, causal,
                                          scale);
}

// torch.finfo(dtype).min, the value transformers masks scores with.
inline double FinfoMin(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kHalf:
      return -65504.0;
    case torch::kBFloat16:
      return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
    case torch::kDouble:
      return std::numeric_limits<double>::lowest();
    default:
      return std::numeric_limits<float>::lowest();
  }
}

// ACT2FN["gelu_new"] (NewGELUActivation): the tanh approximation written
// out, op for op as transformers computes it (seven elementwise kernels, not
// the fused gelu(approximate="tanh") kernel, which rounds differently too).
inline torch::Tensor GeluNew(const torch::Tensor& x) {
  return 0.5 * x *
         (1.0 + torch::tanh(std::sqrt(2.0 / std::numbers::pi) *
                            (x + 0.044715 * torch::pow(x, 3.0))));
}

inline constexpr int64_t kIgnoreIndex = -100;

// ForCausalLMLoss: logits upcast to float, labels shifted left by one inside
// (the last position gets ignore_index), mean cross entropy over the rest.
inline torch::Tensor CausalLmLoss(const torch::Tensor& logits,
                                  const torch::Tensor& labels) {
  const int64_t vocab = logits.size(-1);
  torch::Tensor shifted = torch::constant_pad_nd(labels, {0, 1}, kIgnoreIndex)
                              .slice(-1, 1)
                              .contiguous();
  return torch::nn::functional::cross_entropy(
      logits.to(torch::kFloat).view({-1, vocab}), shifted.view(-1),
      torch::nn::functional::CrossEntropyFuncOptions().ignore_index(
          kIgnoreIndex));
}

// The seq2seq heads' loss: CrossEntropyLoss over logits.view(-1, vocab) and
// labels.view(-1) (no shift: decoder_input_ids are the shifted labels).
inline torch::Tensor Seq2SeqLmLoss(const torch::Tensor& logits,
                                   const torch::Tensor& labels) {
  const int64_t vocab = logits.size(-1);
  return torch::nn::functional::cross_entropy(logits.view({-1, vocab}),
                                              labels.view(-1));
}

// shift_tokens_right of the BART family: decoder inputs are the labels
// moved one position right, `start` first, with -100 replaced by `pad`.
inline torch::Tensor ShiftTokensRight(const torch::Tensor& labels, int64_t pad,
                                      int64_t start) {
  torch::Tensor shifted = torch::empty_like(labels);
  shifted.slice(1, 1).copy_(labels.slice(1, 0, -1));
  shifted.select(1, 0).fill_(start);
  return shifted.masked_fill(shifted == kIgnoreIndex, pad);
}

}  // namespace torchbench::hf

#endif  // TORCHBENCH_MODELS_NLP_COMMON_HF_LAYERS_H_
