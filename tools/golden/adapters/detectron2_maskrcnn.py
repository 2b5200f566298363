"""detectron2_maskrcnn (LazyConfig common/models/mask_rcnn_fpn.py, SGD lr 0):
detectron2_maskrcnn_common.py."""

import detectron2_maskrcnn_common as common
import detectron2_stand_ins

MODEL = "detectron2_maskrcnn"
REFERENCE, MODE, BATCH_SIZE, DTYPE, NOTES, compute = common.adapter(None)
prepare = detectron2_stand_ins.prepare
