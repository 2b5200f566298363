// TorchBench's timm_vision_transformer_large: timm vit_giant_patch14_224
// (~1B parameters) under TorchBench's TimmModel steps
// (common/image_classifier.h). It is the same VisionTransformer as
// timm_vision_transformer with other VitOptions.
//
// Too big for the 2-core CPU CI's fidelity test (the Python reference alone
// needs ~4 GB of weights plus a forward), so python_reference is empty: the
// counts below check the structure, and every layer's code (patch embed,
// block, attention, MLP, norm, head) is the code timm_vision_transformer's
// fidelity test covers against timm.
#include "common/image_classifier.h"
#include "common/timm_vit_blocks.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace timm_vision_transformer_large_model {
namespace {

ModelSpec Spec() {
  ModelSpec spec;
  spec.name = "timm_vision_transformer_large";
  // TimmModel: DEFAULT_EVAL_CUDA_PRECISION = "fp16" (util/framework/timm).
  spec.default_cuda_eval_precision = Precision::kFp16;
  spec.domain = "vision";
  spec.task = "image classification";
  spec.reference = "timm vit_giant_patch14_224";
  spec.train_batch_size = 8;  // DEFAULT_TRAIN_BSIZE
  spec.eval_batch_size = 8;   // DEFAULT_EVAL_BSIZE
  // A CPU Train step at batch 1 holds ~4 GB each of parameters, gradients
  // and momentum (~13 GB peak with activations); Eval peaks at ~4.4 GB RSS.
  spec.test_batch_size = 1;
  spec.supports_channels_last = true;
  // timm 1.0.29 (and 1.0.31) create_model("vit_giant_patch14_224") built on the
  // meta device, counted in Python (sum(p.numel() for p in m.parameters()));
  // the model has no buffers. By hand: 1408 * (3*14*14 + 1) patch embed
  // + 1408 * (1 + 257) tokens + 40 blocks * 25250176 (qkv 1408*4224 + 4224,
  // proj 1408*1408 + 1408, fc1 1408*6144 + 6144, fc2 6144*1408 + 1408,
  // two LayerNorms 4*1408) + 2*1408 norm + 1408*1000 + 1000 head.
  spec.reference_parameters = 1012611432;
  spec.reference_buffers = 0;
  // A Train step holds ~12 GB (weights, gradients, momentum) and the smoke
  // test's before/after copies ~8 GB more: over a 24 GB CI machine.
  spec.skip_cpu_smoke_test =
      "~1B parameters: one CPU Train step at batch 1 takes ~50 s and "
      "13.6 GB; counts are checked, its Eval runs in cli.exact_filters and "
      "the shared ViT code is covered by timm_vision_transformer";
  spec.no_reference_check =
      "its Python reference alone needs ~4 GB of weights and a 1B-parameter "
      "forward on a 2-core CI machine; the counts check the structure and "
      "every layer's code is timm_vision_transformer's, checked against timm";
  return spec;
}

}  // namespace

TORCHBENCH_REGISTER_MODEL(Spec(),
                          common::MakeTimmClassifier<common::VisionTransformer>(
                              [] {
                                return common::VisionTransformer(
                                    common::VitOptions()
                                        .patch_size(14)
                                        .embed_dim(1408)
                                        .depth(40)
                                        .num_heads(16)
                                        .mlp_hidden(6144));
                              },
                              {.input_size = {3, 224, 224},
                               .num_classes = 1000,
                               .no_weight_decay = common::VitNoWeightDecay()}));

}  // namespace timm_vision_transformer_large_model
}  // namespace torchbench
