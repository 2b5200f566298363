// The speech_transformer network: kaituoxu/Speech-Transformer's Encoder,
// Decoder (with its beam search) and Transformer as TorchBench vendors them
// (torchbenchmark/models/speech_transformer/speech_transformer/transformer/
// at 43ca0857), under the reference's state_dict names. The model file,
// speech_transformer.cpp, holds the data, loss and train step.
#ifndef TORCHBENCH_MODELS_SPEECH_SPEECH_TRANSFORMER_NETWORK_H_
#define TORCHBENCH_MODELS_SPEECH_SPEECH_TRANSFORMER_NETWORK_H_

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/linear.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

namespace torchbench::speech_transformer {

// SpeechTransformerTrainConfig / SpeechTransformerEvalConfig (config.py).
constexpr int64_t kFbankDims = 80;  // d_input
constexpr int64_t kLfrM = 4;
constexpr int64_t kLfrN = 3;
constexpr int64_t kModel = 512;  // d_model and d_word_vec
constexpr int64_t kInner = 2048;
constexpr int64_t kHeads = 8;
constexpr int64_t kHeadDim = 64;  // d_k and d_v
constexpr int64_t kLayers = 6;    // n_layers_enc and n_layers_dec
constexpr double kDropout = 0.1;
constexpr int64_t kPeMaxLen = 5000;
constexpr int64_t kBeamSize = 5;

constexpr int64_t kVocab = 1014;
constexpr int64_t kSosId = 1;
constexpr int64_t kEosId = 2;
constexpr int64_t kIgnoreId = -1;

// utils.py get_non_pad_mask with input_lengths: (N, T, 1), 0 past each
// length. Row by row as the reference: each `non_pad_mask[i, lengths[i]:] =
// 0` reads its length back to the host (one sync per row).
inline torch::Tensor NonPadMask(const torch::Tensor& padded,
                                const torch::Tensor& lengths) {
  torch::Tensor mask =
      padded.new_ones(padded.sizes().slice(0, padded.dim() - 1));
  for (int64_t i = 0; i < padded.size(0); ++i) {
    mask[i].slice(0, lengths[i].item<int64_t>()).fill_(0);
  }
  return mask.unsqueeze(-1);
}

// utils.py get_attn_pad_mask: true at keys past each length, (N, len_q, T).
inline torch::Tensor AttnPadMask(const torch::Tensor& padded,
                                 const torch::Tensor& lengths, int64_t len_q) {
  torch::Tensor pad = NonPadMask(padded, lengths).squeeze(-1).lt(1);
  return pad.unsqueeze(1).expand({-1, len_q, -1});
}

// utils.py get_subsequent_mask, as a bool mask (the reference's uint8 mask
// is only ever used as a mask).
inline torch::Tensor SubsequentMask(const torch::Tensor& seq) {
  const int64_t len = seq.size(1);
  return torch::triu(torch::ones({len, len}, seq.options().dtype(torch::kBool)),
                     /*diagonal=*/1)
      .unsqueeze(0)
      .expand({seq.size(0), -1, -1});
}

inline torch::nn::LayerNorm MakeLayerNorm() {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({kModel}));
}

// attention.py MultiHeadAttention with its ScaledDotProductAttention folded
// in: that module holds only a dropout (attn_dropout here) and a softmax.
class MultiHeadAttentionImpl : public torch::nn::Module {
 public:
  MultiHeadAttentionImpl()
      : w_qs_(register_module("w_qs",
                              torch::nn::Linear(kModel, kHeads * kHeadDim))),
        w_ks_(register_module("w_ks",
                              torch::nn::Linear(kModel, kHeads * kHeadDim))),
        w_vs_(register_module("w_vs",
                              torch::nn::Linear(kModel, kHeads * kHeadDim))) {
    attn_dropout_ =
        register_module("attn_dropout", torch::nn::Dropout(kDropout));
    layer_norm_ = register_module("layer_norm", MakeLayerNorm());
    fc_ = register_module("fc", torch::nn::Linear(kHeads * kHeadDim, kModel));
    dropout_ = register_module("dropout", torch::nn::Dropout(kDropout));
    // The reference's own inits (Transformer's xavier_uniform_ overwrites
    // the weights afterwards, but the RNG draws are the reference's).
    torch::NoGradGuard no_grad;
    const double qk_std = std::sqrt(2.0 / (kModel + kHeadDim));
    torch::nn::init::normal_(w_qs_->weight, 0, qk_std);
    torch::nn::init::normal_(w_ks_->weight, 0, qk_std);
    torch::nn::init::normal_(w_vs_->weight, 0, qk_std);
    torch::nn::init::xavier_normal_(fc_->weight);
  }

  // `mask` (N, len_q, len_k) is true where attention is blocked, or
  // undefined.
  torch::Tensor forward(const torch::Tensor& q_in, const torch::Tensor& k_in,
                        const torch::Tensor& v_in, const torch::Tensor& mask) {
    const int64_t batch = q_in.size(0);
    const int64_t len_q = q_in.size(1);
    const int64_t len_k = k_in.size(1);
    const int64_t len_v = v_in.size(1);
    auto heads_first = [&](const torch::Tensor& x, int64_t len) {
      return x.view({batch, len, kHeads, kHeadDim})
          .permute({2, 0, 1, 3})
          .contiguous()
          .view({-1, len, kHeadDim});
    };
    torch::Tensor q = heads_first(w_qs_(q_in), len_q);
    torch::Tensor k = heads_first(w_ks_(k_in), len_k);
    torch::Tensor v = heads_first(w_vs_(v_in), len_v);
    torch::Tensor attn = torch::bmm(q, k.transpose(1, 2)) / kTemperature;
    if (mask.defined()) {
      attn = attn.masked_fill(mask.repeat({kHeads, 1, 1}),
                              -std::numeric_limits<double>::infinity());
    }
    attn = attn_dropout_(torch::softmax(attn, 2));
    torch::Tensor out = torch::bmm(attn, v)
                            .view({kHeads, batch, len_q, kHeadDim})
                            .permute({1, 2, 0, 3})
                            .contiguous()
                            .view({batch, len_q, -1});
    out = dropout_(fc_(out));
    return layer_norm_(out + q_in);
  }

 private:
  static constexpr double kTemperature = 8.0;  // np.power(d_k, 0.5)
  torch::nn::Linear w_qs_, w_ks_, w_vs_;
  torch::nn::Dropout attn_dropout_{nullptr};
  torch::nn::LayerNorm layer_norm_{nullptr};
  torch::nn::Linear fc_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(MultiHeadAttention);

// module.py PositionwiseFeedForward.
class PositionwiseFeedForwardImpl : public torch::nn::Module {
 public:
  PositionwiseFeedForwardImpl()
      : w_1_(register_module("w_1", torch::nn::Linear(kModel, kInner))),
        w_2_(register_module("w_2", torch::nn::Linear(kInner, kModel))),
        dropout_(register_module("dropout", torch::nn::Dropout(kDropout))),
        layer_norm_(register_module("layer_norm", MakeLayerNorm())) {}

  torch::Tensor forward(const torch::Tensor& x) {
    return layer_norm_(dropout_(w_2_(torch::relu(w_1_(x)))) + x);
  }

 private:
  torch::nn::Linear w_1_, w_2_;
  torch::nn::Dropout dropout_;
  torch::nn::LayerNorm layer_norm_;
};
TORCH_MODULE(PositionwiseFeedForward);

// module.py PositionalEncoding: a float32 table built with torch ops; the
// forward returns the first `length` rows (the caller adds them).
class PositionalEncodingImpl : public torch::nn::Module {
 public:
  PositionalEncodingImpl() {
    torch::Tensor pe = torch::zeros({kPeMaxLen, kModel});
    torch::Tensor position =
        torch::arange(0, kPeMaxLen).unsqueeze(1).to(torch::kFloat);
    torch::Tensor div_term =
        torch::exp(torch::arange(0, kModel, 2).to(torch::kFloat) *
                   -(std::log(10000.0) / static_cast<double>(kModel)));
    pe.index_put_({torch::indexing::Slice(),
                   torch::indexing::Slice(0, torch::indexing::None, 2)},
                  torch::sin(position * div_term));
    pe.index_put_({torch::indexing::Slice(),
                   torch::indexing::Slice(1, torch::indexing::None, 2)},
                  torch::cos(position * div_term));
    pe_ = register_buffer("pe", pe.unsqueeze(0));
  }

  torch::Tensor forward(int64_t length) {
    return pe_.index(
        {torch::indexing::Slice(), torch::indexing::Slice(0, length)});
  }

 private:
  torch::Tensor pe_;
};
TORCH_MODULE(PositionalEncoding);

// encoder.py EncoderLayer: each sub-layer's output is zeroed past the
// utterance's length.
class EncoderLayerImpl : public torch::nn::Module {
 public:
  EncoderLayerImpl()
      : slf_attn_(register_module("slf_attn", MultiHeadAttention())),
        pos_ffn_(register_module("pos_ffn", PositionwiseFeedForward())) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& non_pad,
                        const torch::Tensor& slf_mask) {
    torch::Tensor out = slf_attn_(x, x, x, slf_mask);
    out *= non_pad;
    out = pos_ffn_(out);
    out *= non_pad;
    return out;
  }

 private:
  MultiHeadAttention slf_attn_;
  PositionwiseFeedForward pos_ffn_;
};
TORCH_MODULE(EncoderLayer);

// encoder.py Encoder: Linear + LayerNorm in place of an embedding.
class EncoderImpl : public torch::nn::Module {
 public:
  EncoderImpl()
      : linear_in_(register_module(
            "linear_in", torch::nn::Linear(kFbankDims * kLfrM, kModel))),
        layer_norm_in_(register_module("layer_norm_in", MakeLayerNorm())),
        positional_encoding_(
            register_module("positional_encoding", PositionalEncoding())),
        dropout_(register_module("dropout", torch::nn::Dropout(kDropout))) {
    for (int64_t i = 0; i < kLayers; ++i)
      layer_stack_->push_back(EncoderLayer());
    register_module("layer_stack", layer_stack_);
  }

  torch::Tensor forward(const torch::Tensor& padded_input,
                        const torch::Tensor& input_lengths) {
    torch::Tensor non_pad = NonPadMask(padded_input, input_lengths);
    const int64_t length = padded_input.size(1);
    torch::Tensor slf_mask = AttnPadMask(padded_input, input_lengths, length);
    torch::Tensor x = dropout_(layer_norm_in_(linear_in_(padded_input)) +
                               positional_encoding_(length));
    for (const auto& layer : *layer_stack_) {
      x = layer->as<EncoderLayer>()->forward(x, non_pad, slf_mask);
    }
    return x;
  }

 private:
  torch::nn::Linear linear_in_;
  torch::nn::LayerNorm layer_norm_in_;
  PositionalEncoding positional_encoding_;
  torch::nn::Dropout dropout_;
  torch::nn::ModuleList layer_stack_;
};
TORCH_MODULE(Encoder);

// decoder.py DecoderLayer.
class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl()
      : slf_attn_(register_module("slf_attn", MultiHeadAttention())),
        enc_attn_(register_module("enc_attn", MultiHeadAttention())),
        pos_ffn_(register_module("pos_ffn", PositionwiseFeedForward())) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& enc,
                        const torch::Tensor& non_pad,
                        const torch::Tensor& slf_mask,
                        const torch::Tensor& enc_mask) {
    torch::Tensor out = slf_attn_(x, x, x, slf_mask);
    out *= non_pad;
    out = enc_attn_(out, enc, enc, enc_mask);
    out *= non_pad;
    out = pos_ffn_(out);
    out *= non_pad;
    return out;
  }

 private:
  MultiHeadAttention slf_attn_, enc_attn_;
  PositionwiseFeedForward pos_ffn_;
};
TORCH_MODULE(DecoderLayer);

// One beam-search hypothesis: its score, a 0-dim tensor on the decoder's
// device as the reference's sums of topk scores are (undefined for the
// start, whose score is the Python float 0.0), and its tokens, (1, length).
struct Hypothesis {
  torch::Tensor score;
  torch::Tensor yseq;
};

// sorted(hyps, key=lambda h: h['score'], reverse=True) as CPython 3.11 runs
// it on fewer than 64 items: reverse, one natural run (count_run), binary
// insertion of the rest (binarysort), reverse. Each key comparison is
// Tensor.__lt__ and its bool(): a device kernel and a host sync, as in the
// reference. The result is the stable descending order. From 64 items on
// (only the ended list could get there) timsort merges runs; a stable sort
// with the same device comparisons stands in, in its own comparison count.
inline void SortByScoreDescending(std::vector<Hypothesis>& hyps) {
  const size_t n = hyps.size();
  if (n < 2) return;
  auto less = [](const Hypothesis& a, const Hypothesis& b) {
    return torch::lt(a.score, b.score).item<bool>();
  };
  if (n >= 64) {
    std::stable_sort(
        hyps.begin(), hyps.end(),
        [&](const Hypothesis& a, const Hypothesis& b) { return less(b, a); });
    return;
  }
  std::reverse(hyps.begin(), hyps.end());
  size_t run = 2;
  if (less(hyps[1], hyps[0])) {
    while (run < n && less(hyps[run], hyps[run - 1])) ++run;
    std::reverse(hyps.begin(), hyps.begin() + static_cast<ptrdiff_t>(run));
  } else {
    while (run < n && !less(hyps[run], hyps[run - 1])) ++run;
  }
  for (size_t start = run; start < n; ++start) {
    Hypothesis pivot = std::move(hyps[start]);
    size_t l = 0;
    size_t r = start;
    do {
      const size_t p = l + ((r - l) >> 1);
      if (less(pivot, hyps[p])) {
        r = p;
      } else {
        l = p + 1;
      }
    } while (l < r);
    for (size_t p = start; p > l; --p) hyps[p] = std::move(hyps[p - 1]);
    hyps[l] = std::move(pivot);
  }
  std::reverse(hyps.begin(), hyps.end());
}

// `host_row`.type_as(encoder_outputs).long(), as the beam search makes its
// token rows from torch.ones(...) on the host: copied to `like`'s device in
// its dtype, then converted there.
inline torch::Tensor TokenRow(const torch::Tensor& host_row,
                              const torch::Tensor& like) {
  return host_row.to(like.device(), like.scalar_type()).to(torch::kLong);
}

// decoder.py Decoder with tgt_emb_prj_weight_sharing 1: tgt_word_prj's
// weight is tgt_word_emb's, so the projection is a bias-free linear with the
// embedding matrix (Python's parameters() lists the tied matrix once, which
// is how it is registered here), and the embedding is scaled by sqrt(512).
class DecoderImpl : public torch::nn::Module {
 public:
  DecoderImpl()
      : tgt_word_emb_(register_module("tgt_word_emb",
                                      torch::nn::Embedding(kVocab, kModel))),
        positional_encoding_(
            register_module("positional_encoding", PositionalEncoding())),
        dropout_(register_module("dropout", torch::nn::Dropout(kDropout))) {
    for (int64_t i = 0; i < kLayers; ++i)
      layer_stack_->push_back(DecoderLayer());
    register_module("layer_stack", layer_stack_);
    torch::NoGradGuard no_grad;
    torch::nn::init::xavier_normal_(tgt_word_emb_->weight);
  }

  // Returns (pred, gold): logits (N, To, vocab) and the targets with <eos>
  // appended, IGNORE_ID-padded.
  std::pair<torch::Tensor, torch::Tensor> forward(
      const torch::Tensor& padded_target, const torch::Tensor& enc,
      const torch::Tensor& input_lengths) {
    auto [ys_in, ys_out] = Preprocess(padded_target);
    torch::Tensor non_pad = ys_in.ne(kEosId).to(torch::kFloat).unsqueeze(-1);
    const int64_t length = ys_in.size(1);
    torch::Tensor key_pad =
        ys_in.eq(kEosId).unsqueeze(1).expand({-1, length, -1});
    torch::Tensor slf_mask =
        (key_pad.to(torch::kByte) + SubsequentMask(ys_in).to(torch::kByte))
            .gt(0);
    torch::Tensor enc_mask = AttnPadMask(enc, input_lengths, length);
    torch::Tensor x = Embed(ys_in);
    for (const auto& layer : *layer_stack_) {
      x = layer->as<DecoderLayer>()->forward(x, enc, non_pad, slf_mask,
                                             enc_mask);
    }
    return {Project(x), ys_out};
  }

  // recognize_beam: beam search over one utterance's encoder output (T, H),
  // re-running the whole prefix of every hypothesis at every step, as the
  // reference does (no cache).
  Hypothesis RecognizeBeam(const torch::Tensor& encoder_outputs,
                           int64_t max_len) {
    torch::Tensor enc = encoder_outputs.unsqueeze(0);
    std::vector<Hypothesis> hyps = {
        {torch::Tensor(), TokenRow(torch::ones({1, 1}).fill_(kSosId), enc)}};
    std::vector<Hypothesis> ended;
    for (int64_t i = 0; i < max_len; ++i) {
      std::vector<Hypothesis> kept;
      for (const Hypothesis& hyp : hyps) {
        const torch::Tensor& ys = hyp.yseq;
        const int64_t len = ys.size(1);
        torch::Tensor non_pad =
            torch::ones_like(ys).to(torch::kFloat).unsqueeze(-1);
        torch::Tensor slf_mask = SubsequentMask(ys);
        torch::Tensor x = Embed(ys);
        for (const auto& layer : *layer_stack_) {
          x = layer->as<DecoderLayer>()->forward(x, enc, non_pad, slf_mask,
                                                 torch::Tensor());
        }
        torch::Tensor logits = Project(x.index({torch::indexing::Slice(), -1}));
        auto [best_scores, best_ids] =
            torch::topk(torch::log_softmax(logits, 1), kBeamSize, 1);
        for (int64_t j = 0; j < kBeamSize; ++j) {
          Hypothesis next;
          // hyp['score'] + local_best_scores[0, j]: a device add (the
          // start's 0.0 + tensor is tensor.__radd__(0.0)).
          const torch::Tensor score = best_scores[0][j];
          next.score = hyp.score.defined() ? hyp.score + score : score + 0.0;
          next.yseq = TokenRow(torch::ones({1, 1 + len}), enc);
          next.yseq.slice(1, 0, len).copy_(ys);
          // int(local_best_ids[0, j]): a host read per candidate.
          next.yseq.select(1, len).fill_(best_ids[0][j].item<int64_t>());
          kept.push_back(std::move(next));
        }
        SortByScoreDescending(kept);
        if (static_cast<int64_t>(kept.size()) > kBeamSize) {
          kept.resize(kBeamSize);
        }
      }
      hyps = std::move(kept);
      if (i == max_len - 1) {
        for (Hypothesis& hyp : hyps) {
          hyp.yseq = torch::cat(
              {hyp.yseq, TokenRow(torch::ones({1, 1}).fill_(kEosId), enc)}, 1);
        }
      }
      std::vector<Hypothesis> remained;
      for (Hypothesis& hyp : hyps) {
        // hyp['yseq'][0, -1] == eos_id, read by the if.
        const bool is_ended = hyp.yseq[0][-1].eq(kEosId).item<bool>();
        (is_ended ? ended : remained).push_back(std::move(hyp));
      }
      hyps = std::move(remained);
      if (hyps.empty()) break;
    }
    SortByScoreDescending(ended);  // nbest 1
    Hypothesis best = std::move(ended.front());
    // hyp['yseq'][0].cpu().numpy().tolist().
    best.yseq = best.yseq.cpu();
    return best;
  }

 private:
  // Decoder.preprocess: <sos> + y as input (padded with <eos>), y + <eos> as
  // gold (padded with IGNORE_ID). As the reference: each target row's
  // y[y != IGNORE_ID] (a boolean index, one host sync a row), <sos> and
  // <eos> made on the host and copied over (ys[0].new([id])), one cat per
  // row and side, and pad_list's row copies.
  static std::pair<torch::Tensor, torch::Tensor> Preprocess(
      const torch::Tensor& padded_target) {
    std::vector<torch::Tensor> ys;
    for (const torch::Tensor& y : padded_target.unbind(0)) {
      ys.push_back(y.index({y.ne(kIgnoreId)}));
    }
    const torch::Tensor eos = torch::tensor({kEosId}, ys[0].options());
    const torch::Tensor sos = torch::tensor({kSosId}, ys[0].options());
    std::vector<torch::Tensor> ys_in, ys_out;
    for (const torch::Tensor& y : ys) ys_in.push_back(torch::cat({sos, y}, 0));
    for (const torch::Tensor& y : ys) ys_out.push_back(torch::cat({y, eos}, 0));
    return {PadList(ys_in, kEosId), PadList(ys_out, kIgnoreId)};
  }

  // utils.py pad_list for 1-D rows.
  static torch::Tensor PadList(const std::vector<torch::Tensor>& xs,
                               int64_t pad_value) {
    int64_t max_len = 0;
    for (const torch::Tensor& x : xs) max_len = std::max(max_len, x.size(0));
    torch::Tensor pad = torch::empty({static_cast<int64_t>(xs.size()), max_len},
                                     xs[0].options())
                            .fill_(pad_value);
    for (size_t i = 0; i < xs.size(); ++i) {
      pad[static_cast<int64_t>(i)].slice(0, 0, xs[i].size(0)).copy_(xs[i]);
    }
    return pad;
  }

  torch::Tensor Embed(const torch::Tensor& ys) {
    return dropout_(tgt_word_emb_(ys) * kLogitScale +
                    positional_encoding_(ys.size(1)));
  }

  torch::Tensor Project(const torch::Tensor& x) {
    return torch::nn::functional::linear(x, tgt_word_emb_->weight);
  }

  static constexpr double kLogitScale = 22.627416997969522;  // 512 ** 0.5
  torch::nn::Embedding tgt_word_emb_;
  PositionalEncoding positional_encoding_;
  torch::nn::Dropout dropout_;
  torch::nn::ModuleList layer_stack_;
};
TORCH_MODULE(Decoder);

// transformer.py Transformer.
class TransformerImpl : public torch::nn::Module {
 public:
  TransformerImpl()
      : encoder_(register_module("encoder", Encoder())),
        decoder_(register_module("decoder", Decoder())) {
    torch::NoGradGuard no_grad;
    for (auto& p : parameters()) {
      if (p.dim() > 1) torch::nn::init::xavier_uniform_(p);
    }
  }

  std::pair<torch::Tensor, torch::Tensor> forward(
      const torch::Tensor& padded_input, const torch::Tensor& input_lengths,
      const torch::Tensor& padded_target) {
    torch::Tensor enc = encoder_(padded_input, input_lengths);
    return decoder_(padded_target, enc, input_lengths);
  }

  // recognize(): one utterance (T, D) and its length (1).
  Hypothesis Recognize(const torch::Tensor& input,
                       const torch::Tensor& input_length, int64_t max_len) {
    torch::Tensor enc = encoder_(input.unsqueeze(0), input_length);
    return decoder_->RecognizeBeam(enc[0], max_len);
  }

  Decoder& decoder() { return decoder_; }

 private:
  Encoder encoder_;
  Decoder decoder_;
};
TORCH_MODULE(Transformer);

}  // namespace torchbench::speech_transformer

#endif  // TORCHBENCH_MODELS_SPEECH_SPEECH_TRANSFORMER_NETWORK_H_
