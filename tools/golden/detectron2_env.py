"""Makes detectron2 importable from a source checkout for the golden adapters.

detectron2 is not on PyPI. TorchBench pins commit c470ca3; its Python code runs
from the source tree without building anything once three things are in place:

  - the package is loaded from the tree: `--detectron2-root DIR` of the
    make_*golden.py scripts or the DETECTRON2_ROOT environment variable (a
    checkout of facebookresearch/detectron2 at c470ca3, outside this
    repository). setup() imports DIR/detectron2 as the package `detectron2`
    with importlib (its submodules are then found through the package's own
    __path__), so sys.path is left as it is;
  - `detectron2._C` (the compiled deformable-conv / rotated-box ops, which none
    of TorchBench's configurations call) exists as an empty module, because
    detectron2.layers imports it unconditionally;
  - PIL.Image.LINEAR, removed in Pillow 10, is an alias of BILINEAR (the value
    it always had), because detectron2.data.transforms names it in a default
    argument.
Its Python dependencies are pinned in tools/requirements.txt (fvcore, iopath,
omegaconf 2.1.1 as TorchBench pins it, pycocotools, ...).
"""

import importlib.util
import os
import sys
import types


def setup(root=None):
    """Imports the detectron2 package of the checkout at `root` (default:
    $DETECTRON2_ROOT) and returns it; a detectron2 already imported is kept."""
    root = root or os.environ.get("DETECTRON2_ROOT")
    package = os.path.join(root, "detectron2") if root else None
    if not package or not os.path.isdir(package):
        raise SystemExit(
            "detectron2 source checkout not found: pass --detectron2-root or set "
            "DETECTRON2_ROOT to a checkout of facebookresearch/detectron2 at c470ca3")
    sys.modules.setdefault("detectron2._C", types.ModuleType("detectron2._C"))
    from PIL import Image

    if not hasattr(Image, "LINEAR"):
        Image.LINEAR = Image.BILINEAR
    if "detectron2" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "detectron2", os.path.join(package, "__init__.py"),
            submodule_search_locations=[package])
        module = importlib.util.module_from_spec(spec)
        sys.modules["detectron2"] = module  # as the import system does, before running it
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules["detectron2"]
            raise
    import detectron2

    return detectron2
