"""hf_BigBird: TorchBench's HuggingFaceModel("hf_BigBird")
(AutoModelForMaskedLM.from_config(BigBirdConfig(attention_type="block_sparse")),
transformers 5.24.0 BigBirdForMaskedLM) and its own eval() and train(), on a
smaller configuration (model_factory's class_models row evaluates a
BigBirdConfig that also sets GOLDEN); see tools/golden/hf_common.py. The
counts test covers the full network.

Three runs, each on a freshly built and filled Model (the reference's switch
to full attention is permanent per network):
  ""                length 1024: Train's random blocks from the old plan
                    (_bigbird_block_rand_mask), Eval's all block 0
  "padded:"         length 819 (TorchBench's CPU Eval length), padded to 832:
                    the plan-based random blocks (_bigbird_block_rand_mask_with_head)
  "original_full:"  length 64 <= 704: BigBirdModel switches to original_full
"""

import hf_common

MODEL = "hf_BigBird"
REFERENCE = ("torchbenchmark/models/hf_BigBird: HuggingFaceModel.__init__, .eval, .train"
             " (transformers 5.24.0 BigBirdForMaskedLM, attention_type block_sparse)")
MODE = "train"
BATCH_SIZE = 1
DTYPE = "float32"
GOLDEN = {"num_hidden_layers": 2, "vocab_size": 1024}
RUNS = [("", 1024), ("padded:", 819), ("original_full:", 64)]
NOTES = [
    "every nn.Dropout's p set to 0 and the config's dropout rates 0 (the full-attention module the"
    " reference builds when it switches reads the config)",
    f"BigBirdConfig(attention_type=\"block_sparse\", **{GOLDEN}): 2 of 12 layers and a 1024-token"
    " vocabulary (block size 64, 3 random blocks, widths, heads, 4096 positions as the benchmark),"
    " to keep the CPU check short",
    "input_ids, labels: fill integers in [0, 1024) of shape 1xLENGTH, LENGTH 1024 (keys without"
    " prefix), 819 ('padded:'), 64 ('original_full:'); a fresh filled Model for each",
    "eval_output: HuggingFaceModel.eval() (logits under no_grad, model in eval mode)",
    "output, loss, grad:*: the first HuggingFaceModel.train() call (model(input_ids, labels),"
    " loss.backward(), Adam(lr=1e-3).step()); gradients taken just before the step",
    "after_1_step:*: the same parameters after that step",
]
PARAMETERS = [
    "bert.embeddings.word_embeddings.weight",
    "bert.encoder.layer.0.attention.self.query.weight",
    "bert.encoder.layer.1.attention.self.key.weight",
    "bert.encoder.layer.1.attention.self.value.weight",
    "cls.predictions.transform.dense.weight",
    "cls.predictions.bias",
]


def compute(root):
    import sys

    import reference
    from transformers import BigBirdConfig

    def smaller(**kwargs):
        assert kwargs == {"attention_type": "block_sparse"}, kwargs
        return BigBirdConfig(**kwargs, **GOLDEN, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)

    # model_factory evaluates its row's 'BigBirdConfig(attention_type="block_sparse",)' after a
    # local `from transformers import BigBirdConfig` (which a patched transformers attribute does
    # not reach: the lazy module answers the import itself), so the row's expression is pointed
    # at `smaller` instead, under another name.
    reference.load_model_package(root, MODEL)
    rows = sys.modules[hf_common.FACTORY].class_models
    row = rows[MODEL]
    assert row[2] == 'BigBirdConfig(attention_type="block_sparse",)', row
    rows[MODEL] = (row[0], row[1], "Golden" + row[2], row[3])
    results = {}
    try:
        for prefix, length in RUNS:
            out = hf_common.compute(root, MODEL, PARAMETERS, config_override={"GoldenBigBirdConfig": smaller},
                                    batch_size=BATCH_SIZE, length=length, attn_implementation="eager")
            assert out["eval_output"].shape[-1] == GOLDEN["vocab_size"], out["eval_output"].shape
            results.update({prefix + key: value for key, value in out.items()})
    finally:
        rows[MODEL] = row
    return results
