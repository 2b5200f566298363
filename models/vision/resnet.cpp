// torchvision's ResNet family (torchvision/models/resnet.py; the one
// definition, driven by ResNetOptions, is common/torchvision_resnet.h), and
// TorchBench's TorchVisionModel train/eval steps
// (torchbenchmark/util/framework/vision/model_factory.py).
//
// resnet18, resnet50, resnet152 and resnext50_32x4d are registered here as
// ResNetOptions values of the one module.
#include <cstdint>
#include <string>

#include "common/image_classifier.h"
#include "common/torchvision_resnet.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace resnet_model {
namespace {

using torchvision_resnet::ResNet;
using torchvision_resnet::ResNetBlock;
using torchvision_resnet::ResNetOptions;

ModelFactory MakeResNet(ResNetOptions options) {
  return common::MakeTorchVisionClassifier<ResNet>(
      [options] { return ResNet(options); });
}

// The spec every torchvision ResNet shares; each registration below adds
// its name, batch sizes and the reference's counts.
ModelSpec ResNetSpec(const std::string& name, int64_t train_batch_size,
                     int64_t eval_batch_size, int64_t reference_parameters,
                     int64_t reference_buffers) {
  ModelSpec spec;
  spec.name = name;
  // TorchVisionModel: DEFAULT_EVAL_CUDA_PRECISION = "fp16"
  // (util/framework/vision).
  spec.default_cuda_eval_precision = Precision::kFp16;
  spec.domain = "vision";
  spec.task = "image classification";
  spec.reference = "torchvision " + name;
  spec.train_batch_size = train_batch_size;  // DEFAULT_TRAIN_BSIZE
  spec.eval_batch_size = eval_batch_size;    // DEFAULT_EVAL_BSIZE
  spec.test_batch_size = 2;
  spec.supports_channels_last = true;
  spec.reference_parameters = reference_parameters;
  spec.reference_buffers = reference_buffers;
  spec.python_reference = "torchvision:" + name;
  spec.reference_input_shape = {2, 3, 224, 224};
  return spec;
}

}  // namespace

// Counts: torchvision 0.29.1 <name>(weights=None), counted in Python
// (sum(p.numel() for p in m.parameters()) and the same over m.buffers()).
// The buffers are each BatchNorm2d's running mean and var plus its
// num_batches_tracked: 2 * (BN channels) + (BN layers).

// 20 BN layers, 4800 channels: 2 * 4800 + 20 = 9620.
TORCHBENCH_REGISTER_MODEL(ResNetSpec("resnet18", 16, 8, 11689512, 9620),
                          MakeResNet(ResNetOptions()
                                         .block(ResNetBlock::kBasic)
                                         .layers({2, 2, 2, 2})));

// 53 BN layers, 26560 channels: 2 * 26560 + 53 = 53173.
TORCHBENCH_REGISTER_MODEL(ResNetSpec("resnet50", 32, 32, 25557032, 53173),
                          MakeResNet(ResNetOptions()
                                         .block(ResNetBlock::kBottleneck)
                                         .layers({3, 4, 6, 3})));

// 155 BN layers, 75712 channels: 2 * 75712 + 155 = 151579.
namespace {
ModelSpec ResNet152Spec() {
  ModelSpec spec = ResNetSpec("resnet152", 32, 32, 60192808, 151579);
  // TorchBench loads IMAGENET1K_V1 weights, whose BatchNorm statistics keep
  // activations in range; they are not available offline, and with
  // torchvision's random initialisation (running stats 0 and 1) the 50
  // residual blocks of an Eval forward grow activations past fp16's 65504:
  // the output is Inf (measured on the CPU, fp16 and amp_fp16 alike).
  const std::string overflow =
      "with random weights (TorchBench's IMAGENET1K_V1 weights are not "
      "available offline) the Eval forward overflows fp16's range (Inf "
      "output)";
  for (Precision p : {Precision::kFp16, Precision::kAmpFp16}) {
    spec.unsupported_precisions.push_back(
        {.precision = p, .reason = overflow, .mode = Mode::kEval});
  }
  return spec;
}
}  // namespace
TORCHBENCH_REGISTER_MODEL(ResNet152Spec(),
                          MakeResNet(ResNetOptions()
                                         .block(ResNetBlock::kBottleneck)
                                         .layers({3, 8, 36, 3})));

// 53 BN layers, 34112 channels: 2 * 34112 + 53 = 68277.
TORCHBENCH_REGISTER_MODEL(ResNetSpec("resnext50_32x4d", 8, 8, 25028904, 68277),
                          MakeResNet(ResNetOptions()
                                         .block(ResNetBlock::kBottleneck)
                                         .layers({3, 4, 6, 3})
                                         .groups(32)
                                         .width_per_group(4)));

}  // namespace resnet_model
}  // namespace torchbench
