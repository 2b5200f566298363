// What TorchBench sets once on its model families' base classes
// (torchbenchmark/util/framework/*/model_factory.py at 43ca0857), set once
// here. A model file passes what is its own, with designated initializers,
// and the family fills the rest:
//
//   TORCHBENCH_REGISTER_MODEL(
//       TimmSpec({.name = "timm_nfnet",
//                 .reference = "timm dm_nfnet_f0",
//                 .train_batch_size = 128,
//                 .eval_batch_size = 128,
//                 .reference_parameters = 71489284,
//                 .reference_buffers = 0,
//                 .checks = {.python_reference = "timm:dm_nfnet_f0",
//                            .reference_input_shape = {2, 3, 192, 192}}}),
//       MakeModel<NfNet>());
//
// A family never overrides what the model stated: it fills fields the model
// left at their defaults (empty strings and shapes), and sets the facts no
// model of the family changes in TorchBench (domain, CUDA precision).
#ifndef TORCHBENCH_MODELS_COMMON_FAMILIES_H_
#define TORCHBENCH_MODELS_COMMON_FAMILIES_H_

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "torchbench/model.h"

namespace torchbench {

// HuggingFaceModel (util/framework/huggingface): DEFAULT_EVAL_CUDA_PRECISION
// = "fp16", enable_amp(); task "language modeling" unless the model says otherwise.
inline ModelSpec HuggingFaceSpec(ModelSpec spec) {
  spec.domain = "nlp";
  if (spec.task.empty()) spec.task = "language modeling";
  spec.default_cuda_eval_precision = Precision::kFp16;
  spec.enable_amp = true;
  return spec;
}

namespace families_internal {
// Image classifiers of torchvision and timm: 4-D image inputs (channels-last
// applies), a pip reference named after the model, ImageNet-sized inputs;
// both base classes have enable_amp().
inline ModelSpec ImageClassifierSpec(ModelSpec spec, const std::string& package,
                                     const std::string& architecture) {
  spec.domain = "vision";
  if (spec.task.empty()) spec.task = "image classification";
  if (spec.reference.empty()) spec.reference = package + " " + architecture;
  spec.supports_channels_last = true;
  spec.default_cuda_eval_precision = Precision::kFp16;
  spec.enable_amp = true;
  // Both factories set torch.backends.cudnn.benchmark = True.
  spec.train_cudnn.benchmark = true;
  spec.eval_cudnn.benchmark = true;
  return spec;
}
}  // namespace families_internal

// TorchVisionModel (util/framework/vision): DEFAULT_EVAL_CUDA_PRECISION =
// "fp16"; the reference is torchvision's model of the same name, checked
// against the pip package on 2 x 3 x 224 x 224 unless the model says
// otherwise.
inline ModelSpec TorchVisionSpec(ModelSpec spec) {
  const std::string architecture =
      spec.checks.python_reference.empty()
          ? spec.name
          : spec.checks.python_reference.substr(
                spec.checks.python_reference.find(':') + 1);
  if (spec.checks.python_reference.empty() && spec.checks.golden_file.empty()) {
    spec.checks.python_reference = "torchvision:" + spec.name;
  }
  if (spec.checks.reference_input_shape.empty() &&
      !spec.checks.python_reference.empty()) {
    spec.checks.reference_input_shape = {2, 3, 224, 224};
  }
  return families_internal::ImageClassifierSpec(std::move(spec), "torchvision",
                                                architecture);
}

// TimmModel (util/framework/timm): DEFAULT_EVAL_CUDA_PRECISION = "fp16".
// The model names its timm architecture in checks.python_reference
// ("timm:<architecture>").
inline ModelSpec TimmSpec(ModelSpec spec) {
  const std::string& ref = spec.checks.python_reference;
  const std::string architecture =
      ref.empty() ? spec.name : ref.substr(ref.find(':') + 1);
  return families_internal::ImageClassifierSpec(std::move(spec), "timm",
                                                architecture);
}

// Detectron2Model (util/framework/detectron2): DEFAULT_TRAIN_BSIZE =
// DEFAULT_EVAL_BSIZE = 1, DEFAULT_EVAL_CUDA_PRECISION = "fp16"; the CPU tests
// run batch 1 (a 2-core machine; every detection path runs at batch 1).
inline ModelSpec Detectron2Spec(ModelSpec spec) {
  spec.domain = "vision";
  if (spec.task.empty()) spec.task = "object detection";
  if (spec.train_batch_size == 0) spec.train_batch_size = 1;
  if (spec.eval_batch_size == 0) spec.eval_batch_size = 1;
  spec.checks.test_batch_size = 1;
  spec.default_cuda_eval_precision = Precision::kFp16;
  return spec;
}

// Adds one PrecisionLimit per precision with the same reason (in `mode`
// only, when set).
inline ModelSpec WithUnsupportedPrecisions(
    ModelSpec spec, std::initializer_list<Precision> precisions,
    const std::string& reason, bool cpu_only = false,
    std::optional<Mode> mode = std::nullopt) {
  for (Precision p : precisions) {
    // Member by member: GCC 12 misreads the aggregate initialiser's string
    // conversion as an out-of-bounds copy (-Warray-bounds).
    PrecisionLimit limit;
    limit.precision = p;
    limit.reason = reason;
    limit.cpu_only = cpu_only;
    limit.mode = mode;
    spec.unsupported_precisions.push_back(std::move(limit));
  }
  return spec;
}

}  // namespace torchbench

#endif  // TORCHBENCH_MODELS_COMMON_FAMILIES_H_
