// TorchBench's hf_T5 (torchbenchmark/models/hf_T5/__init__.py at 43ca0857):
// HuggingFaceModel (util/framework/huggingface/model_factory.py) around
// AutoModelForSeq2SeqLM.from_config(AutoConfig.from_pretrained("t5-small")),
// i.e. transformers' T5ForConditionalGeneration with t5-small's sizes
// (models/nlp/common/hf_t5.h has the network, hf_language_model.h the
// inputs and steps). class_models row: train length 1024, eval length 2048,
// divided by cpu_input_slice 4 on the CPU (512).
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
// hf_T5_large run the same definition with other sizes and have their own
// golden checks.
#include "nlp/common/hf_t5.h"

#include <memory>

#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace hf_t5_model {
namespace {

constexpr hf::HfTask kTask{.train_length = 1024,
                           .eval_length = 2048,
                           .cpu_input_slice = 4,
                           .vocab_size = 32128,
                           .seq2seq = true};

ModelSpec Spec() {
  ModelSpec spec;
  spec.name = "hf_T5";
  spec.domain = "nlp";
  spec.task = "language modeling";
  spec.reference = "transformers 5.24.0 T5ForConditionalGeneration (t5-small)";
  spec.train_batch_size = 8;  // DEFAULT_TRAIN_BSIZE
  spec.eval_batch_size = 1;   // DEFAULT_EVAL_BSIZE
  // HuggingFaceModel.DEFAULT_EVAL_CUDA_PRECISION.
  spec.default_cuda_eval_precision = Precision::kFp16;
  // Measured in the venv: T5ForConditionalGeneration(T5Config(t5-small's
  // config.json values)) built under torch.device("meta");
  // sum(p.numel() for p in m.parameters()) = 60506624 (shared.weight counted
  // once), buffers() is empty.
  spec.reference_parameters = 60506624;
  spec.reference_buffers = 0;
  spec.golden_file = "hf_T5.golden";
  return spec;
}

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    Spec(), [](const ModelConfig& config) -> std::unique_ptr<Model> {
      return std::make_unique<hf::t5::T5LanguageModel>(config, kTask,
                                                       hf::t5::T5Config{});
    });

}  // namespace hf_t5_model
}  // namespace torchbench
