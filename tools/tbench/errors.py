"""Bad input, said in one line: what every tool's exit status 2 means.

A user who mistyped a flag or gave the wrong file reads one line naming
the tool and the problem, never a traceback; a traceback is for a bug."""

import argparse
import os
import sys
import traceback


class InputError(Exception):
    """Bad input (a file, a flag, a program that cannot list): one line,
    exit status 2."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors follow the tools' contract: `tool: message`
    on one line and exit status 2 (argparse prints two lines). with_usage
    prints argparse's usage first (merge and batch-search always have);
    status is the exit status (make_reference's is 1)."""

    def __init__(self, *args, tool, with_usage=False, status=2, **kwargs):
        super().__init__(*args, **kwargs)
        self.tool, self.with_usage, self.status = tool, with_usage, status

    def error(self, message):
        if self.with_usage:
            self.print_usage(sys.stderr)
        self.exit(self.status, f"{self.tool}: {message}\n")

    def check_batch_size(self, text):
        """--batch-size as versus-python, flops-check and compile take it: a
        positive integer or `default` (each model's own); else a usage error."""
        if text != "default" and not (text.isdigit() and int(text) > 0):
            self.error(f"--batch-size must be a positive integer or 'default', not {text}")


def last_line(text, default=""):
    """The last non-blank line of a child's stderr: where a program, a
    compiler or Python says why it stopped."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else default


def one_line(error, limit=None):
    """An exception as `Type: first line of its message` (a reason in a
    table row or an exit message, not a traceback)."""
    text = f"{type(error).__name__}: {error}".splitlines()[0]
    return text[:limit] if limit else text


def reason(error, limit=300):
    """An exception in one line (one_line, at most `limit` characters); one
    without a message (NotImplementedError()) says where it was raised: a
    failed instance's reason in a tool's results."""
    cause = error.__cause__ if error.__cause__ and not str(error.__cause__) else error
    text = one_line(error, limit)
    if not str(cause) and cause.__traceback__ is not None:
        frame = traceback.extract_tb(cause.__traceback__)[-1]
        text += (f"{' ' if str(error) else ''}(raised in {frame.name} at "
                 f"{os.path.basename(frame.filename)}:{frame.lineno})")
    return text[:limit]


def exit_one_line(tool, error):
    """Exits with status 1 and `tool: error: Type: message` for a failure
    the tool has no better words for (make_golden, make_reference)."""
    message = str(error).splitlines()[0] if str(error) else type(error).__name__
    sys.exit(f"{tool}: error: {type(error).__name__}: {message}")
