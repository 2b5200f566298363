// The network of TorchBench's tacotron2 (its model.py and layers.py at
// 43ca0857), with state_dict names as in Python; the model, its data and
// its train step are in tacotron2.cpp, which says what the port covers.
#ifndef TORCHBENCH_MODELS_SPEECH_TACOTRON2_NET_H_
#define TORCHBENCH_MODELS_SPEECH_TACOTRON2_NET_H_

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/dropout.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>
#include <torch/nn/pimpl.h>
#include <torch/nn/utils/rnn.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

namespace torchbench::tacotron2 {

namespace F = torch::nn::functional;

// create_hparams() in the reference's __init__.py (model parameters only).
struct Tacotron2Config {
  int64_t n_symbols = 148;  // len(text.symbols)
  int64_t symbols_embedding_dim = 512;
  int64_t encoder_kernel_size = 5;
  int64_t encoder_n_convolutions = 3;
  int64_t encoder_embedding_dim = 512;
  int64_t n_mel_channels = 80;
  int64_t decoder_rnn_dim = 1024;
  int64_t prenet_dim = 256;
  double p_attention_dropout = 0.1;
  double p_decoder_dropout = 0.1;
  int64_t attention_rnn_dim = 1024;
  int64_t attention_dim = 128;
  int64_t attention_location_n_filters = 32;
  int64_t attention_location_kernel_size = 31;
  int64_t postnet_embedding_dim = 512;
  int64_t postnet_kernel_size = 5;
  int64_t postnet_n_convolutions = 5;
};

inline torch::Tensor Dropout(const torch::Tensor& x, double p, bool training) {
  return F::dropout(x, F::DropoutFuncOptions().p(p).training(training));
}

// get_mask_from_lengths: true where a position is inside its sequence.
inline torch::Tensor MaskFromLengths(const torch::Tensor& lengths) {
  const int64_t max_len = lengths.max().item<int64_t>();
  torch::Tensor ids = torch::arange(max_len, lengths.options());
  return ids.unsqueeze(0) < lengths.unsqueeze(1);
}

// Xavier-uniform with the gain of the layer's nonlinearity, as LinearNorm
// and ConvNorm initialise; biases keep PyTorch's default.
class LinearNormImpl : public torch::nn::Module {
 public:
  LinearNormImpl(int64_t in, int64_t out, bool bias = true,
                 torch::nn::init::NonlinearityType gain = torch::kLinear) {
    linear_layer = register_module(
        "linear_layer",
        torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias)));
    torch::nn::init::xavier_uniform_(linear_layer->weight,
                                     torch::nn::init::calculate_gain(gain));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return linear_layer->forward(x);
  }
  torch::nn::Linear linear_layer{nullptr};
};
TORCH_MODULE(LinearNorm);

class ConvNormImpl : public torch::nn::Module {
 public:
  ConvNormImpl(int64_t in, int64_t out, int64_t kernel_size, bool bias,
               torch::nn::init::NonlinearityType gain) {
    conv_ = register_module(
        "conv", torch::nn::Conv1d(torch::nn::Conv1dOptions(in, out, kernel_size)
                                      .padding((kernel_size - 1) / 2)
                                      .bias(bias)));
    torch::nn::init::xavier_uniform_(conv_->weight,
                                     torch::nn::init::calculate_gain(gain));
  }
  torch::Tensor forward(const torch::Tensor& x) { return conv_->forward(x); }

 private:
  torch::nn::Conv1d conv_{nullptr};
};
TORCH_MODULE(ConvNorm);

// ConvNorm then BatchNorm1d, the block both encoder and postnet stack.
inline torch::nn::Sequential ConvBatchNorm(
    int64_t in, int64_t out, int64_t kernel,
    torch::nn::init::NonlinearityType gain) {
  return torch::nn::Sequential(ConvNorm(in, out, kernel, /*bias=*/true, gain),
                               torch::nn::BatchNorm1d(out));
}

class LocationLayerImpl : public torch::nn::Module {
 public:
  explicit LocationLayerImpl(const Tacotron2Config& c) {
    location_conv_ = register_module("location_conv",
                                     ConvNorm(2, c.attention_location_n_filters,
                                              c.attention_location_kernel_size,
                                              /*bias=*/false, torch::kLinear));
    location_dense_ = register_module(
        "location_dense",
        LinearNorm(c.attention_location_n_filters, c.attention_dim,
                   /*bias=*/false, torch::kTanh));
  }
  torch::Tensor forward(const torch::Tensor& attention_weights_cat) {
    return location_dense_->forward(
        location_conv_->forward(attention_weights_cat).transpose(1, 2));
  }

 private:
  ConvNorm location_conv_{nullptr};
  LinearNorm location_dense_{nullptr};
};
TORCH_MODULE(LocationLayer);

class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const Tacotron2Config& c) {
    query_layer_ = register_module(
        "query_layer", LinearNorm(c.attention_rnn_dim, c.attention_dim,
                                  /*bias=*/false, torch::kTanh));
    memory_layer = register_module(
        "memory_layer", LinearNorm(c.encoder_embedding_dim, c.attention_dim,
                                   /*bias=*/false, torch::kTanh));
    v_ = register_module("v", LinearNorm(c.attention_dim, 1, /*bias=*/false));
    location_layer_ = register_module("location_layer", LocationLayer(c));
  }

  // Returns (attention_context, attention_weights). Padded text positions
  // get -inf energy, so zero weight and zero gradient (the reference fills
  // through .data; the values and gradients are the same).
  std::pair<torch::Tensor, torch::Tensor> forward(
      const torch::Tensor& query, const torch::Tensor& memory,
      const torch::Tensor& processed_memory,
      const torch::Tensor& attention_weights_cat, const torch::Tensor& mask) {
    torch::Tensor energies =
        v_->forward(
              torch::tanh(query_layer_->forward(query.unsqueeze(1)) +
                          location_layer_->forward(attention_weights_cat) +
                          processed_memory))
            .squeeze(-1);
    energies =
        energies.masked_fill(mask, -std::numeric_limits<double>::infinity());
    torch::Tensor weights = torch::softmax(energies, 1);
    torch::Tensor context = torch::bmm(weights.unsqueeze(1), memory).squeeze(1);
    return {context, weights};
  }

  LinearNorm memory_layer{nullptr};

 private:
  LinearNorm query_layer_{nullptr};
  LinearNorm v_{nullptr};
  LocationLayer location_layer_{nullptr};
};
TORCH_MODULE(Attention);

class EncoderImpl : public torch::nn::Module {
 public:
  explicit EncoderImpl(const Tacotron2Config& c) {
    for (int64_t i = 0; i < c.encoder_n_convolutions; ++i) {
      convolutions_->push_back(
          ConvBatchNorm(c.encoder_embedding_dim, c.encoder_embedding_dim,
                        c.encoder_kernel_size, torch::kReLU));
    }
    register_module("convolutions", convolutions_);
    lstm_ = register_module(
        "lstm",
        torch::nn::LSTM(torch::nn::LSTMOptions(c.encoder_embedding_dim,
                                               c.encoder_embedding_dim / 2)
                            .batch_first(true)
                            .bidirectional(true)));
  }

  // x: (B, 512, L) embedded text; text_lengths sorted in decreasing order
  // (TextMelCollate sorts), as pack_padded_sequence requires.
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& text_lengths,
                        bool dropout) {
    for (const auto& conv : *convolutions_) {
      x = Dropout(torch::relu(conv->as<torch::nn::Sequential>()->forward(x)),
                  0.5, dropout);
    }
    namespace rnn = torch::nn::utils::rnn;
    rnn::PackedSequence packed = rnn::pack_padded_sequence(
        x.transpose(1, 2), text_lengths.cpu(), /*batch_first=*/true);
    auto outputs = std::get<0>(lstm_->forward_with_packed_input(packed));
    return std::get<0>(rnn::pad_packed_sequence(outputs, /*batch_first=*/true));
  }

 private:
  torch::nn::ModuleList convolutions_;
  torch::nn::LSTM lstm_{nullptr};
};
TORCH_MODULE(Encoder);

class PrenetImpl : public torch::nn::Module {
 public:
  PrenetImpl(int64_t in_dim, int64_t dim) {
    layers_->push_back(LinearNorm(in_dim, dim, /*bias=*/false));
    layers_->push_back(LinearNorm(dim, dim, /*bias=*/false));
    register_module("layers", layers_);
  }
  // `dropout` is true in the reference whatever the module's mode.
  torch::Tensor forward(torch::Tensor x, bool dropout) {
    for (const auto& linear : *layers_) {
      x = Dropout(torch::relu(linear->as<LinearNorm>()->forward(x)), 0.5,
                  dropout);
    }
    return x;
  }

 private:
  torch::nn::ModuleList layers_;
};
TORCH_MODULE(Prenet);

// What Decoder.forward returns, batch first: mel (B, 80, T), gate (B, T),
// alignments (B, T, L).
struct DecoderOutputs {
  torch::Tensor mel;
  torch::Tensor gate;
  torch::Tensor alignments;
};

class DecoderImpl : public torch::nn::Module {
 public:
  explicit DecoderImpl(const Tacotron2Config& c) : c_(c) {
    prenet_ = register_module("prenet", Prenet(c.n_mel_channels, c.prenet_dim));
    attention_rnn_ = register_module(
        "attention_rnn",
        torch::nn::LSTMCell(c.prenet_dim + c.encoder_embedding_dim,
                            c.attention_rnn_dim));
    attention_layer_ = register_module("attention_layer", Attention(c));
    decoder_rnn_ = register_module(
        "decoder_rnn",
        torch::nn::LSTMCell(c.attention_rnn_dim + c.encoder_embedding_dim,
                            c.decoder_rnn_dim));
    linear_projection_ =
        register_module("linear_projection",
                        LinearNorm(c.decoder_rnn_dim + c.encoder_embedding_dim,
                                   c.n_mel_channels));
    gate_layer_ = register_module(
        "gate_layer", LinearNorm(c.decoder_rnn_dim + c.encoder_embedding_dim, 1,
                                 /*bias=*/true, torch::kSigmoid));
  }

  // Teacher-forced decoding: frame t is predicted from the prenet of mel
  // frame t - 1 (a zero "go" frame first).
  DecoderOutputs forward(const torch::Tensor& memory, const torch::Tensor& mels,
                         const torch::Tensor& memory_lengths, bool dropout,
                         bool prenet_dropout) {
    const int64_t batch = memory.size(0);
    torch::Tensor frames = mels.permute({2, 0, 1});  // (T, B, 80)
    torch::Tensor go =
        torch::zeros({1, batch, c_.n_mel_channels}, memory.options());
    torch::Tensor decoder_inputs =
        prenet_->forward(torch::cat({go, frames}, 0), prenet_dropout);
    const torch::Tensor mask = ~MaskFromLengths(memory_lengths);

    // initialize_decoder_states.
    auto zeros = [&](int64_t width) {
      return torch::zeros({batch, width}, memory.options());
    };
    torch::Tensor attention_hidden = zeros(c_.attention_rnn_dim);
    torch::Tensor attention_cell = zeros(c_.attention_rnn_dim);
    torch::Tensor decoder_hidden = zeros(c_.decoder_rnn_dim);
    torch::Tensor decoder_cell = zeros(c_.decoder_rnn_dim);
    torch::Tensor attention_weights = zeros(memory.size(1));
    torch::Tensor attention_weights_cum = zeros(memory.size(1));
    torch::Tensor attention_context = zeros(c_.encoder_embedding_dim);
    const torch::Tensor processed_memory =
        attention_layer_->memory_layer->forward(memory);

    std::vector<torch::Tensor> mel_outputs, gate_outputs, alignments;
    for (int64_t t = 0; t < frames.size(0); ++t) {
      // decode().
      std::tie(attention_hidden, attention_cell) = attention_rnn_->forward(
          torch::cat({decoder_inputs[t], attention_context}, -1),
          std::make_tuple(attention_hidden, attention_cell));
      attention_hidden =
          Dropout(attention_hidden, c_.p_attention_dropout, dropout);
      torch::Tensor attention_weights_cat =
          torch::stack({attention_weights, attention_weights_cum}, 1);
      std::tie(attention_context, attention_weights) =
          attention_layer_->forward(attention_hidden, memory, processed_memory,
                                    attention_weights_cat, mask);
      attention_weights_cum = attention_weights_cum + attention_weights;
      std::tie(decoder_hidden, decoder_cell) = decoder_rnn_->forward(
          torch::cat({attention_hidden, attention_context}, -1),
          std::make_tuple(decoder_hidden, decoder_cell));
      decoder_hidden = Dropout(decoder_hidden, c_.p_decoder_dropout, dropout);
      torch::Tensor hidden_and_context =
          torch::cat({decoder_hidden, attention_context}, 1);
      mel_outputs.push_back(linear_projection_->forward(hidden_and_context));
      gate_outputs.push_back(
          gate_layer_->forward(hidden_and_context).squeeze(1));
      alignments.push_back(attention_weights);
    }
    // parse_decoder_outputs (n_frames_per_step is 1).
    return {torch::stack(mel_outputs).permute({1, 2, 0}),
            torch::stack(gate_outputs).transpose(0, 1).contiguous(),
            torch::stack(alignments).transpose(0, 1)};
  }

 private:
  Tacotron2Config c_;
  Prenet prenet_{nullptr};
  torch::nn::LSTMCell attention_rnn_{nullptr};
  Attention attention_layer_{nullptr};
  torch::nn::LSTMCell decoder_rnn_{nullptr};
  LinearNorm linear_projection_{nullptr};
  LinearNorm gate_layer_{nullptr};
};
TORCH_MODULE(Decoder);

class PostnetImpl : public torch::nn::Module {
 public:
  explicit PostnetImpl(const Tacotron2Config& c) {
    const int64_t n = c.postnet_n_convolutions;
    for (int64_t i = 0; i < n; ++i) {
      const bool last = i == n - 1;
      torch::nn::init::NonlinearityType gain = torch::kTanh;
      if (last) gain = torch::kLinear;
      convolutions_->push_back(
          ConvBatchNorm(i == 0 ? c.n_mel_channels : c.postnet_embedding_dim,
                        last ? c.n_mel_channels : c.postnet_embedding_dim,
                        c.postnet_kernel_size, gain));
    }
    register_module("convolutions", convolutions_);
  }

  torch::Tensor forward(torch::Tensor x, bool dropout) {
    const size_t n = convolutions_->size();
    for (size_t i = 0; i < n; ++i) {
      x = convolutions_[i]->as<torch::nn::Sequential>()->forward(x);
      x = Dropout(i + 1 < n ? torch::tanh(x) : x, 0.5, dropout);
    }
    return x;
  }

 private:
  torch::nn::ModuleList convolutions_;
};
TORCH_MODULE(Postnet);

// Tacotron2.forward's list: mel, postnet mel, gate energies, alignments.
struct Tacotron2Outputs {
  torch::Tensor mel;
  torch::Tensor mel_postnet;
  torch::Tensor gate;
  torch::Tensor alignments;
};

// Model.parse_batch's inputs and targets, from TextMelCollate.
struct TextMelBatch {
  torch::Tensor text;            // (B, L) int64, zero-padded
  torch::Tensor text_lengths;    // (B,) decreasing
  torch::Tensor mels;            // (B, 80, T) zero-padded
  torch::Tensor gates;           // (B, T)
  torch::Tensor output_lengths;  // (B,)
};

class Tacotron2NetImpl : public torch::nn::Module {
 public:
  explicit Tacotron2NetImpl(const Tacotron2Config& c = {}) : c_(c) {
    embedding_ = register_module(
        "embedding",
        torch::nn::Embedding(c.n_symbols, c.symbols_embedding_dim));
    const double std = std::sqrt(
        2.0 / static_cast<double>(c.n_symbols + c.symbols_embedding_dim));
    {
      torch::NoGradGuard no_grad;
      const double bound = std::sqrt(3.0) * std;
      embedding_->weight.uniform_(-bound, bound);
    }
    encoder_ = register_module("encoder", Encoder(c));
    decoder_ = register_module("decoder", Decoder(c));
    postnet_ = register_module("postnet", Postnet(c));
  }

  Tacotron2Outputs forward(const TextMelBatch& batch) {
    const bool dropout = is_training() && dropout_enabled;
    torch::Tensor embedded = embedding_->forward(batch.text).transpose(1, 2);
    torch::Tensor memory =
        encoder_->forward(embedded, batch.text_lengths, dropout);
    DecoderOutputs decoded =
        decoder_->forward(memory, batch.mels, batch.text_lengths, dropout,
                          /*prenet_dropout=*/dropout_enabled);
    torch::Tensor mel_postnet =
        decoded.mel + postnet_->forward(decoded.mel, dropout);
    Tacotron2Outputs out{decoded.mel, mel_postnet, decoded.gate,
                         decoded.alignments};
    // parse_output with mask_padding: padded frames are overwritten through
    // .data, invisibly to autograd, exactly as the reference does (so the
    // postnet's first conv, which saved `mel` for its weight gradient, sees
    // the zeroed frames in backward too).
    torch::Tensor padded = ~MaskFromLengths(batch.output_lengths);
    torch::Tensor mel_mask =
        padded.unsqueeze(1).expand({-1, c_.n_mel_channels, -1});
    out.mel.data().masked_fill_(mel_mask, 0.0);
    out.mel_postnet.data().masked_fill_(mel_mask, 0.0);
    out.gate.data().masked_fill_(padded, 1e3);
    return out;
  }

  // False only for the golden check: every dropout, the prenet's too.
  bool dropout_enabled = true;

 private:
  Tacotron2Config c_;
  torch::nn::Embedding embedding_{nullptr};
  Encoder encoder_{nullptr};
  Decoder decoder_{nullptr};
  Postnet postnet_{nullptr};
};
TORCH_MODULE(Tacotron2Net);

}  // namespace torchbench::tacotron2

#endif  // TORCHBENCH_MODELS_SPEECH_TACOTRON2_NET_H_
