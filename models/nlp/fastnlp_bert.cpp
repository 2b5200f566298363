// TorchBench's fastNLP_Bert (torchbenchmark/models/fastNLP_Bert at
// 43ca0857): fastNLP 0.6.0's BertForQuestionAnswering over a BertEmbedding
// (models/bert.py, embeddings/bert_embedding.py, modules/encoder/bert.py),
// with the BertModel built from the model folder's bert_config.json (what
// TorchBench's fastnlp.patch makes _BertWordModel do instead of loading
// pretrained weights), and the sliced fastNLP Trainer/Tester loops of its
// __init__.py.
//
// What the reference's train() does, and this port with it: one epoch over
// the 5 batches of the simulated CMRC2018 train set (batch_size items of 5
// questions each, batched by batch_size), forward, CMRC2018Loss, backward;
// model.zero_grad() before the first batch; WarmupCallback('linear'),
// GradientClipCallback(norm 1) and the AdamW step all act only when
// step % update_every == 0, with update_every = 10 and step counted from 0
// on every train() call. Five batches never reach step 10, so TorchBench's
// train() accumulates gradients and never updates a parameter (see
// train_may_not_update). The optimizer step is still ported (fastNLP's own
// AdamW, whose update differs from torch's, see FastNlpAdamWStep) so that
// the loop is the reference's.
//
// eval(): model.eval(), then forward over the 4 batches of the dev set
// (batch_size items of 4 questions each); returns the last batch's
// pred_start and pred_end (here as the B x L x 2 logits they are columns of).
//
// Host traffic, as the reference's: each forward reads the longest
// word-piece row back, copies the words to the host once, builds each row's
// word pieces there (three scalar reads and one copy to the device a row,
// see BertWordModel) and copies the row indices over; each CMRC2018Loss
// copies its position grid over (seq_len_to_mask). The gradient clip, when
// it runs, is torch.nn.utils.clip_grad_norm_'s (no host read).
//
// Synthetic data (cmrc2018_simulator.py): every instance is
// context (456 + 1 = 457 chars: _GBK2312(l) returns l + 1 characters) +
// [SEP] + question (15 + 1 = 16 chars) = 474 words; answers start at 0 and
// are 7 + 1 = 8 chars long, so target_start 0, target_end 7, context_len
// 457. The questions of one item share its context. Characters are drawn
// uniformly from the word vocabulary below with torch's RNG (the reference
// draws GB2312 characters with Python's random and indexes them by
// frequency rank).
//
// The vocabulary. CMRC2018BertPipe indexes the characters of the train and
// dev sets; under TorchBench's seed (set_random_seed, 1337) and default
// batches (train 6, eval 1) it has 2869 words: <pad> 0, <unk> 1, [SEP] 2 and
// 2866 characters. The port keeps that vocabulary at every batch size (the
// reference's grows with the batch: 1434 words at train batch 2); its only
// trace in the model is the word_pieces_lengths buffer, one entry per word.
// The simulator's tokenizer vocab.txt holds the 3105 distinct characters
// drawn (titles and answers included) plus 5 specials, in Python set order,
// which changes with PYTHONHASHSEED from run to run; every word is exactly
// one word piece. The port fixes that order: [PAD] 0, [UNK] 1, [CLS] 2,
// [SEP] 3, [MASK] 4, then the characters, word w >= 3 being piece w + 2.
//
// Not ported: the text pipeline itself (JSON files, character
// tokenisation, Vocabulary, DataSetIter padding), which runs in the
// reference's __init__, not in its train()/eval().
#include <torch/nn/functional/loss.h>
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
#include <map>
#include <string>
#include <vector>

#include "common/optimizers.h"
#include "nlp/fastnlp_bert_encoder.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace fastnlp_bert_model {
namespace {

using fastnlp_bert::BertModel;
using fastnlp_bert::kHidden;
using fastnlp_bert::kMaxPositions;

// BertEmbedding arguments in __init__.py.
constexpr double kEmbeddingDropout = 0.5;
constexpr double kWordDropout = 0.01;

// The word vocabulary and word-piece layout described above.
constexpr int64_t kWordVocab = 2869;
constexpr int64_t kWordPad = 0;
constexpr int64_t kWordUnk = 1;
constexpr int64_t kWordSep = 2;
constexpr int64_t kFirstCharWord = 3;
constexpr int64_t kPiecePad = 0;
constexpr int64_t kPieceUnk = 1;
constexpr int64_t kPieceCls = 2;
constexpr int64_t kPieceSep = 3;
constexpr int64_t kFirstCharPiece = 5;

// cmrc2018_simulator.py: lengths are the spec's plus one (see above).
constexpr int64_t kContextLength = 457;
// ModelConfig::small_inputs (the CPU smoke and precision tests): contexts of
// 112 words, the same code path at a quarter of the tokens (the full Train
// step was the suite's slowest smoke test after detectron2's, 37 s).
constexpr int64_t kSmallContextLength = 112;
constexpr int64_t kQuestionLength = 16;
constexpr int64_t kAnswerLength = 8;
constexpr int64_t kTrainQuestionsPerItem = 5;  // CMRC2018_TRAIN_SPEC qas_size
constexpr int64_t kDevQuestionsPerItem = 4;    // CMRC2018_DEV_SPEC qas_size

// The Trainer slice's settings.
constexpr int64_t kUpdateEvery = 10;
constexpr double kLearningRate = 5e-5;
constexpr double kWeightDecay = 1e-2;  // fastNLP AdamW's default.
constexpr double kBeta1 = 0.9;
constexpr double kBeta2 = 0.999;
constexpr double kAdamEps = 1e-8;
constexpr double kWarmup = 0.1;    // WarmupCallback's default.
constexpr double kClipNorm = 1.0;  // GradientClipCallback(clip_value=1)

// _BertWordModel with layers "-1", pool_method "first", include_cls_sep
// False, auto_truncate True: words -> [CLS] pieces [SEP] -> BertModel ->
// each word's first piece of the last layer.
class BertWordModelImpl : public torch::nn::Module {
 public:
  BertWordModelImpl() : encoder(register_module("encoder", BertModel())) {
    word_pieces_lengths_ = register_buffer(
        "word_pieces_lengths", torch::ones({kWordVocab}, torch::kLong));
    // A plain numpy array in the reference, not a buffer.
    word_to_wordpiece_ = torch::arange(kWordVocab, torch::kLong) +
                         (kFirstCharPiece - kFirstCharWord);
    word_to_wordpiece_[kWordPad] = kPiecePad;
    word_to_wordpiece_[kWordUnk] = kPieceUnk;
    word_to_wordpiece_[kWordSep] = kPieceSep;
  }

  torch::Tensor forward(const torch::Tensor& words) {
    const int64_t batch = words.size(0);
    const int64_t max_words = words.size(1);
    torch::Tensor word_mask, seq_len, batch_piece_lengths, pieces, attn_masks,
        token_type_ids, piece_lengths, batch_indexes;
    int64_t max_pieces = 0;
    {
      torch::NoGradGuard no_grad;
      word_mask = words.ne(kWordPad);
      seq_len = word_mask.sum(-1);
      batch_piece_lengths =
          word_pieces_lengths_.index({words}).masked_fill(~word_mask, 0);
      piece_lengths = batch_piece_lengths.sum(-1);
      max_pieces = piece_lengths.max().item<int64_t>();
      if (max_pieces + 2 > kMaxPositions) {
        piece_lengths = piece_lengths.masked_fill(
            piece_lengths + 2 > kMaxPositions, kMaxPositions - 2);
      }
      pieces = torch::full({batch, std::min(max_pieces + 2, kMaxPositions)},
                           kPiecePad, words.options());
      attn_masks = torch::zeros_like(pieces);
      // Row by row on the host, as the reference does (every word is one
      // piece): the words come back once (words.cpu().numpy()), a row's
      // pieces are looked up in the host map and copied into the device's
      // pieces, and each bound is a device scalar read back (seq_len[i],
      // word_pieces_lengths[i] + 1, word_pieces_lengths[i] + 2: three host
      // syncs a row, as the reference's tensor slice bounds are).
      const torch::Tensor word_indexes = words.cpu();
      for (int64_t i = 0; i < batch; ++i) {
        const int64_t len = seq_len[i].item<int64_t>();
        const torch::Tensor row =
            word_to_wordpiece_.index({word_indexes[i].slice(0, 0, len)});
        const int64_t end = (piece_lengths[i] + 1).item<int64_t>();
        pieces[i].slice(0, 1, end).copy_(row.slice(0, 0, end - 1));
        attn_masks[i]
            .slice(0, 0, (piece_lengths[i] + 2).item<int64_t>())
            .fill_(1);
      }
      pieces.select(1, 0).fill_(kPieceCls);
      // torch.arange(batch_size).to(words): made on the host and copied.
      batch_indexes = torch::arange(batch, torch::kLong).to(words.device());
      pieces.index_put_({batch_indexes, piece_lengths + 1},
                        torch::full({batch}, kPieceSep, words.options()));
      // [SEP] is a word of the vocabulary, so segment ids alternate at each
      // [SEP] counted from the end, starting at 0.
      const torch::Tensor sep_cumsum = pieces.eq(kPieceSep)
                                           .to(torch::kLong)
                                           .flip({-1})
                                           .cumsum(-1)
                                           .flip({-1});
      token_type_ids = sep_cumsum.fmod(2);
      token_type_ids =
          token_type_ids.slice(1, 0, 1).bitwise_xor(token_type_ids);
    }
    torch::Tensor last = encoder(pieces, token_type_ids, attn_masks);

    torch::Tensor cum =
        torch::zeros({batch, max_words + 1}, batch_piece_lengths.options());
    cum.slice(1, 1).copy_(batch_piece_lengths.cumsum(-1));
    cum = cum.slice(1, 0, seq_len.max().item<int64_t>());
    cum.masked_fill_(cum.ge(max_pieces), 0);
    const torch::Tensor rows = batch_indexes.unsqueeze(1).expand_as(cum);
    const int64_t real_pieces = last.size(1) - 2;
    if (max_pieces > real_pieces) {
      last = torch::cat({last, last.new_zeros({batch, max_pieces - real_pieces,
                                               last.size(2)})},
                        1)
                 .contiguous();
    }
    torch::Tensor first_pieces =
        last.slice(1, 1, -1)
            .index({rows, cum})
            .masked_fill(
                word_mask.slice(1, 0, cum.size(1)).unsqueeze(-1).logical_not(),
                0);
    torch::Tensor outputs = last.new_zeros({1, batch, max_words, kHidden});
    outputs.select(0, 0).slice(1, 0, cum.size(1)).copy_(first_pieces);
    return outputs;
  }

  BertModel encoder;

 private:
  torch::Tensor word_pieces_lengths_;
  torch::Tensor word_to_wordpiece_;
};
TORCH_MODULE(BertWordModel);

// embeddings/bert_embedding.py BertEmbedding: word dropout to <unk>,
// _BertWordModel, the layers concatenated (one here), dropout 0.5.
class BertEmbeddingImpl : public torch::nn::Module {
 public:
  BertEmbeddingImpl()
      : dropout_layer(register_module("dropout_layer",
                                      torch::nn::Dropout(kEmbeddingDropout))),
        model(register_module("model", BertWordModel())) {}

  torch::Tensor forward(torch::Tensor words) {
    if (word_dropout > 0 && is_training()) {
      torch::NoGradGuard no_grad;
      torch::Tensor mask =
          torch::bernoulli(torch::full(words.sizes(), word_dropout,
                                       words.options().dtype(torch::kFloat)))
              .eq(1);
      // Not on padding nor on [SEP] ("[CLS]" is not in the vocabulary).
      mask = words.ne(kWordPad) & mask & words.ne(kWordSep);
      words = words.masked_fill(mask, kWordUnk);
    }
    return dropout_layer(torch::cat(model(words).unbind(0), -1));
  }

  torch::nn::Dropout dropout_layer;
  BertWordModel model;
  double word_dropout = kWordDropout;
};
TORCH_MODULE(BertEmbedding);

// models/bert.py BertForQuestionAnswering; returns B x L x 2 logits whose
// columns are pred_start and pred_end.
class BertForQuestionAnsweringImpl : public torch::nn::Module {
 public:
  BertForQuestionAnsweringImpl()
      : bert(register_module("bert", BertEmbedding())),
        qa_outputs(
            register_module("qa_outputs", torch::nn::Linear(kHidden, 2))) {}

  torch::Tensor forward(const torch::Tensor& words) {
    return qa_outputs(bert(words));
  }

  BertEmbedding bert;
  torch::nn::Linear qa_outputs;
};
TORCH_MODULE(BertForQuestionAnswering);

// One DataSetIter batch: words and the CMRC2018Loss targets.
struct QaBatch {
  torch::Tensor words;
  torch::Tensor target_start;
  torch::Tensor target_end;
  torch::Tensor context_len;
};

// Lays out `contexts` (items x 457) and `questions` (instances x 16) as the
// pipe does: instance n is item n / questions_per_item's context, [SEP], its
// question; batches of `batch_size` in order.
std::vector<QaBatch> MakeBatches(const torch::Tensor& contexts,
                                 const torch::Tensor& questions,
                                 int64_t questions_per_item, int64_t batch_size,
                                 int64_t num_batches) {
  const int64_t instances = questions.size(0);
  const torch::Tensor item = torch::arange(instances, contexts.options())
                                 .div(questions_per_item, "floor");
  const torch::Tensor words = torch::cat(
      {contexts.index({item}),
       torch::full({instances, 1}, kWordSep, contexts.options()), questions},
      1);
  std::vector<QaBatch> batches;
  for (int64_t b = 0; b < num_batches; ++b) {
    QaBatch batch;
    batch.words = words.slice(0, b * batch_size, (b + 1) * batch_size);
    const int64_t n = batch.words.size(0);
    batch.target_start = torch::zeros({n}, contexts.options());
    batch.target_end = torch::full({n}, kAnswerLength - 1, contexts.options());
    batch.context_len = torch::full({n}, contexts.size(1), contexts.options());
    batches.push_back(batch);
  }
  return batches;
}

// core/losses.py CMRC2018Loss (reduction "mean").
torch::Tensor Cmrc2018Loss(const torch::Tensor& logits, const QaBatch& batch) {
  const int64_t batch_size = logits.size(0);
  // seq_len_to_mask(context_len, max_len).eq(False): the positions are made
  // on the host, expanded to the batch and copied to the device there.
  const torch::Tensor outside = torch::arange(logits.size(1), torch::kLong)
                                    .expand({batch_size, -1})
                                    .to(batch.context_len.device())
                                    .lt(batch.context_len.unsqueeze(1))
                                    .eq(false);
  namespace F = torch::nn::functional;
  const auto sum = F::CrossEntropyFuncOptions().reduction(torch::kSum);
  const torch::Tensor start_loss =
      F::cross_entropy(logits.select(2, 0).masked_fill(outside, -INFINITY),
                       batch.target_start, sum);
  const torch::Tensor end_loss =
      F::cross_entropy(logits.select(2, 1).masked_fill(outside, -INFINITY),
                       batch.target_end, sum);
  return (start_loss + end_loss) / batch_size / 2;
}

class FastNlpBert final : public Model, public GoldenCheck {
 public:
  explicit FastNlpBert(const ModelConfig& config)
      : mode_(config.mode), batch_size_(config.batch_size) {
    net_->to(config.device);
    const auto options =
        torch::TensorOptions().device(config.device).dtype(torch::kLong);
    const int64_t per_item =
        mode_ == Mode::kTrain ? kTrainQuestionsPerItem : kDevQuestionsPerItem;
    const int64_t context_length =
        config.small_inputs ? kSmallContextLength : kContextLength;
    const torch::Tensor contexts = torch::randint(
        kFirstCharWord, kWordVocab, {batch_size_, context_length}, options);
    const torch::Tensor questions =
        torch::randint(kFirstCharWord, kWordVocab,
                       {batch_size_ * per_item, kQuestionLength}, options);
    batches_ =
        MakeBatches(contexts, questions, per_item, batch_size_, per_item);
    for (auto& p : net_->parameters()) {
      adam_.push_back({p, torch::Tensor(), torch::Tensor(), 0});
    }
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kTrain) return Train().detach();
    net_->eval();
    torch::Tensor logits;
    for (const QaBatch& batch : batches_) logits = net_->forward(batch.words);
    return logits;
  }

  // tools/golden/adapters/fastNLP_Bert.py: the reference's eval() on the
  // first train batch, then one train() call over two batches (not five, to
  // keep the CPU check short), with every dropout and word dropout off.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    for (auto& m : net_->modules()) {
      if (auto* dropout = m->as<torch::nn::Dropout>()) dropout->options.p(0.0);
    }
    net_->bert->word_dropout = 0;
    const auto device = batches_[0].words.device();
    const torch::Tensor contexts =
        DeterministicIntegers("contexts", {batch_size_, kContextLength},
                              kFirstCharWord, kWordVocab)
            .to(device);
    const torch::Tensor questions =
        DeterministicIntegers(
            "questions",
            {batch_size_ * kTrainQuestionsPerItem, kQuestionLength},
            kFirstCharWord, kWordVocab)
            .to(device);
    batches_ = MakeBatches(contexts, questions, kTrainQuestionsPerItem,
                           batch_size_, /*num_batches=*/2);
    std::map<std::string, torch::Tensor> out = recorder_.Capture([&] {
      {
        torch::NoGradGuard no_grad;
        net_->eval();
        const torch::Tensor logits = net_->forward(batches_[0].words);
        recorder_.Record("eval_pred_start", logits.select(2, 0));
        recorder_.Record("eval_pred_end", logits.select(2, 1));
      }
      Train();
    });
    // Not qa_outputs.bias: its gradient is zero in exact arithmetic.
    auto named = net_->named_parameters();
    for (const char* name :
         {"bert.model.encoder.embeddings.word_embeddings.weight",
          "bert.model.encoder.encoder.layer.0.attention.self.query.weight",
          "qa_outputs.weight"}) {
      out[std::string("grad:") + name] = named[name].grad();
    }
    RecordEdgeParameters(*net_, "after_train:", /*gradients=*/false, &out);
    return out;
  }

  torch::nn::Module& module() override { return *net_; }

 private:
  struct AdamState {
    torch::Tensor param;
    torch::Tensor exp_avg;
    torch::Tensor exp_avg_sq;
    int64_t step;
  };

  // The sliced Trainer._train() for one epoch; a golden check records the
  // last batch's pred_start, pred_end and loss.
  torch::Tensor Train() {
    net_->train();
    // WarmupCallback.on_train_begin: optimizer steps per epoch.
    const int64_t instances = batch_size_ * kTrainQuestionsPerItem;
    const int64_t per_update = batch_size_ * kUpdateEvery;
    const int64_t t_steps = std::max<int64_t>(
        2, instances / per_update + (instances % per_update != 0 ? 1 : 0));
    torch::Tensor loss;
    int64_t step = 0;
    for (const QaBatch& batch : batches_) {
      ++step;
      const torch::Tensor logits = net_->forward(batch.words);
      loss = Cmrc2018Loss(logits, batch);
      if ((step - 1) % kUpdateEvery == 0) net_->zero_grad();
      Backward(loss);
      if (step % kUpdateEvery == 0) {
        // WarmupCallback, GradientClipCallback (torch.nn.utils.
        // clip_grad_norm_: foreach norms, no host read), then _update.
        common::ClipGradNorm(net_->parameters(), kClipNorm);
        const double progress =
            (static_cast<double>(step) / kUpdateEvery) / t_steps;
        const double factor =
            progress < kWarmup ? progress / kWarmup
                               : std::max((progress - 1.) / (kWarmup - 1.), 0.);
        FastNlpAdamWStep(kLearningRate * factor);
      }
      recorder_.Record("output_pred_start", logits.select(2, 0));
      recorder_.Record("output_pred_end", logits.select(2, 1));
      recorder_.Record("loss", loss);
    }
    return loss;
  }

  // fastNLP.core.optimizer.AdamW.step: decoupled weight decay first, then
  // Adam with step size lr * sqrt(1 - beta2^t) / (1 - beta1^t) and eps added
  // to the uncorrected sqrt(v) (torch's AdamW adds it to the corrected one).
  void FastNlpAdamWStep(double lr) {
    torch::NoGradGuard no_grad;
    for (AdamState& s : adam_) {
      if (!s.param.grad().defined()) continue;
      const torch::Tensor grad = s.param.grad();
      s.param.mul_(1 - lr * kWeightDecay);
      if (s.step == 0) {
        s.exp_avg = torch::zeros_like(s.param);
        s.exp_avg_sq = torch::zeros_like(s.param);
      }
      ++s.step;
      s.exp_avg.mul_(kBeta1).add_(grad, 1 - kBeta1);
      s.exp_avg_sq.mul_(kBeta2).addcmul_(grad, grad, 1 - kBeta2);
      const torch::Tensor denom = s.exp_avg_sq.sqrt().add_(kAdamEps);
      const double step_size = lr * std::sqrt(1 - std::pow(kBeta2, s.step)) /
                               (1 - std::pow(kBeta1, s.step));
      s.param.addcdiv_(s.exp_avg, denom, -step_size);
    }
  }

  Mode mode_;
  int64_t batch_size_;
  BertForQuestionAnswering net_;
  std::vector<QaBatch> batches_;
  std::vector<AdamState> adam_;
  GoldenRecorder recorder_;
};

}  // namespace

// Counts: the reference Model built by tools/golden/adapters/
// fastNLP_Bert.py's loader (its own __init__.py, fastNLP 0.6.0, pinned
// torch, seed 1337, test="train", batch 6) and counted in Python over
// model.parameters():
// BertModel 102267648 (word 21128*768 + positions 512*768 + types 2*768
// + LayerNorm 1536 + 12 * 7087872 + pooler 590592) + qa_outputs 1538.
// The buffer is bert.model.word_pieces_lengths, one int64 per word of the
// vocabulary (2869 at the default batches, see above); same run.
TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "fastNLP_Bert",
         .domain = "nlp",
         .task = "question answering",
         .reference = "fastNLP 0.6.0 BertForQuestionAnswering (CMRC2018)",
         .train_batch_size = 6,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 1,   // DEFAULT_EVAL_BSIZE
         .reference_parameters = 102269186,
         .reference_buffers = kWordVocab,
         // TorchBench's metadata.yaml (tests/golden/cudnn_flags.txt).
         .train_cudnn = {.deterministic = true},
         .eval_cudnn = {.deterministic = true},
         .checks = {.golden_file = "fastNLP_Bert.golden",
                    // Five 474-word batches per Train step.
                    .test_batch_size = 1,
                    .train_may_not_update =
                        "TorchBench's train() runs 5 batches with "
                        "update_every=10 and resets its step counter on every "
                        "call, so the optimizer never steps: gradients "
                        "accumulate and no parameter changes"}}),
    MakeModel<FastNlpBert>());

}  // namespace fastnlp_bert_model
}  // namespace torchbench
