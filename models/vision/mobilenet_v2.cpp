// torchvision's MobileNetV2 (torchvision/models/mobilenetv2.py; the network
// is common/torchvision_mobilenet_v2.h) with TorchBench's TorchVisionModel
// train/eval steps.
#include "common/families.h"
#include "common/image_classifier.h"
#include "common/torchvision_mobilenet_v2.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace mobilenet_v2_model {
namespace {

using torchvision_mobilenet_v2::MobileNetV2;
using torchvision_mobilenet_v2::MobileNetV2Options;

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    TorchVisionSpec({.name = "mobilenet_v2",
                     .train_batch_size = 96,  // DEFAULT_TRAIN_BSIZE
                     .eval_batch_size = 16,   // DEFAULT_EVAL_BSIZE
                     // pinned torchvision mobilenet_v2(weights=None), counted
                     // in Python (sum(p.numel() ...) over parameters() and
                     // buffers(); 52 BatchNorm2d layers' running stats and
                     // num_batches_tracked).
                     .reference_parameters = 3504872,
                     .reference_buffers = 34164}),
    common::MakeTorchVisionClassifier<MobileNetV2>([] {
      return MobileNetV2(MobileNetV2Options());
    }));

}  // namespace mobilenet_v2_model
}  // namespace torchbench
