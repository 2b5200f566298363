// torchvision's ResNet family (torchvision/models/resnet.py; the one
// definition, driven by ResNetOptions, is common/torchvision_resnet.h), and
// TorchBench's TorchVisionModel train/eval steps
// (torchbenchmark/util/framework/vision/model_factory.py).
//
// resnet18, resnet50, resnet152 and resnext50_32x4d are registered here as
// ResNetOptions values of the one module.
#include "common/families.h"
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

// resnet152's reason for fp16 and amp_fp16 Eval (see its registration).
constexpr char kResNet152Overflow[] =
    "with random weights (TorchBench's IMAGENET1K_V1 weights are not "
    "available offline) the Eval forward overflows fp16's range (Inf "
    "output)";

}  // namespace

// Counts: pinned torchvision <name>(weights=None), counted in Python
// (sum(p.numel() ...) over parameters() and buffers()). The buffers are each
// BatchNorm2d's running mean and var plus its num_batches_tracked:
// 2 * (BN channels) + (BN layers).

// 20 BN layers, 4800 channels: 2 * 4800 + 20 = 9620.
TORCHBENCH_REGISTER_MODEL(
    TorchVisionSpec({.name = "resnet18",
                     .train_batch_size = 16,  // DEFAULT_TRAIN_BSIZE
                     .eval_batch_size = 8,    // DEFAULT_EVAL_BSIZE
                     .reference_parameters = 11689512,
                     .reference_buffers = 9620}),
    MakeResNet(
        ResNetOptions().block(ResNetBlock::kBasic).layers({2, 2, 2, 2})));

// 53 BN layers, 26560 channels: 2 * 26560 + 53 = 53173.
TORCHBENCH_REGISTER_MODEL(
    TorchVisionSpec({.name = "resnet50",
                     .train_batch_size = 32,  // DEFAULT_TRAIN_BSIZE
                     .eval_batch_size = 32,   // DEFAULT_EVAL_BSIZE
                     .reference_parameters = 25557032,
                     .reference_buffers = 53173}),
    MakeResNet(
        ResNetOptions().block(ResNetBlock::kBottleneck).layers({3, 4, 6, 3})));

// 155 BN layers, 75712 channels: 2 * 75712 + 155 = 151579.
//
// TorchBench loads IMAGENET1K_V1 weights, whose BatchNorm statistics keep
// activations in range; they are not available offline, and with
// torchvision's random initialisation (running stats 0 and 1) the 50
// residual blocks of an Eval forward grow activations past fp16's 65504:
// the output is Inf (measured on the CPU, fp16 and amp_fp16 alike).
TORCHBENCH_REGISTER_MODEL(
    TorchVisionSpec(
        {.name = "resnet152",
         .train_batch_size = 32,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 32,   // DEFAULT_EVAL_BSIZE
         .reference_parameters = 60192808,
         .reference_buffers = 151579,
         .unsupported_precisions = {{.precision = Precision::kFp16,
                                     .reason = kResNet152Overflow,
                                     .mode = Mode::kEval},
                                    {.precision = Precision::kAmpFp16,
                                     .reason = kResNet152Overflow,
                                     .mode = Mode::kEval}}}),
    MakeResNet(
        ResNetOptions().block(ResNetBlock::kBottleneck).layers({3, 8, 36, 3})));

// 53 BN layers, 34112 channels: 2 * 34112 + 53 = 68277.
TORCHBENCH_REGISTER_MODEL(
    TorchVisionSpec({.name = "resnext50_32x4d",
                     .train_batch_size = 8,  // DEFAULT_TRAIN_BSIZE
                     .eval_batch_size = 8,   // DEFAULT_EVAL_BSIZE
                     .reference_parameters = 25028904,
                     .reference_buffers = 68277}),
    MakeResNet(ResNetOptions()
                   .block(ResNetBlock::kBottleneck)
                   .layers({3, 4, 6, 3})
                   .groups(32)
                   .width_per_group(4)));

}  // namespace resnet_model
}  // namespace torchbench
