// TorchBench's hf_Bert (torchbenchmark/models/hf_Bert/__init__.py at
// 43ca0857): HuggingFaceModel("hf_Bert") with class_models' row
// (512, 512, 'BertConfig()', 'AutoModelForMaskedLM'), i.e.
// AutoModelForMaskedLM.from_config(BertConfig()), random weights: the
// network in nlp/common/hf_bert.h with BertConfig's defaults, run by
// nlp/common/hf_language_model.h's Train step (Adam lr 1e-3, no zero_grad)
// and Eval step on randint ids of length 512.
//
// Checked against transformers 5.24.0's own BertForMaskedLM driven by
// TorchBench's HuggingFaceModel.train()/eval() (tools/golden/adapters/
// hf_Bert.py): batch 2, length 16 (the reference's code path at a shorter
// length), dropout off, float32.
//
// Where the port differs from the reference:
//  * transformers version: TorchBench at 43ca0857 pinned 4.20.1; the port
//    follows the project's pinned 5.24.0. The network's parameters and
//    computation are the same in both except that 4.20.1 ran eager
//    attention (matmul, softmax, dropout, matmul) where 5.24.0 calls
//    scaled_dot_product_attention (same math, fused kernel).
#include "nlp/common/hf_bert.h"

#include <memory>

#include "nlp/common/hf_language_model.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace hf_bert_model {
namespace {

constexpr hf::HfTask kTask{
    .train_length = 512, .eval_length = 512, .vocab_size = 30522};

ModelSpec Spec() {
  ModelSpec spec;
  spec.name = "hf_Bert";
  spec.domain = "nlp";
  spec.task = "language modeling";
  spec.reference = "transformers 5.24.0 BertForMaskedLM (BertConfig())";
  spec.train_batch_size = 4;  // DEFAULT_TRAIN_BSIZE
  spec.eval_batch_size = 1;   // DEFAULT_EVAL_BSIZE
  // HuggingFaceModel.DEFAULT_EVAL_CUDA_PRECISION = "fp16".
  spec.default_cuda_eval_precision = Precision::kFp16;
  // In the venv (torch 2.14.1, transformers 5.24.0):
  //   m = AutoModelForMaskedLM.from_config(BertConfig())
  //   sum(p.numel() for p in m.parameters())  # 109514298 (decoder tied)
  //   sum(b.numel() for b in m.buffers())     # 1024: position_ids and
  //                                           # token_type_ids, 1 x 512 each
  spec.reference_parameters = 109514298;
  spec.reference_buffers = 1024;
  spec.golden_file = "hf_Bert.golden";
  return spec;
}

std::unique_ptr<Model> Make(const ModelConfig& config) {
  return std::make_unique<hf::MaskedLmModel<hf::BertForMaskedLM>>(
      config, kTask, hf::BertForMaskedLM(hf::BertConfig{}),
      hf::BertGoldenParameters());
}

}  // namespace

TORCHBENCH_REGISTER_MODEL(Spec(), Make);

}  // namespace hf_bert_model
}  // namespace torchbench
