"""Files the tools write and read back, as the program writes its own
(lib/program/atomic_file.h): a crash, a kill, Ctrl-C or a full disk never
leaves half of one.

- An output file (JSON, Markdown, HTML, text) is written to a temporary file
  beside it, flushed to disk and renamed over it (write_text, write_json, or
  replacing() for a writer that wants a path): a reader sees the old file or
  the new one, never a torn one, and a failed write leaves no temporary file.
- A JSON-lines file that grows (a journal) gets whole lines (append_line):
  one write under the file's lock, fsync'd; a torn last line that a killed
  writer left is cut off first (or, when it is a whole record that only lacks
  its newline, finished), so a new line never glues onto torn bytes.
- json_lines() reads such a file line by line: a torn last line (no newline,
  not JSON) is told apart from a corrupt whole line, so that a reader can
  skip the one with a note and refuse the other, each naming FILE:LINE.

Standard library only: merge.py runs without the project's .venv."""

import contextlib
import fcntl
import json
import os
import tempfile
from typing import NamedTuple


@contextlib.contextmanager
def replacing(path):
    """Yields a temporary path in `path`'s folder (created if needed); when
    the block ends normally the file there is fsync'd and renamed over
    `path` with the permissions open() would give a new file. When the block
    raises (or the rename fails), the temporary file is removed and `path`
    is left as it was. A target that is there and not a regular file
    (/dev/stdout, a pipe) is written in place: it cannot be renamed over."""
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        yield path
        return
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=directory)
    os.close(fd)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as open() would make it, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_directory(directory)


def _sync_directory(directory):
    """The rename itself on disk (best effort: not every file system can)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_text(path, text):
    """Writes `text` (str, UTF-8; or bytes) to `path` atomically."""
    with replacing(path) as tmp:
        if isinstance(text, bytes):
            with open(tmp, "wb") as f:
                f.write(text)
        else:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)


def write_json(path, doc, indent=2):
    """Writes `doc` as JSON (and a final newline) to `path` atomically."""
    with replacing(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=indent)
            f.write("\n")


class Line(NamedTuple):
    """One non-blank line of a JSON-lines file. where: "FILE:N"; value: the
    parsed JSON (None unless ok); problem: None, or why it is not JSON;
    torn: the file's last line, without its newline and not JSON: a
    writer killed mid-append, not a corrupt file."""
    where: str
    value: object
    problem: str
    torn: bool

    @property
    def ok(self):
        return self.problem is None


def json_lines(path, text):
    """The Lines of `text`, the content of the JSON-lines file `path`. A
    last line without its newline that parses is whole (its writer died
    after the record, before the newline) and ok."""
    lines = text.split("\n")
    # The piece after the last "\n" ("" when the file ends with one).
    last = len(lines)
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(Line(f"{path}:{n}", json.loads(line), None, False))
        except json.JSONDecodeError as e:
            torn = n == last
            problem = (f"cut short ({len(line.encode())} bytes without a newline: a writer "
                       "killed mid-line)" if torn else
                       f"not valid JSON ({e.msg} at column {e.colno})")
            out.append(Line(f"{path}:{n}", None, problem, torn))
    return out


def append_line(path, line):
    """Appends `line` (a str without newlines) and a newline to `path` as
    one write under an exclusive flock, fsync'd. A torn last line is first
    cut off (or, when it is whole JSON without its newline, finished); the
    return value says so ("" when the file ended cleanly). A write that
    fails (ENOSPC, EFBIG) is taken back: the file ends with its last whole
    line, and the OSError is raised."""
    data = (line + "\n").encode()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        note = _repair_tail(fd, path)
        before = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, before)
            raise
        return note
    finally:
        os.close(fd)  # and with it the lock


def _repair_tail(fd, path):
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return ""
    # The torn line starts after the last newline; records are kilobytes.
    end, cut = size, 0
    while end > 0:
        start = max(0, end - 65536)
        block = os.pread(fd, end - start, start)
        i = block.rfind(b"\n")
        if i >= 0:
            cut = start + i + 1
            break
        end = start
    tail = os.pread(fd, size - cut, cut)
    try:
        json.loads(tail)
        os.write(fd, b"\n")
        return f"{path}: its last line lacked its newline; finished it"
    except (ValueError, UnicodeDecodeError):
        os.ftruncate(fd, cut)
        return f"{path}: cut off {size - cut} bytes of a line cut short by a killed writer"
