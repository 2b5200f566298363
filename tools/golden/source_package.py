"""Imports code from source checkouts outside this repository with importlib.

The golden adapters run libraries that are not installed (effdet,
dalle2_pytorch, TorchBench's own files): sys.path is left as it is, and the
package or file is loaded from its path instead.
"""

import importlib.util
import os
import sys


def import_package(name, directory, run_init=True):
    """Imports `directory` (which holds __init__.py) as the package `name`,
    registered in sys.modules, and returns it; its submodules are then found
    through the package's own __path__. With run_init False the package's
    __init__.py is not run (an empty package whose submodules import alone).
    A package `name` already imported is returned as it is."""
    if name in sys.modules:
        return sys.modules[name]
    directory = os.fspath(directory)
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(directory, "__init__.py"), submodule_search_locations=[directory])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as the import system does, before running it
    if run_init:
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return module


def load_module(name, path):
    """Runs the single file `path` as a module named `name` and returns it
    (not registered in sys.modules)."""
    spec = importlib.util.spec_from_file_location(name, os.fspath(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
