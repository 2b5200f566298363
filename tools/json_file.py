"""Writing a JSON result file so that a reader never sees half of it.

The tools that write results (merge.py, batch_search.py) write a temporary
file beside the target, flush it to disk and rename it over the target: a
crash or Ctrl-C leaves the old file or the new one, never a torn one.
Standard library only (merge.py runs without the project's .venv).
"""
import json
import os
import tempfile


def write_atomically(path, doc, indent=2):
    """Writes `doc` as JSON to `path`, creating its folder if needed."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=indent)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as open() would make it, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
