// TorchBench's hf_T5_base (torchbenchmark/models/hf_T5_base/__init__.py at
// 43ca0857): HuggingFaceModel around AutoModelForSeq2SeqLM.from_config(
// AutoConfig.from_pretrained("t5-base")), the T5ForConditionalGeneration of
// models/nlp/common/hf_t5.h with t5-base's sizes. class_models row: train
// length 1024, eval length 2048 (no cpu_input_slice: 2048 on the CPU too).
//
// Where the port differs from the reference, and why:
//  * Weights: LibTorch's default init, not T5's _init_weights (step times
//    do not depend on weight values).
//  * ModelConfig::small_inputs (CPU smoke and precision tests only) caps the
//    sequence length at 32.
//
// The network is hf_T5's definition with other sizes; its golden check
// (tests/golden/hf_T5_base.golden, tools/golden/adapters/hf_T5_base.py)
// runs t5-base's widths and heads with 2 encoder and 2 decoder blocks
// (every block past the first runs the same code), while the counts test
// checks the full 12 + 12 blocks.
#include <memory>

#include "nlp/common/hf_t5.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace hf_t5_base_model {
namespace {

constexpr hf::HfTask kTask{.train_length = 1024,
                           .eval_length = 2048,
                           .vocab_size = 32128,
                           .seq2seq = true};

// Blocks per stack in the golden check (adapters/hf_T5_base.py builds as
// many).
constexpr int64_t kGoldenLayers = 2;

// t5-base's config.json; the rest as t5-small (hf::t5::T5Config defaults).
hf::t5::T5Config Config() {
  hf::t5::T5Config config;
  config.d_model = 768;
  config.d_ff = 3072;
  config.num_layers = 12;
  config.num_decoder_layers = 12;
  config.num_heads = 12;
  return config;
}

ModelSpec Spec() {
  ModelSpec spec;
  spec.name = "hf_T5_base";
  spec.domain = "nlp";
  spec.task = "language modeling";
  spec.reference = "transformers 5.24.0 T5ForConditionalGeneration (t5-base)";
  spec.train_batch_size = 8;  // DEFAULT_TRAIN_BSIZE
  spec.eval_batch_size = 1;   // DEFAULT_EVAL_BSIZE
  spec.default_cuda_eval_precision = Precision::kFp16;
  // Measured in the venv: T5ForConditionalGeneration(T5Config(t5-base's
  // config.json values)) built under torch.device("meta");
  // sum(p.numel() for p in m.parameters()) = 222903552, buffers() empty.
  spec.reference_parameters = 222903552;
  spec.reference_buffers = 0;
  spec.golden_file = "hf_T5_base.golden";
  return spec;
}

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    Spec(), [](const ModelConfig& config) -> std::unique_ptr<Model> {
      return std::make_unique<hf::t5::T5LanguageModel>(
          config, kTask, Config(),
          hf::t5::T5GoldenShape{.layers = kGoldenLayers});
    });

}  // namespace hf_t5_base_model
}  // namespace torchbench
