"""detectron2_fasterrcnn_r_101_c4 (COCO-Detection/faster_rcnn_R_101_C4_3x.yaml): detectron2_rcnn_common.py."""

import detectron2_rcnn_common as common
import detectron2_stand_ins

MODEL = "detectron2_fasterrcnn_r_101_c4"
REFERENCE, MODE, BATCH_SIZE, DTYPE, NOTES, compute = common.adapter("faster_rcnn_R_101_C4_3x.yaml")
prepare = detectron2_stand_ins.prepare
