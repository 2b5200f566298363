"""Makes detectron2 importable from a source checkout for the golden adapters.

detectron2 is not on PyPI. TorchBench pins commit c470ca3; its Python code runs
from the source tree without building anything once three things are in place:

  - the tree is on sys.path: `--detectron2-root DIR` of make_golden.py or the
    DETECTRON2_ROOT environment variable (a checkout of
    facebookresearch/detectron2 at c470ca3, outside this repository);
  - `detectron2._C` (the compiled deformable-conv / rotated-box ops, which none
    of TorchBench's configurations call) exists as an empty module, because
    detectron2.layers imports it unconditionally;
  - PIL.Image.LINEAR, removed in Pillow 10, is an alias of BILINEAR (the value
    it always had), because detectron2.data.transforms names it in a default
    argument.
Its Python dependencies are pinned in tools/requirements.txt (fvcore, iopath,
omegaconf 2.1.1 as TorchBench pins it, pycocotools, ...).
"""

import os
import sys
import types


def setup(root=None):
    """Puts detectron2 on sys.path; returns the detectron2 package."""
    root = root or os.environ.get("DETECTRON2_ROOT")
    if not root or not os.path.isdir(os.path.join(root, "detectron2")):
        raise SystemExit(
            "detectron2 source checkout not found: pass --detectron2-root or set "
            "DETECTRON2_ROOT to a checkout of facebookresearch/detectron2 at c470ca3")
    if root not in sys.path:
        sys.path.insert(0, root)
    sys.modules.setdefault("detectron2._C", types.ModuleType("detectron2._C"))
    from PIL import Image

    if not hasattr(Image, "LINEAR"):
        Image.LINEAR = Image.BILINEAR
    import detectron2

    return detectron2
