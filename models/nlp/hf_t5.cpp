// TorchBench's hf_T5, hf_T5_base and hf_T5_large
// (torchbenchmark/models/hf_T5*/__init__.py at 43ca0857): HuggingFaceModel
// (util/framework/huggingface/model_factory.py) around
// AutoModelForSeq2SeqLM.from_config(AutoConfig.from_pretrained("t5-small"),
// "t5-base", "t5-large"), i.e. transformers' T5ForConditionalGeneration with
// each checkpoint's sizes: one definition (models/nlp/common/hf_t5.h has the
// network, hf_language_model.h the inputs and steps) registered three times.
// class_models rows: hf_T5 train length 1024, eval length 2048, divided by
// cpu_input_slice 4 on the CPU (512); hf_T5_base 1024 and 2048 (no
// cpu_input_slice: 2048 on the CPU too); hf_T5_large 512 and 512.
//
// Where the port differs from the reference, and why:
//  * Weights: from_config's random init (T5's _init_weights) is not
//    reproduced bit for bit; LibTorch's default init of the same shapes is
//    used. Step times do not depend on weight values; the golden check
//    fills both sides with the same values.
//  * ModelConfig::small_inputs (CPU smoke and precision tests only) caps the
//    sequence length at 32.
//
// Checked against transformers' own T5ForConditionalGeneration run through
// TorchBench's HuggingFaceModel train()/eval() (tools/golden/adapters/
// hf_T5.py): Eval logits at length 136 (past the 128 max distance, so the
// clamped bucket is used), one Train step at length 40: loss, gradients and
// parameters after Adam's step, including both relative_attention_bias
// tables. The outputs agree bit for bit (relative error 0). hf_T5_base and
// hf_T5_large have their own golden checks (tests/golden/hf_T5_base.golden,
// hf_T5_large.golden; adapters/hf_T5_base.py, hf_T5_large.py): their
// checkpoint's widths and heads with 2 encoder and 2 decoder blocks (every
// block past the first runs the same code), while the counts test checks
// the full 12 + 12 and 24 + 24 blocks. hf_T5_large skips the CPU smoke
// test (its memory; the reason is in its spec).
#include "nlp/common/hf_t5.h"

#include <cstdint>
#include <memory>

#include "common/families.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace hf_t5_model {
namespace {

using hf::t5::T5Config;
using hf::t5::T5GoldenShape;

// Blocks per stack in hf_T5_base's and hf_T5_large's golden checks (their
// adapters build as many).
constexpr int64_t kGoldenLayers = 2;

ModelFactory MakeT5(hf::HfTask task, T5Config t5, T5GoldenShape golden = {}) {
  return [=](const ModelConfig& config) -> std::unique_ptr<Model> {
    return std::make_unique<hf::t5::T5LanguageModel>(config, task, t5, golden);
  };
}

// t5-base's and t5-large's config.json; the rest as t5-small (T5Config
// defaults).
T5Config BaseConfig() {
  T5Config config;
  config.d_model = 768;
  config.d_ff = 3072;
  config.num_layers = 12;
  config.num_decoder_layers = 12;
  config.num_heads = 12;
  return config;
}

T5Config LargeConfig() {
  T5Config config;
  config.d_model = 1024;
  config.d_ff = 4096;
  config.num_layers = 24;
  config.num_decoder_layers = 24;
  config.num_heads = 16;
  return config;
}

}  // namespace

// Counts: T5ForConditionalGeneration(T5Config(<the checkpoint's config.json
// values>)) built under torch.device("meta") in the venv;
// sum(p.numel() for p in m.parameters()) (shared.weight counted once),
// buffers() is empty.

TORCHBENCH_REGISTER_MODEL(
    HuggingFaceSpec(
        {.name = "hf_T5",
         .reference =
             "transformers 5.24.0 T5ForConditionalGeneration (t5-small)",
         .train_batch_size = 8,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 1,   // DEFAULT_EVAL_BSIZE
         .reference_parameters = 60506624,
         .reference_buffers = 0,
         .checks = {.golden_file = "hf_T5.golden"}}),
    MakeT5({.train_length = 1024,
            .eval_length = 2048,
            .cpu_input_slice = 4,
            .vocab_size = 32128,
            .seq2seq = true},
           T5Config{}));

TORCHBENCH_REGISTER_MODEL(
    HuggingFaceSpec(
        {.name = "hf_T5_base",
         .reference =
             "transformers 5.24.0 T5ForConditionalGeneration (t5-base)",
         .train_batch_size = 8,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 1,   // DEFAULT_EVAL_BSIZE
         .reference_parameters = 222903552,
         .reference_buffers = 0,
         .checks = {.golden_file = "hf_T5_base.golden"}}),
    MakeT5({.train_length = 1024,
            .eval_length = 2048,
            .vocab_size = 32128,
            .seq2seq = true},
           BaseConfig(), {.layers = kGoldenLayers}));

// The smoke test's figures: measured single-threaded on the 2-core machine
// (loaded by other jobs); Eval ran 26 s. CI has 24 GB shared by two tests.
TORCHBENCH_REGISTER_MODEL(
    HuggingFaceSpec(
        {.name = "hf_T5_large",
         .reference =
             "transformers 5.24.0 T5ForConditionalGeneration (t5-large)",
         .train_batch_size = 2,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 1,   // DEFAULT_EVAL_BSIZE
         .reference_parameters = 737668096,
         .reference_buffers = 0,
         .checks = {.golden_file = "hf_T5_large.golden"}}),
    MakeT5({.train_length = 512,
            .eval_length = 512,
            .vocab_size = 32128,
            .seq2seq = true},
           LargeConfig(), {.layers = kGoldenLayers}));

}  // namespace hf_t5_model
}  // namespace torchbench
