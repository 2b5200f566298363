"""BERT_pytorch: TorchBench's BERTLM through its own train() and eval()."""

import fill
import reference

MODEL = "BERT_pytorch"
REFERENCE = "torchbenchmark/models/BERT_pytorch: Model.__init__, Model.train, Model.eval"
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float32"
VOCAB = 20005  # len(WordVocab) the reference builds: 20000 words + 5 specials.
NOTES = [
    "dropout off on both sides (the reference keeps every dropout active, in eval() too)",
    "inputs filled: bert_input and bert_label in [0, 20005), segment_label in [0, 3), is_next in [0, 2)",
    "eval_output.*: Model.eval() (next_sentence, mask_lm); output.*, loss.* (next, mask), grad:*:"
    " the first train() call; after_2_steps:*: after two (ScheduledOptim Adam, warm-up lr)",
]


def compute(root):
    package = reference.load_model_package(root, MODEL)
    model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    trainer = model.model
    net = trainer.model  # BERTLM, which train() and eval() run.
    assert trainer.vocab_size if hasattr(trainer, "vocab_size") else True
    fill.deterministic_fill(net)
    reference.turn_off_dropout(net)
    batch, length = model.example_inputs[0].shape
    model.example_inputs = (
        fill.deterministic_long("bert_input", (batch, length), 0, VOCAB),
        fill.deterministic_long("segment_label", (batch, length), 0, 3),
    )
    model.is_next = fill.deterministic_long("is_next", (batch,), 0, 2)
    model.bert_label = fill.deterministic_long("bert_label", (batch, length), 0, VOCAB)
    results = {}
    reference.add_outputs("eval_output", model.eval(), results)
    reference.record_two_train_steps(net, trainer.optim, trainer.criterion, model.train, results)
    return results
