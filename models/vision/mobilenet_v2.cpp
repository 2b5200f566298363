// torchvision's MobileNetV2 (torchvision/models/mobilenetv2.py; the network
// is common/torchvision_mobilenet_v2.h) with TorchBench's TorchVisionModel
// train/eval steps.
#include "common/image_classifier.h"
#include "common/torchvision_mobilenet_v2.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace mobilenet_v2_model {
namespace {

using torchvision_mobilenet_v2::MobileNetV2;
using torchvision_mobilenet_v2::MobileNetV2Options;

ModelSpec MobileNetV2Spec() {
  ModelSpec spec;
  spec.name = "mobilenet_v2";
  // TorchVisionModel: DEFAULT_EVAL_CUDA_PRECISION = "fp16"
  // (util/framework/vision).
  spec.default_cuda_eval_precision = Precision::kFp16;
  spec.domain = "vision";
  spec.task = "image classification";
  spec.reference = "torchvision mobilenet_v2";
  spec.train_batch_size = 96;  // DEFAULT_TRAIN_BSIZE
  spec.eval_batch_size = 16;   // DEFAULT_EVAL_BSIZE
  spec.test_batch_size = 2;
  spec.supports_channels_last = true;
  // torchvision 0.29.1 mobilenet_v2(weights=None), counted in Python
  // (sum(p.numel() for p in m.parameters())).
  spec.reference_parameters = 3504872;
  // Same model, sum over m.buffers() (52 BatchNorm2d layers: running stats
  // plus one num_batches_tracked each).
  spec.reference_buffers = 34164;
  spec.python_reference = "torchvision:mobilenet_v2";
  spec.reference_input_shape = {2, 3, 224, 224};
  return spec;
}

}  // namespace

TORCHBENCH_REGISTER_MODEL(MobileNetV2Spec(),
                          common::MakeTorchVisionClassifier<MobileNetV2>([] {
                            return MobileNetV2(MobileNetV2Options());
                          }));

}  // namespace mobilenet_v2_model
}  // namespace torchbench
