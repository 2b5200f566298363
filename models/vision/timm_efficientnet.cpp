// TorchBench's timm_efficientnet: timm efficientnet_b0
// (timm/models/efficientnet.py, _efficientnet_blocks.py; pinned timm
// and 1.0.31) under TorchBench's TimmModel steps (common/image_classifier.h).
// Drop rate and drop-path rate are timm's defaults for this model (0), so train
// and eval forwards differ only in batch norm.
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "common/families.h"
#include "common/image_classifier.h"
#include "common/timm_efficientnet_blocks.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace timm_efficientnet_model {
namespace {

// efficientnet_b0: the shared trunk with timm's defaults plus the
// classifier head (conv_head, bn2, global average pool, classifier).
class EfficientNetImpl : public common::effnet::EfficientNetTrunkImpl {
 public:
  EfficientNetImpl() : common::effnet::EfficientNetTrunkImpl({}) {
    conv_head_ = register_module(
        "conv_head",
        common::effnet::TimmConv2d(320, 1280, 1, 1, 1, false, false));
    bn2_ = register_module("bn2", common::effnet::BatchNormAct(1280, true));
    classifier_ = register_module("classifier", torch::nn::Linear(1280, 1000));
    common::effnet::InitEfficientNetWeights(*this);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = bn2_(conv_head_(ForwardTrunk(x, nullptr)));
    // SelectAdaptivePool2d('avg', flatten=True).
    return classifier_(torch::adaptive_avg_pool2d(y, {1, 1}).flatten(1));
  }

 private:
  common::effnet::TimmConv2d conv_head_{nullptr};
  common::effnet::BatchNormAct bn2_{nullptr};
  torch::nn::Linear classifier_{nullptr};
};
TORCH_MODULE(EfficientNet);

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    TimmSpec({.name = "timm_efficientnet",
              .train_batch_size = 32,  // DEFAULT_TRAIN_BSIZE
              .eval_batch_size = 64,   // DEFAULT_EVAL_BSIZE
              // pinned timm (and 1.0.31) create_model("efficientnet_b0"),
              // counted in Python (sum(p.numel() ...) over parameters() and
              // buffers(); 49 BatchNormAct2d layers' running mean/var and
              // num_batches_tracked).
              .reference_parameters = 5288548,
              .reference_buffers = 42065,
              .checks = {.python_reference = "timm:efficientnet_b0",
                         .reference_input_shape = {2, 3, 224, 224}}}),
    common::MakeTimmClassifier<EfficientNet>([] { return EfficientNet(); },
                                             {.input_size = {3, 224, 224},
                                              .num_classes = 1000,
                                              .no_weight_decay = {}}));

}  // namespace timm_efficientnet_model
}  // namespace torchbench
