"""The torchbench program: where it is, its command line, its listings."""

import os
import subprocess

from tbench import errors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = os.path.join(ROOT, "build", "benchmarks", "torchbench")
# POSIX extended regular expressions' metacharacters (the program matches
# --benchmark_filter with std::regex::extended): each escaped with a
# backslash. ] and } are literal without their opening partner, and a
# backslash before an ordinary character is undefined in POSIX (libstdc++
# refuses it under strict ISO C++), so nothing else is escaped.
_METACHARACTERS = set(".[\\()*+?{|^$")


def escape(text):
    """`text` as a regular expression that matches exactly it."""
    return "".join("\\" + c if c in _METACHARACTERS else c for c in text)


def exactly(names):
    """A --benchmark_filter that selects exactly these instance names: ^name$
    for one, as the program documents it, ^(a|b)$ for several."""
    names = [escape(n) for n in names]
    return f"^{names[0]}$" if len(names) == 1 else "^(" + "|".join(names) + ")$"


def filter_flag(names):
    return f"--benchmark_filter={exactly(names)}"


def one_step_flags(steps, out=None):
    """Flags that make each repetition one step (after the program's
    warm-up), every repetition in the JSON: each time is one step."""
    flags = [f"--benchmark_repetitions={steps}", "--benchmark_min_time=1e-9",
             "--benchmark_report_aggregates_only=false"]
    if out:
        flags += json_out(out)
    return flags


def json_out(path):
    return [f"--benchmark_out={path}", "--benchmark_out_format=json"]


def list_tests(binary, args, timeout=300, env=None):
    """The instance names the program lists for `args`; raises InputError
    with its last stderr line when it refuses."""
    proc = subprocess.run([binary, *args, "--benchmark_list_tests"], capture_output=True,
                          text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise errors.InputError(f"{binary} cannot list the selection: "
                                f"{errors.last_line(proc.stderr, '?')}")
    return [line.strip() for line in proc.stdout.splitlines() if line.count("/") == 2]
