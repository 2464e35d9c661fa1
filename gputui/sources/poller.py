"""One worker thread per optional source (Prometheus, AWS): rounds never overlap, `refresh()` wakes it."""

from __future__ import annotations

import threading
from typing import Any

from diagnostics.snapshot import SourceState, SourceStatus


class PollerThread:
    """Thread plumbing shared by the pollers; a subclass provides `SOURCE_NAME` and `_loop`.

    The loop waits on `self._wake` (with its interval as timeout) and checks `self._stop`.
    """

    SOURCE_NAME = ""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.rounds = 0

    def start(self) -> None:
        self.store.set_status(SourceStatus(self.SOURCE_NAME, SourceState.LOADING))
        self._thread = threading.Thread(target=self._loop, name=f"gputui-{self.SOURCE_NAME}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def refresh(self) -> None:
        """Run the next round now (the TUI's refresh key)."""
        self._wake.set()

    def _loop(self) -> None:
        raise NotImplementedError
