// TorchBench's doctr_reco_predictor
// (torchbenchmark/models/doctr_reco_predictor at 43ca0857): python-doctr's
// CRNN text recogniser, crnn_vgg16_bn, as ocr_predictor(det_arch=
// 'db_resnet50', reco_arch='crnn_vgg16_bn', pretrained=True)
// .reco_predictor.model builds it (doctr pinned at acb9f64, whose models are
// python-doctr 0.6.0's: doctr/models/recognition/crnn/pytorch.py,
// classification/vgg/pytorch.py).
//
// The network: torchvision's vgg16_bn features with doctr's vgg16_bn_r
// change (its last three max pools are MaxPool2d((2, 1)), so a 32x128 crop
// becomes a 512 x 1 x 32 map), read as 32 steps of 512 features by a
// 2-layer bidirectional LSTM (128 units) and a Linear to the 123 characters
// of VOCABS["legacy_french"] plus the CTC blank.
//
// Eval only (train() raises NotImplementedError). One Eval call is eval():
// model(x, return_model_output=True) under inference_mode, which returns the
// logits; with no target doctr's forward also runs its CTCPostProcessor, so
// the timed call includes it: best-path decoding (argmax per step, repeats
// collapsed, blanks dropped, indices mapped to the vocabulary) and each
// word's confidence, the smallest of its steps' largest softmax
// probability. The words are kept (preds_), as doctr's out["preds"].
//
// Input: the reference reads no dataset; its example_inputs are randn(B, 3,
// 32, 128), drawn after the network is built, as here (its
// ocr_predictor also builds the DBNet detector, which this model
// never uses: doctr_det_predictor is that one).
//
// TorchBench's metadata.yaml lists the CPU under not_implemented, which only
// makes its test.py skip the CPU; the model code runs there, as this does.
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/vgg_features.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace doctr_reco_predictor_model {
namespace {

constexpr int64_t kHeight = 32;  // default_cfgs["crnn_vgg16_bn"]
constexpr int64_t kWidth = 128;
constexpr int64_t kRnnUnits = 128;
// VOCABS["legacy_french"]: latin (digits, ASCII letters, punctuation), "°",
// 24 accented letters and the currency signs.
constexpr std::u32string_view kVocab =
    U"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!\"#$%&'()*"
    U"+,-./:;<=>?@[\\]^_`{|}~\u00B0\u00E0\u00E2\u00E9\u00E8\u00EA\u00EB\u00EE"
    U"\u00EF\u00F4\u00F9\u00FB\u00E7\u00C0\u00C2\u00C9\u00C8\u00CB\u00CE\u00CF"
    U"\u00D4\u00D9\u00DB\u00C7\u00A3\u20AC\u00A5\u00A2\u0E3F";
static_assert(kVocab.size() == 123);
// The blank is the class after the vocabulary: len(vocab).
constexpr int64_t kBlank = static_cast<int64_t>(kVocab.size());

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

// A decoded word: its characters (vocabulary indices) and confidence.
struct Word {
  std::vector<int64_t> indices;
  double confidence = 0;

  std::string Utf8() const {
    std::string s;
    for (int64_t i : indices) AppendUtf8(kVocab[i], &s);
    return s;
  }
};

// CTCPostProcessor.ctc_best_path(logits, vocab, blank=len(vocab)) on N x T x
// C logits.
// Host reads in the reference's order: each sequence's best path row by
// row (seq.tolist()), then the confidences (probs.tolist()).
std::vector<Word> CtcBestPath(const torch::Tensor& logits) {
  const torch::Tensor probs =
      std::get<0>(std::get<0>(torch::softmax(logits, -1).max(-1)).min(1));
  const torch::Tensor best = logits.argmax(-1);
  std::vector<Word> words(logits.size(0));
  for (int64_t n = 0; n < best.size(0); ++n) {
    const torch::Tensor row = best[n].cpu().contiguous();
    const int64_t* seq = row.data_ptr<int64_t>();
    for (int64_t t = 0; t < row.size(0); ++t) {
      const bool repeat = t > 0 && seq[t] == seq[t - 1];
      if (!repeat && seq[t] != kBlank) words[n].indices.push_back(seq[t]);
    }
  }
  const torch::Tensor host_probs = probs.cpu().to(torch::kDouble);
  for (int64_t n = 0; n < best.size(0); ++n) {
    words[n].confidence = host_probs[n].item<double>();
  }
  return words;
}

class CRNNImpl : public torch::nn::Module {
 public:
  CRNNImpl()
      : feat_extractor_(register_module(
            "feat_extractor",
            vgg::MakeFeatures(
                vgg::Vgg16Config(),
                vgg::FeaturesOptions().batch_norm(true).rect_pools(3)))),
        // LSTM input: channels x height of the features (512 x 1), which
        // doctr measures with a forward.
        decoder_(register_module(
            "decoder", torch::nn::LSTM(torch::nn::LSTMOptions(512, kRnnUnits)
                                           .num_layers(2)
                                           .batch_first(true)
                                           .bidirectional(true)))),
        linear_(register_module("linear",
                                torch::nn::Linear(2 * kRnnUnits, kBlank + 1))) {
    // torchvision's VGG init (vgg16_bn_r(pretrained=False)); the LSTM and
    // the Linear keep PyTorch's defaults, as in CRNN.__init__.
    vgg::InitConvolutions(*feat_extractor_);
  }

  // forward(x) up to out["out_map"]: the logits, N x W/4 x classes.
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor features = feat_extractor_->forward(x);
    const int64_t c = features.size(1), h = features.size(2),
                  w = features.size(3);
    torch::Tensor seq =
        torch::reshape(features, {-1, h * c, w}).transpose(1, 2);
    return linear_(std::get<0>(decoder_(seq)));
  }

 private:
  torch::nn::Sequential feat_extractor_;
  torch::nn::LSTM decoder_;
  torch::nn::Linear linear_;
};
TORCH_MODULE(CRNN);

class DoctrRecoPredictor final : public Model, public GoldenCheck {
 public:
  explicit DoctrRecoPredictor(const ModelConfig& config) {
    TORCH_CHECK(config.mode == Mode::kEval,
                "doctr_reco_predictor: train() is not implemented");
    net_->to(config.device);
    net_->eval();
    example_inputs_ = torch::randn({config.batch_size, 3, kHeight, kWidth})
                          .to(config.device, config.dtype());
  }

  torch::Tensor Step() override {
    torch::Tensor logits = net_(example_inputs_);
    preds_ = CtcBestPath(logits);
    return logits;
  }

  torch::nn::Module& module() override { return *net_; }

  // Model.eval() on filled crops and CTCPostProcessor on synthetic logits,
  // as tools/golden/adapters/doctr_reco_predictor.py records them, in
  // float64; words as code points padded with 0 to the sequence length.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    torch::NoGradGuard no_grad;
    net_->to(torch::kDouble);
    const torch::Device device = example_inputs_.device();
    example_inputs_ = DeterministicTensor("images", {example_inputs_.size(0), 3,
                                                     kHeight, kWidth})
                          .to(device, torch::kDouble);
    std::map<std::string, torch::Tensor> out;
    out["output"] = Step();
    Record(preds_, out["output"].size(1), "preds", &out);
    torch::Tensor classes =
        DeterministicIntegers("probe_classes", {4, 32}, 118, 124);
    torch::Tensor probe =
        2 * torch::one_hot(classes, kBlank + 1).to(torch::kDouble) +
        0.5 * DeterministicTensor("probe_logits", {4, 32, kBlank + 1},
                                  torch::kDouble);
    Record(CtcBestPath(probe), 32, "probe", &out);
    return out;
  }

 private:
  static void Record(const std::vector<Word>& words, int64_t length,
                     const std::string& prefix,
                     std::map<std::string, torch::Tensor>* out) {
    const int64_t n = static_cast<int64_t>(words.size());
    torch::Tensor codes = torch::zeros({n, length}, torch::kLong);
    torch::Tensor confidence = torch::zeros({n}, torch::kDouble);
    for (int64_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < words[i].indices.size(); ++j) {
        codes[i][static_cast<int64_t>(j)] =
            static_cast<int64_t>(kVocab[words[i].indices[j]]);
      }
      confidence[i] = words[i].confidence;
    }
    (*out)[prefix + ".words"] = codes;
    (*out)[prefix + ".confidence"] = confidence;
  }

  CRNN net_;
  torch::Tensor example_inputs_;
  std::vector<Word> preds_;  // doctr's out["preds"]
};

}  // namespace

// Counts: python-doctr 0.6.0's crnn_vgg16_bn as TorchBench builds it,
// counted in Python (sum(p.numel() ...) over parameters() and buffers(); the
// buffers are 13 BatchNorms' running statistics and num_batches_tracked).
TORCHBENCH_REGISTER_MODEL(
    ModelSpec({.name = "doctr_reco_predictor",
               .domain = "vision",
               .task = "text recognition",
               .reference = "python-doctr 0.6.0 crnn_vgg16_bn (CRNN, "
                            "VGG16-BN + BiLSTM + CTC)",
               .modes = {Mode::kEval},  // train() raises NotImplementedError
               // DEFAULT_EVAL_BSIZE (metadata.yaml: 64 on an A100-SXM4-40GB).
               .eval_batch_size = 1,
               .reference_parameters = 15807676,
               .reference_buffers = 8461,
               .checks = {.golden_file = "doctr_reco_predictor.golden"}}),
    MakeModel<DoctrRecoPredictor>());

}  // namespace doctr_reco_predictor_model
}  // namespace torchbench
