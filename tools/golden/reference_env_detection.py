"""reference_env's stand-ins for the detection and source-tree models
(detectron2_*, vision_maskrcnn, yolov3, timm_efficientdet, DALLE2_pytorch,
doctr_*): see reference_env.py."""

# model -> construct(root, mode, batch_size, device) -> TorchBench's Model.
CONSTRUCT = {}
