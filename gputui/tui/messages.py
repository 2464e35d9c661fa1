"""App-wide messages: a new snapshot with its report, coalesced so a burst of changes renders once."""

from __future__ import annotations

from textual.message import Message

from diagnostics.model import Report
from diagnostics.snapshot import Snapshot


class SnapshotReady(Message):
    """Posted by the diagnose worker (from its thread) when a snapshot and its report are ready.

    Textual asks the message it is about to handle whether the next queued one supersedes it:
    a newer snapshot does, so a burst of changes renders once (only the newest matters).
    """

    def __init__(self, snapshot: Snapshot, report: Report | None, version: int, forced: bool = False,
                 error: str = "") -> None:
        super().__init__()
        self.snapshot = snapshot
        self.report = report
        """None when diagnostics raised (`error` says why): the tables still show the new data."""
        self.error = error
        self.version = version
        """The Store version the snapshot was cut at (older ones are ignored)."""
        self.forced = forced
        """True when the user asked for the re-run (`r`), so the app says it happened."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SnapshotReady) and message.version >= self.version and not self.forced


class DiagnosticsFailed(Message):
    """Cutting the snapshot itself failed: the last good data stays on screen, the status line says why."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error
