"""Signals during a debug run: SIGTERM, SIGHUP and SIGQUIT unwind like Ctrl-C (so `finally` deletes the pod), and a
second Ctrl-C cannot cut the deletion short."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["Terminated", "cleanup_shielded", "sigterm_as_interrupt"]


class Terminated(KeyboardInterrupt):
    """Raised by SIGTERM; a KeyboardInterrupt so every handler written for Ctrl-C also runs."""


_TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name))
"""Signals that unwind as Terminated. SIGQUIT (Ctrl-\\) too: its default dumps core and skips `finally`,
leaving the pod behind (activeDeadlineSeconds only stops its container; a Failed pod stays)."""


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises Terminated and SIGINT KeyboardInterrupt, even if the process was started
    with SIGINT ignored (`nohup`, a non-interactive shell's `&`): a signal must unwind, not orphan the pod.
    Main thread only; elsewhere a no-op."""
    if not _main_thread():
        yield
        return
    # SIGHUP too: a dropped ssh session or a closed terminal would otherwise kill the process
    # without `finally`, and activeDeadlineSeconds stops the container but never deletes the pod.
    previous = {s: signal.signal(s, _raise_terminated) for s in _TERMINATING}
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


@contextmanager
def cleanup_shielded(reraise: bool = True) -> Iterator[None]:
    """Hold SIGINT/SIGTERM while cleaning up; then re-raise one that arrived (unless `reraise` is False,
    e.g. because the cleanup runs for an interrupt already)."""
    if not _main_thread():
        yield
        return
    caught: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)

    previous = {s: signal.signal(s, hold) for s in (signal.SIGINT, *_TERMINATING)}
    unwinding = False
    try:
        yield
    except BaseException:
        unwinding = True
        raise
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        if caught and reraise and not unwinding:
            raise Terminated() if caught[0] in _TERMINATING else KeyboardInterrupt()
