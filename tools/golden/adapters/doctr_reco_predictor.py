"""doctr_reco_predictor: TorchBench's doctr CRNN (crnn_vgg16_bn) through its own Model.eval()."""

import fill
from adapters import doctr_det_predictor as det

MODEL = "doctr_reco_predictor"
REFERENCE = ("torchbenchmark/models/doctr_reco_predictor: Model.__init__ (python-doctr 0.6.0"
             " ocr_predictor(...).reco_predictor.model, CRNN crnn_vgg16_bn), Model.eval"
             " (forward with return_model_output=True: logits and CTCPostProcessor words)")
MODE = "eval"
BATCH_SIZE = 2
DTYPE = "float64"
NOTES = [
    det.NOTES[0],
    "2 word crops 3x32x128 (filled as u), in float64 (the float32 fill converted), so that no"
    " argmax is decided by rounding",
    "output: Model.eval()'s out_map (the Linear's logits, N x 32 x 124); preds.confidence and"
    " preds.words: the same forward's CTCPostProcessor result, the words as Unicode code points"
    " padded with 0 to 32 (the sequence length, the longest a best path can decode)",
    "probe.confidence, probe.words: CTCPostProcessor on synthetic logits (4 x 32 x 124) whose"
    " best path repeats and skips blanks: 2 * one_hot(c) + 0.5 u, c the fill 'probe_classes' in"
    " [118, 124) (the last five characters, multi-byte in UTF-8, and the blank 123)",
    det.NOTES[-1],
]


def as_tensors(preds, length, prefix, out):
    """A postprocessor's (word, confidence) list as code points and confidences."""
    import torch

    words = torch.zeros(len(preds), length, dtype=torch.int64)
    for i, (word, _) in enumerate(preds):
        words[i, :len(word)] = torch.tensor([ord(c) for c in word], dtype=torch.int64)
    out[prefix + ".confidence"] = torch.tensor([conf for _, conf in preds], dtype=torch.float64)
    out[prefix + ".words"] = words


def compute(root):
    import torch

    net, logits, preds = det.run_eval(root, MODEL, BATCH_SIZE, (3, 32, 128))
    results = {"output": logits.detach().clone()}
    as_tensors(preds, logits.shape[1], "preds", results)
    classes = fill.deterministic_long("probe_classes", (4, 32), 118, 124)
    probe = (2 * torch.nn.functional.one_hot(classes, 124).double()
             + 0.5 * fill.deterministic_tensor("probe_logits", (4, 32, 124), torch.float64))
    as_tensors(net.postprocessor(probe), 32, "probe", results)
    return results


prepare = det.prepare  # the same stand-ins (one package, two models)
