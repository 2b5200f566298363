"""detectron2_maskrcnn: detectron2's GeneralizedRCNN from the LazyConfig
common/models/mask_rcnn_fpn.py (nothing frozen: the LazyConfig ResNet keeps
freeze_at=0), SGD(lr=0) as torchbenchmark/models/detectron2_maskrcnn does
(detectron2_maskrcnn_common.py says what is compared; needs DETECTRON2_ROOT)."""

import detectron2_maskrcnn_common as common

MODEL = "detectron2_maskrcnn"
REFERENCE = ("torchbenchmark/models/detectron2_maskrcnn/__init__.py: detectron2 c470ca3"
             " instantiate(common/models/mask_rcnn_fpn.py model), torch.optim.SGD(lr=0), train(), eval()")
MODE = "train"
BATCH_SIZE = common.BATCH_SIZE
DTYPE = common.DTYPE
NOTES = common.notes("the LazyConfig common/models/mask_rcnn_fpn.py, torch.optim.SGD(params, 0.0)"
                     " (one loop iteration of train())")


def compute(root):
    return common.compute(None)
