"""A Rich console for command output that survives `| head` and keeps piped output plain."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from rich.console import Console


class PipeSafeConsole(Console):
    def on_broken_pipe(self) -> None:
        # Rich's default raises SystemExit(1), which would turn `gputui diagnose | head` into a failure
        # and hide the exit code by severity; let the caller finish quietly instead.
        raise BrokenPipeError


def stdout_console() -> Console:
    """Terminal: colour and wrapping at its width. Piped: no colour codes, no hard wraps (grep-able)."""
    tty = sys.stdout.isatty()
    return PipeSafeConsole(soft_wrap=not tty, width=None if tty else 200)


@contextlib.contextmanager
def reader_may_leave() -> Iterator[None]:
    """If the reader of stdout goes away, stop writing and carry on (the exit code still counts)."""
    try:
        yield
    except BrokenPipeError:
        stdout_to_devnull()


def stdout_to_devnull() -> None:
    """The reader of stdout left (`| head`): what is still written, and the flush at exit, go nowhere
    instead of failing again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
