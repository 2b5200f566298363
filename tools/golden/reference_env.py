"""What TorchBench's own Model classes need from their environment here.

reference.build_step constructs each TorchBench-referenced model through
construct(): TorchBench's code runs unchanged, and where its __init__ reaches
for something this machine lacks, a stand-in takes its place for the
construction only:
  - a module the model imports but its step never runs (export, logging,
    data-set download code): an empty stand-in module;
  - a data folder install.py would have downloaded: synthetic files in the
    format and at the sizes the model reads, in a temporary DATA_PATH;
  - downloaded weights: the model's own initialisation (timing does not
    depend on the values, only on the shapes).
A model that cannot be built here says why in UNAVAILABLE.
"""

import reference

# model -> why TorchBench's Model cannot be built on this machine.
UNAVAILABLE = {}


def construct(root, name, mode, batch_size, device="cpu"):
    """TorchBench's torchbenchmark.models.<name>.Model(test=mode, device,
    batch_size), with the stand-ins the model needs here."""
    import reference_env_detection

    if name in UNAVAILABLE:
        raise RuntimeError(UNAVAILABLE[name])
    if name in reference_env_detection.CONSTRUCT:
        return reference_env_detection.CONSTRUCT[name](root, mode, batch_size, device)
    package = reference.load_model_package(root, name)
    return package.Model(test=mode, device=device, batch_size=batch_size)
