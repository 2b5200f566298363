"""resnet50_quantized_qat: torchvision resnet50 through torch's own FX
quantization-aware training and int8 conversion, as TorchBench's Model
builds it. The keys, the fill and what is reset are mobilenet_v2_quantized_qat's
(adapters/mobilenet_v2_quantized_qat.py)."""

from adapters import mobilenet_v2_quantized_qat as qat

MODEL = "resnet50_quantized_qat"
REFERENCE = ("torchbenchmark/models/resnet50_quantized_qat: Model.__init__ "
             "(prepare_qat_fx), train, prep_qat_eval (convert_fx), eval")
MODE = "train"
BATCH_SIZE = 2
IMAGE_SIZE = 32
DTYPE = "float32"
QUANTIZED_KEYS = qat.QUANTIZED_KEYS
NOTES = [n if "dropout" not in n else n.replace("; dropout off", "") for n in qat.NOTES]


def compute(root):
    return qat.single_threaded(qat.qat_compute, root, MODEL, BATCH_SIZE, IMAGE_SIZE)
