// TorchBench's timm_vision_transformer and timm_vision_transformer_large:
// timm vit_small_patch16_224 and vit_giant_patch14_224 (~1B parameters)
// under TorchBench's TimmModel steps (common/image_classifier.h), one
// VisionTransformer with two VitOptions.
//
// The large model is too big for the 2-core CPU CI's fidelity test (the
// Python reference alone needs ~4 GB of weights plus a forward), so it has
// no python_reference: its counts check the structure, and every layer's
// code (patch embed, block, attention, MLP, norm, head) is the code the
// small model's fidelity test covers against timm.
#include "common/families.h"
#include "common/image_classifier.h"
#include "common/timm_vit_blocks.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace timm_vision_transformer_model {
namespace {

ModelFactory MakeVit(common::VitOptions options) {
  return common::MakeTimmClassifier<common::VisionTransformer>(
      [options] { return common::VisionTransformer(options); },
      {.input_size = {3, 224, 224},
       .num_classes = 1000,
       .no_weight_decay = common::VitNoWeightDecay()});
}

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    TimmSpec({.name = "timm_vision_transformer",
              .train_batch_size = 8,  // DEFAULT_TRAIN_BSIZE
              .eval_batch_size = 8,   // DEFAULT_EVAL_BSIZE
              // pinned timm (and 1.0.31) create_model("vit_small_patch16_224"),
              // counted in Python (sum(p.numel() ...)); no buffers.
              .reference_parameters = 22050664,
              .reference_buffers = 0,
              .checks = {.python_reference = "timm:vit_small_patch16_224",
                         .reference_input_shape = {2, 3, 224, 224}}}),
    MakeVit(common::VitOptions()
                .patch_size(16)
                .embed_dim(384)
                .depth(12)
                .num_heads(6)
                .mlp_hidden(1536)));

TORCHBENCH_REGISTER_MODEL(
    TimmSpec(
        {.name = "timm_vision_transformer_large",
         .reference = "timm vit_giant_patch14_224",
         .train_batch_size = 8,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 8,   // DEFAULT_EVAL_BSIZE
         // pinned timm (and 1.0.31) create_model("vit_giant_patch14_224")
         // built on the meta device, counted in Python (sum(p.numel() ...));
         // no buffers. By hand: 1408 * (3*14*14 + 1) patch embed
         // + 1408 * (1 + 257) tokens + 40 blocks * 25250176 (qkv 1408*4224 +
         // 4224, proj 1408*1408 + 1408, fc1 1408*6144 + 6144, fc2 6144*1408 +
         // 1408, two LayerNorms 4*1408) + 2*1408 norm + 1408*1000 + 1000 head.
         .reference_parameters = 1012611432,
         .reference_buffers = 0,
         .checks =
             {.no_reference_check =
                  "its Python reference alone needs ~4 GB of weights and a "
                  "1B-parameter forward on a 2-core CI machine; the counts "
                  "check the structure and every layer's code is "
                  "timm_vision_transformer's, checked against timm",
              // A CPU Train step at batch 1 holds ~4 GB each of parameters,
              // gradients and momentum (~13 GB peak with activations); Eval
              // peaks at ~4.4 GB RSS.
              .test_batch_size = 1}}),
    MakeVit(common::VitOptions()
                .patch_size(14)
                .embed_dim(1408)
                .depth(40)
                .num_heads(16)
                .mlp_hidden(6144)));

}  // namespace timm_vision_transformer_model
}  // namespace torchbench
