// TorchBench's tacotron2: its own copy of NVIDIA/tacotron2
// (torchbenchmark/models/tacotron2/{model,layers,loss_function}.py at
// 43ca0857) with the hyper-parameters of its __init__.py create_hparams()
// (NVIDIA's hparams.py): 148 symbols embedded in 512, an encoder of three
// 5-wide conv+BN layers and a 2 x 256 BiLSTM over the packed text, a decoder
// of a 2 x 256 prenet, a 1024 attention LSTMCell, location-sensitive
// attention (128 wide, 32 location filters of width 31), a 1024 decoder
// LSTMCell, mel (80) and gate projections, and a five-layer 512-wide postnet.
//
// Train is the reference's train(): model.train(), model.zero_grad(),
// teacher-forced forward, Tacotron2Loss (MSE mel + MSE postnet mel +
// BCE-with-logits gate), backward, Adam(lr 1e-3, weight_decay 1e-6 -- L2
// added to the gradient, as torch.optim.Adam). TorchBench's train() has no
// gradient clipping (hparams' grad_clip_thresh 1.0 is read only by NVIDIA's
// own training loop) and no scheduler. Eval is its eval(): model.eval() and
// the same teacher-forced forward (not inference()), returning mel, postnet
// mel, gate energies and alignments; Step() returns the postnet mel.
//
// Device: TorchBench's __init__ raises NotImplementedError on CPU only
// because NVIDIA's load_model() calls .cuda(); nothing in the network needs
// CUDA, so it is registered for CPU too and runs there. (Its metadata.yaml
// at 43ca0857 also lists CUDA as not_implemented, so TorchBench's own test
// runner skips the model everywhere.) Its DEFAULT_EVAL_CUDA_PRECISION is
// "amp"; this port runs the harness's fp32 (or tf32) on every device.
//
// Data: the reference reads a batch of the LJSpeech filelist
// (tacotron2-minimal) through TextMelLoader/TextMelCollate; that data is not
// available here, so each utterance is synthetic, made with torch's RNG
// under the harness seed, with figures from LJSpeech 1.1's README
// (13,100 clips, 1,308,674 characters, 23:55:17 in total; clips of
// 1.11-10.10 s, mean 6.57 s):
// - duration uniform in [3.04, 10.10] s (the README's mean and maximum);
// - mel frames = floor(duration * 22050) / 256 + 1 (sampling rate and hop
//   of the hparams; STFT frames of the reflect-padded signal, stft.py);
// - text length = round(duration * 15.2) characters (1,308,674 characters
//   over 86,117 s);
// - token ids uniform over the 37 symbols english_cleaners output can map
//   to (text/symbols.py: '-' = 1, punctuation and space = 2..11, a-z =
//   38..63; it lower-cases, so no capitals or ARPAbet);
// - mel values normal with mean -5.5 and std 2.2, floored at log(1e-5)
//   (dynamic_range_compression's clamp). These two are not measured from the
//   data set (which is not here); they are a typical log-mel range.
// The batch is then collated as TextMelCollate does: sorted by text length,
// zero-padded, gate 1 from each utterance's last frame on.
//
// Randomness: the prenet's dropout is always on (F.dropout(training=True),
// also in eval) and the others follow train/eval, as in the reference. The
// golden check turns every dropout off on both sides (tools/golden/
// adapters/tacotron2.py).
#include <torch/nn/functional/loss.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "speech/tacotron2_net.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace tacotron2_model {
namespace {

namespace F = torch::nn::functional;
using tacotron2::MaskFromLengths;
using tacotron2::Tacotron2Config;
using tacotron2::Tacotron2Net;
using tacotron2::Tacotron2Outputs;
using tacotron2::TextMelBatch;

// Tacotron2Loss.
torch::Tensor Tacotron2Loss(const Tacotron2Outputs& out,
                            const TextMelBatch& batch) {
  torch::Tensor mel_loss = F::mse_loss(out.mel, batch.mels) +
                           F::mse_loss(out.mel_postnet, batch.mels);
  torch::Tensor gate_loss = F::binary_cross_entropy_with_logits(
      out.gate.reshape({-1, 1}), batch.gates.reshape({-1, 1}));
  return mel_loss + gate_loss;
}

// TextMelCollate(n_frames_per_step=1) over (text ids, mel (80, T)) pairs.
TextMelBatch Collate(const std::vector<torch::Tensor>& texts,
                     const std::vector<torch::Tensor>& mels) {
  const int64_t batch = static_cast<int64_t>(texts.size());
  std::vector<int64_t> text_lengths_vector;
  for (const auto& t : texts) text_lengths_vector.push_back(t.size(0));
  auto [text_lengths, order] =
      torch::tensor(text_lengths_vector).sort(0, /*descending=*/true);
  int64_t max_frames = 0;
  for (const auto& m : mels) max_frames = std::max(max_frames, m.size(1));
  TextMelBatch out;
  out.text_lengths = text_lengths;
  out.text =
      torch::zeros({batch, text_lengths[0].item<int64_t>()}, torch::kLong);
  out.mels = torch::zeros({batch, mels[0].size(0), max_frames});
  out.gates = torch::zeros({batch, max_frames});
  out.output_lengths = torch::zeros({batch}, torch::kLong);
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t source = order[i].item<int64_t>();
    const int64_t frames = mels[source].size(1);
    out.text[i].slice(0, 0, texts[source].size(0)).copy_(texts[source]);
    out.mels[i].slice(1, 0, frames).copy_(mels[source]);
    out.gates[i].slice(0, frames - 1).fill_(1);
    out.output_lengths[i] = frames;
  }
  return out;
}

// One LJSpeech-shaped batch; the figures and their sources are at the top.
// `time_scale` shortens every clip (1 for the reference's data; the CPU
// tests' ModelConfig::small_inputs use a tenth: the same draws, ten times
// fewer characters and frames).
TextMelBatch SyntheticBatch(int64_t batch, int64_t n_mel_channels,
                            double time_scale) {
  const std::vector<int64_t> symbol_ids = [] {
    std::vector<int64_t> ids;
    for (int64_t id = 1; id <= 11; ++id) ids.push_back(id);
    for (int64_t id = 38; id <= 63; ++id) ids.push_back(id);
    return ids;
  }();
  const torch::Tensor id_table = torch::tensor(symbol_ids);
  std::vector<torch::Tensor> texts, mels;
  torch::Tensor durations =
      3.04 + (10.10 - 3.04) * torch::rand({batch}, torch::kDouble);
  for (int64_t i = 0; i < batch; ++i) {
    const double seconds = durations[i].item<double>() * time_scale;
    const int64_t frames = static_cast<int64_t>(seconds * 22050) / 256 + 1;
    const int64_t characters = std::llround(seconds * 15.2);
    texts.push_back(id_table.index_select(
        0, torch::randint(static_cast<int64_t>(symbol_ids.size()), {characters},
                          torch::kLong)));
    mels.push_back((torch::randn({n_mel_channels, frames}) * 2.2 - 5.5)
                       .clamp_min(std::log(1e-5)));
  }
  return Collate(texts, mels);
}

TextMelBatch BatchTo(const TextMelBatch& b, torch::Device device) {
  return {b.text.to(device), b.text_lengths.to(device), b.mels.to(device),
          b.gates.to(device), b.output_lengths.to(device)};
}

class Tacotron2 final : public Model, public GoldenCheck {
 public:
  explicit Tacotron2(const ModelConfig& config)
      : mode_(config.mode), device_(config.device) {
    net_->to(device_);
    batch_ = BatchTo(SyntheticBatch(config.batch_size, kMelChannels,
                                    config.small_inputs ? 0.1 : 1.0),
                     device_);
    batch_.mels = batch_.mels.to(config.dtype());
    batch_.gates = batch_.gates.to(config.dtype());
    optimizer_ = std::make_unique<optim::Adam>(
        net_->parameters(),
        optim::AdamOptions{.lr = 1e-3, .weight_decay = 1e-6}, config.optimizer);
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) {
      net_->eval();
      return net_->forward(batch_).mel_postnet;
    }
    return TrainStep();
  }

  // The reference's eval() and two train() calls with every dropout off,
  // on the two filled utterances tools/golden/adapters/tacotron2.py makes.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    net_->dropout_enabled = false;
    std::vector<torch::Tensor> texts, mels;
    const std::vector<std::pair<int64_t, int64_t>> lengths = {{8, 14},
                                                              {11, 10}};
    for (size_t i = 0; i < lengths.size(); ++i) {
      const std::string index = std::to_string(i);
      texts.push_back(
          DeterministicIntegers("text" + index, {lengths[i].first}, 1, 148));
      mels.push_back(DeterministicTensor("mel" + index,
                                         {kMelChannels, lengths[i].second},
                                         torch::kFloat, -5.5, 2.0));
    }
    batch_ = BatchTo(Collate(texts, mels), device_);
    std::map<std::string, torch::Tensor> out = recorder_.Capture([&] {
      {
        torch::NoGradGuard no_grad;
        net_->eval();
        RecordOutputs(net_->forward(batch_), "eval_");
      }
      TrainStep();
    });
    TrainStep();  // Not recorded: only its parameters after it are.
    RecordEdgeParameters(*net_, "after_2_steps:", /*gradients=*/false, &out);
    return out;
  }

  torch::nn::Module& module() override { return *net_; }

 private:
  static constexpr int64_t kMelChannels = 80;

  void RecordOutputs(const Tacotron2Outputs& o, const std::string& prefix) {
    recorder_.Record(prefix + "mel", o.mel.detach().clone());
    recorder_.Record(prefix + "mel_postnet", o.mel_postnet.detach().clone());
    recorder_.Record(prefix + "gate", o.gate.detach().clone());
    recorder_.Record(prefix + "alignments", o.alignments.detach().clone());
    // The gate without the 1e3 of padded positions, which would swamp its
    // summary.
    recorder_.Record(prefix + "gate_frames",
                     o.gate.detach().masked_fill(
                         ~MaskFromLengths(batch_.output_lengths), 0.0));
  }

  // Model.train(); a golden check records the outputs, the loss, the edge
  // gradients and a few inner ones before the optimizer step.
  torch::Tensor TrainStep() {
    net_->train();
    net_->zero_grad();
    Tacotron2Outputs outputs = net_->forward(batch_);
    torch::Tensor loss = Tacotron2Loss(outputs, batch_);
    Backward(loss);
    if (recorder_.recording()) {
      RecordOutputs(outputs, "output_");
      recorder_.Record("loss", loss.detach().clone());
      std::map<std::string, torch::Tensor> grads;
      RecordEdgeParameters(*net_, "grad:", /*gradients=*/true, &grads);
      for (const auto& [key, grad] : grads) recorder_.Record(key, grad);
      const auto params = net_->named_parameters();
      for (const char* name : kInnerGradients) {
        recorder_.Record(std::string("grad:") + name,
                         params[name].grad().clone());
      }
    }
    optimizer_->Step();
    return loss.detach();
  }

  // Gradients the golden file also records: the encoder BiLSTM's reverse
  // direction, the location conv, both decoder cells and the postnet conv
  // whose saved input parse_output zeroes.
  static constexpr const char* kInnerGradients[] = {
      "encoder.lstm.weight_ih_l0_reverse",
      "decoder.attention_layer.location_layer.location_conv.conv.weight",
      "decoder.attention_rnn.weight_hh",
      "decoder.decoder_rnn.weight_ih",
      "postnet.convolutions.0.0.conv.weight",
  };

  Mode mode_;
  torch::Device device_;
  Tacotron2Net net_;
  TextMelBatch batch_;
  std::unique_ptr<optim::Adam> optimizer_;
  GoldenRecorder recorder_;
};

}  // namespace

// Counts: Tacotron2(create_hparams()) from the reference's model.py at
// 43ca0857, built on CPU with pinned torch and counted in Python
// (sum(p.numel() for p in m.parameters()), the same over m.buffers(): the
// eight BatchNorm1d layers' running stats and num_batches_tracked).
// The smoke test runs it: on an idle 2-core machine one step at batch 1
// takes 8.8 s (Train) and 2.1 s (Eval).
TORCHBENCH_REGISTER_MODEL(
    ModelSpec({.name = "tacotron2",
               .domain = "speech",
               .task = "speech synthesis",
               .reference = "TorchBench tacotron2 (NVIDIA Tacotron 2)",
               .train_batch_size = 64,  // DEFAULT_TRAIN_BSIZE
               .eval_batch_size = 64,   // DEFAULT_EVAL_BSIZE
               .reference_parameters = 28193153,
               .reference_buffers = 7336,
               // DEFAULT_EVAL_CUDA_PRECISION = "amp": autocast to fp16 on CUDA.
               .default_cuda_eval_precision = Precision::kAmpFp16,
               .checks = {.golden_file = "tacotron2.golden",
                          .test_batch_size = 1}}),
    MakeModel<Tacotron2>());

}  // namespace tacotron2_model
}  // namespace torchbench
