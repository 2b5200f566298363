"""detectron2_maskrcnn_r_101_c4 (COCO-InstanceSegmentation/mask_rcnn_R_101_C4_3x.yaml): detectron2_maskrcnn_common.py."""

import detectron2_maskrcnn_common as common

MODEL = "detectron2_maskrcnn_r_101_c4"
REFERENCE, MODE, BATCH_SIZE, DTYPE, NOTES, compute = common.adapter("mask_rcnn_R_101_C4_3x.yaml")
