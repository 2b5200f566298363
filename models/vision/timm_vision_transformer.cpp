// TorchBench's timm_vision_transformer: timm vit_small_patch16_224 under
// TorchBench's TimmModel steps (common/image_classifier.h). The network is
// the VisionTransformer shared with timm_vision_transformer_large.
#include "common/image_classifier.h"
#include "common/timm_vit_blocks.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace timm_vision_transformer_model {
namespace {

ModelSpec Spec() {
  ModelSpec spec;
  spec.name = "timm_vision_transformer";
  // TimmModel: DEFAULT_EVAL_CUDA_PRECISION = "fp16" (util/framework/timm).
  spec.default_cuda_eval_precision = Precision::kFp16;
  spec.domain = "vision";
  spec.task = "image classification";
  spec.reference = "timm vit_small_patch16_224";
  spec.train_batch_size = 8;  // DEFAULT_TRAIN_BSIZE
  spec.eval_batch_size = 8;   // DEFAULT_EVAL_BSIZE
  spec.test_batch_size = 2;
  spec.supports_channels_last = true;
  // timm 1.0.29 (and 1.0.31) create_model("vit_small_patch16_224"), counted in
  // Python (sum(p.numel() for p in m.parameters())); the model has no buffers.
  spec.reference_parameters = 22050664;
  spec.reference_buffers = 0;
  spec.python_reference = "timm:vit_small_patch16_224";
  spec.reference_input_shape = {2, 3, 224, 224};
  return spec;
}

}  // namespace

TORCHBENCH_REGISTER_MODEL(Spec(),
                          common::MakeTimmClassifier<common::VisionTransformer>(
                              [] {
                                return common::VisionTransformer(
                                    common::VitOptions()
                                        .patch_size(16)
                                        .embed_dim(384)
                                        .depth(12)
                                        .num_heads(6)
                                        .mlp_hidden(1536));
                              },
                              {.input_size = {3, 224, 224},
                               .num_classes = 1000,
                               .no_weight_decay = common::VitNoWeightDecay()}));

}  // namespace timm_vision_transformer_model
}  // namespace torchbench
