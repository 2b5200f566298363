"""detectron2_fasterrcnn_r_101_dc5: detectron2's GeneralizedRCNN from COCO-Detection/faster_rcnn_R_101_DC5_3x.yaml
(detectron2_rcnn_common.py says what is compared; needs DETECTRON2_ROOT)."""

import detectron2_rcnn_common as common

MODEL = "detectron2_fasterrcnn_r_101_dc5"
YAML = "faster_rcnn_R_101_DC5_3x.yaml"
REFERENCE = ("torchbenchmark/util/framework/detectron2/model_factory.py: detectron2 c470ca3"
             f" build_model(COCO-Detection/{YAML}), build_optimizer, train(), eval()")
MODE = "train"
BATCH_SIZE = common.BATCH_SIZE
DTYPE = common.DTYPE
NOTES = common.notes(YAML)


def compute(root):
    return common.compute(YAML)
