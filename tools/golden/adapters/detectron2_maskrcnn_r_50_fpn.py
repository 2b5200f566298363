"""detectron2_maskrcnn_r_50_fpn (COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml): detectron2_maskrcnn_common.py."""

import detectron2_maskrcnn_common as common
import detectron2_stand_ins

MODEL = "detectron2_maskrcnn_r_50_fpn"
REFERENCE, MODE, BATCH_SIZE, DTYPE, NOTES, compute = common.adapter("mask_rcnn_R_50_FPN_1x.yaml")
prepare = detectron2_stand_ins.prepare
