"""detectron2_fasterrcnn_r_50_fpn: detectron2's GeneralizedRCNN from COCO-Detection/faster_rcnn_R_50_FPN_1x.yaml
(detectron2_rcnn_common.py says what is compared; needs DETECTRON2_ROOT)."""

import detectron2_rcnn_common as common

MODEL = "detectron2_fasterrcnn_r_50_fpn"
YAML = "faster_rcnn_R_50_FPN_1x.yaml"
REFERENCE = ("torchbenchmark/util/framework/detectron2/model_factory.py: detectron2 c470ca3"
             f" build_model(COCO-Detection/{YAML}), build_optimizer, train(), eval()")
MODE = "train"
BATCH_SIZE = common.BATCH_SIZE
DTYPE = common.DTYPE
NOTES = common.notes(YAML)


def compute(root):
    return common.compute(YAML)
