"""App-wide messages: a new frame of data with its report, coalesced so a burst of changes renders once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

from diagnostics.model import Report
from diagnostics.snapshot import Snapshot

if TYPE_CHECKING:
    from gputui.tui.overview_model import Frame


class SnapshotReady(Message):
    """Posted by the frame worker (from its thread) when the tables for a new store version are ready.

    Textual asks the message it is about to handle whether the next queued one supersedes it:
    a newer snapshot does, so a burst of changes renders once (only the newest matters).
    """

    def __init__(self, snapshot: Snapshot, report: Report | None, version: int, forced: bool = False,
                 error: str = "", frame: Frame | None = None) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.report = report
        """The newest good report (None until diagnostics first ran): it may be older than the snapshot."""
        self.error = error
        self.version = version
        """The Store version the snapshot was cut at (older ones are ignored)."""
        self.forced = forced
        """True when the user asked for the re-run (`r`), so the app says it happened."""
        self.frame = frame
        """The overview's rows at `version` and the diagnosis they carry."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SnapshotReady) and message.version >= self.version and not self.forced


class DiagnosticsFailed(Message):
    """Cutting the snapshot itself failed: the last good data stays on screen, the status line says why."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class DiagnosisDone(Message):
    """The diagnostics worker finished a run: frame it now rather than at the next poll."""
