// TorchBench's hf_GPT2 (torchbenchmark/models/hf_GPT2/__init__.py and
// util/framework/huggingface/model_factory.py at 43ca0857):
// AutoModelForCausalLM.from_config(AutoConfig.from_pretrained("gpt2")), the
// 124M-parameter GPT-2, trained with Adam (lr 1e-3, no zero_grad) on random
// ids and labels of length 512 and evaluated on length 1024 (256 on the CPU:
// cpu_input_slice 4). The network is models/nlp/common/hf_gpt2.h.
//
// Configuration (the public gpt2 config.json; every other value is a
// GPT2Config default of transformers 5.24.0): vocab_size 50257, n_positions
// 1024, n_embd 768, n_layer 12, n_head 12, activation gelu_new, dropouts
// 0.1, layer_norm_epsilon 1e-5.
//
// Where the port differs from the reference, and why:
//  * Weights are random (as from_config's), drawn by LibTorch instead of
//    transformers' _init_weights stream; step times do not depend on them.
//  * TorchBench at 43ca0857 ran transformers 4.20.1, whose GPT2Attention
//    also held the attn.bias / attn.masked_bias causal-mask buffers and
//    computed attention eagerly; the reference here is transformers 5.24.0
//    (no buffers, sdpa attention), as the project pins it.
//  * The CPU smoke and precision tests (ModelConfig::small_inputs) cut the
//    length to HfTask::small_length (32); benchmarks use the full lengths.
//
// Checked against transformers' own GPT2LMHeadModel run through TorchBench's
// HuggingFaceModel.train()/eval() (tools/golden/adapters/hf_GPT2.py) at
// batch 2, length 16, dropout off.
#include "nlp/common/hf_gpt2.h"

#include <map>
#include <memory>
#include <string>

#include "nlp/common/hf_language_model.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace hf_gpt2_model {
namespace {

using hf_gpt2::Gpt2Config;
using hf_gpt2::Gpt2LmHeadModel;

// class_models["hf_GPT2"] and cpu_input_slice["hf_GPT2"].
constexpr hf::HfTask kTask{.train_length = 512,
                           .eval_length = 1024,
                           .cpu_input_slice = 4,
                           .vocab_size = 50257};

// The golden check's length (tools/golden/adapters/hf_GPT2.py).
constexpr int64_t kGoldenLength = 16;

class HfGpt2 : public hf::HfLanguageModel<Gpt2LmHeadModel> {
 public:
  explicit HfGpt2(const ModelConfig& config)
      : HfLanguageModel(config, kTask, Gpt2LmHeadModel(Gpt2Config{})) {}

  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    return GoldenLmOutputs(
        {"transformer.wte.weight", "transformer.wpe.weight",
         "transformer.h.0.attn.c_attn.weight",
         "transformer.h.11.mlp.c_proj.weight", "transformer.ln_f.weight"},
        kGoldenLength);
  }
};

ModelSpec Spec() {
  ModelSpec spec;
  spec.name = "hf_GPT2";
  spec.domain = "nlp";
  spec.task = "language modeling";
  spec.reference = "transformers GPT2LMHeadModel (gpt2 config)";
  spec.train_batch_size = 4;  // DEFAULT_TRAIN_BSIZE
  spec.eval_batch_size = 1;   // DEFAULT_EVAL_BSIZE
  spec.test_batch_size = 1;
  // HuggingFaceModel.DEFAULT_EVAL_CUDA_PRECISION = "fp16".
  spec.default_cuda_eval_precision = Precision::kFp16;
  // transformers 5.24.0 in the venv: m = AutoModelForCausalLM.from_config(
  // GPT2Config()); sum(p.numel() for p in m.parameters()) = 124439808
  // (wte 38597376 tied with lm_head, wpe 786432, 12 blocks of 7087872,
  // ln_f 1536); m.buffers() is empty.
  spec.reference_parameters = 124439808;
  spec.reference_buffers = 0;
  spec.golden_file = "hf_GPT2.golden";
  return spec;
}

}  // namespace

TORCHBENCH_REGISTER_MODEL(Spec(), MakeModel<HfGpt2>());

}  // namespace hf_gpt2_model
}  // namespace torchbench
