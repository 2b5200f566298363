"""tacotron2: TorchBench's NVIDIA Tacotron 2 through its own Model.eval() and
Model.train(), on two filled utterances collated by its own TextMelCollate.

The reference's Model.__init__ cannot run here: it raises on CPU (NVIDIA's
load_model() calls .cuda()) and reads LJSpeech wav files. The adapter builds
the same members as __init__ does instead -- hparams from its own
create_hparams(), Tacotron2(hparams) (load_model without .cuda(); fp16_run
and distributed_run are off), Adam(lr, weight_decay from hparams),
Tacotron2Loss(), and example_inputs/target from its own parse_batch() -- and
then calls the unchanged Model.eval() and Model.train().

librosa, inflect and unidecode, which the package imports for audio loading,
the STFT and text cleaning, are given empty stand-ins: the golden inputs are
token ids and mel frames already, so none of that code runs.
"""

import contextlib
import sys
import types

import fill
import reference

MODEL = "tacotron2"
REFERENCE = ("torchbenchmark/models/tacotron2: Model.create_hparams, Model.train, Model.eval, "
             "model.py Tacotron2, loss_function.py, data_utils.py TextMelCollate")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float32"
# (text length, mel frames) of each utterance, before TextMelCollate sorts.
UTTERANCES = [(8, 14), (11, 10)]
NOTES = [
    "inputs: filled token ids text<i> in [1, 148) and mel frames mel<i> (-5.5 + 2u) of "
    "(text length, frames) = (8, 14), (11, 10), collated by the reference's TextMelCollate",
    "every dropout off on both sides (torch.nn.functional.dropout made the identity here): "
    "the prenet's is always on in the reference, the others in train mode",
    "eval_*: Model.eval() (BatchNorm running statistics filled); output_*, loss, grad:*: "
    "the first train() call (Adam lr 1e-3, weight_decay 1e-6)",
    "padded frames are masked by parse_output through .data; the second utterance's text "
    "and the first utterance's frames are padded; *_gate_frames: the gate with its padded "
    "positions (1e3) zeroed, so the real energies are compared",
    "after_2_steps:*: the first and last parameters after two train() calls",
]
INNER_GRADIENTS = [
    "encoder.lstm.weight_ih_l0_reverse",
    "decoder.attention_layer.location_layer.location_conv.conv.weight",
    "decoder.attention_rnn.weight_hh",
    "decoder.decoder_rnn.weight_ih",
    "postnet.convolutions.0.0.conv.weight",
]


def _stand_in_modules():
    """Empty modules for the data-pipeline imports the golden check never
    reaches; any call into them fails loudly."""

    def unavailable(*args, **kwargs):
        raise RuntimeError("stand-in: not available to the golden check")

    names = {
        "librosa": {}, "librosa.filters": {"mel": unavailable},
        "librosa.util": {"pad_center": unavailable, "tiny": unavailable},
        "inflect": {"engine": lambda: types.SimpleNamespace()},
        "unidecode": {"unidecode": unavailable},
    }
    for name, attributes in names.items():
        if name in sys.modules:
            continue
        module = types.ModuleType(name)
        for key, value in attributes.items():
            setattr(module, key, value)
        sys.modules[name] = module
    sys.modules["librosa"].filters = sys.modules["librosa.filters"]
    sys.modules["librosa"].util = sys.modules["librosa.util"]


@contextlib.contextmanager
def _no_dropout():
    import torch.nn.functional as functional

    original = functional.dropout
    functional.dropout = lambda input, p=0.5, training=True, inplace=False: input
    try:
        yield
    finally:
        functional.dropout = original


class _Recorder:
    """reference.StepRecorder for a network returning a list of tensors."""

    def __init__(self, net, optimizer, criterion):
        self.results = {}
        self.output_lengths = None
        self._net = net
        self._handles = [
            net.register_forward_hook(lambda m, a, out: setattr(self, "_output", out)),
            criterion.register_forward_hook(lambda m, a, out: setattr(self, "_loss", out)),
            optimizer.register_step_pre_hook(self._on_step),
        ]

    def _on_step(self, optimizer, args, kwargs):
        if "loss" in self.results:
            return
        _record_outputs(self._output, "output_", self.results, self.output_lengths)
        self.results["loss"] = self._loss.detach().clone()
        reference.record_edges(self._net, "grad:", self.results, gradients=True)
        params = dict(self._net.named_parameters())
        for name in INNER_GRADIENTS:
            self.results["grad:" + name] = params[name].grad.detach().clone()

    def close(self):
        for handle in self._handles:
            handle.remove()


def _record_outputs(outputs, prefix, results, output_lengths):
    import torch

    for key, tensor in zip(("mel", "mel_postnet", "gate", "alignments"), outputs):
        results[prefix + key] = tensor.detach().clone()
    # The 1e3 written into padded gate positions would swamp the gate's
    # summary; this copy zeroes them so the real energies are compared.
    gate = outputs[2].detach()
    padded = torch.arange(gate.size(1))[None, :] >= output_lengths[:, None]
    results[prefix + "gate_frames"] = gate.masked_fill(padded, 0.0)


def compute(root):
    import torch

    _stand_in_modules()
    package = reference.load_model_package(root, "tacotron2")
    from torchbenchmark.models.tacotron2.data_utils import TextMelCollate
    from torchbenchmark.models.tacotron2.model import Tacotron2

    model = package.Model.__new__(package.Model)
    reference._BenchmarkModel.__init__(model, test="train", device="cpu",
                                       batch_size=BATCH_SIZE)
    model.hparams = model.create_hparams(batch_size=BATCH_SIZE)
    model.model = Tacotron2(model.hparams)
    model.optimizer = torch.optim.Adam(model.model.parameters(),
                                       lr=model.hparams.learning_rate,
                                       weight_decay=model.hparams.weight_decay)
    model.criterion = package.Tacotron2Loss()
    net = model.model
    fill.deterministic_fill(net)

    utterances = []
    for i, (characters, frames) in enumerate(UTTERANCES):
        text = fill.deterministic_long(f"text{i}", (characters,), 1, 148)
        mel = fill.deterministic_tensor(f"mel{i}", (80, frames), offset=-5.5, scale=2.0)
        utterances.append((text, mel))
    batch = TextMelCollate(model.hparams.n_frames_per_step)(utterances)
    model.example_inputs, model.target = net.parse_batch(batch, device="cpu")

    results = {}
    with _no_dropout():
        with torch.no_grad():
            _record_outputs(model.eval(), "eval_", results, model.example_inputs[4])
        recorder = _Recorder(net, model.optimizer, model.criterion)
        recorder.output_lengths = model.example_inputs[4]
        model.train()
        model.train()
        recorder.close()
    results.update(recorder.results)
    reference.record_edges(net, "after_2_steps:", results)
    assert torch.isfinite(results["loss"]).all()
    return results


def prepare(root, name, mode, batch_size, device, stack):
    if device == "cpu":
        raise NotImplementedError("TorchBench's tacotron2 raises NotImplementedError on cpu"
                                  " (load_model assumes CUDA)")
    raise RuntimeError("tacotron2-minimal (LJSpeech wavs, Git LFS) is absent and librosa, which"
                       " its loader's mel spectrogram needs, is not installed")
