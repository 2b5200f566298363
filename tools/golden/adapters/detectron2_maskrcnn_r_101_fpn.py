"""detectron2_maskrcnn_r_101_fpn: detectron2's GeneralizedRCNN from COCO-InstanceSegmentation/mask_rcnn_R_101_FPN_3x.yaml
(detectron2_maskrcnn_common.py says what is compared; needs DETECTRON2_ROOT)."""

import detectron2_maskrcnn_common as common

MODEL = "detectron2_maskrcnn_r_101_fpn"
YAML = "mask_rcnn_R_101_FPN_3x.yaml"
REFERENCE = ("torchbenchmark/util/framework/detectron2/model_factory.py: detectron2 c470ca3"
             f" build_model(COCO-InstanceSegmentation/{YAML}), build_optimizer, train(), eval()")
MODE = "train"
BATCH_SIZE = common.BATCH_SIZE
DTYPE = common.DTYPE
NOTES = common.notes(f"COCO-InstanceSegmentation/{YAML}, TorchBench's setup() (BASE_LR 0.001,"
                     " IMS_PER_BATCH 1) and build_optimizer")


def compute(root):
    return common.compute(YAML)
