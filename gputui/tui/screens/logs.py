"""`l`: a container's log, followed (k9s's `l`; `p` previous run, `s` autoscroll), read in a worker.

Lines arrive on a worker thread and wait in a list that a UI timer drains every 100 ms, so a chatty
container costs one widget update per tick, never one per line. A line is made visible (escape
sequences shown, never interpreted) before it reaches the screen. A `p` or a new source starts a new
reader; the old one notices its generation is gone at its next line and stops (it is a daemon thread:
closing the screen or quitting never waits for a quiet container).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Header, Log, OptionList, Static
from textual.widgets.option_list import Option

from gputui.output.sanitize import visible
from gputui.tui.log_sources import LogSource

TAIL_LINES = 500
"""Lines read back when a log opens (kubectl logs --tail; k9s shows the last 100 by default)."""
LINE_LIMIT = 4000
"""Characters of one log line shown (a minified JSON blob is cut, with a marker)."""


class LogsScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", show=True),
        Binding("p", "previous", "Previous run", show=True),
        Binding("s", "autoscroll", "Autoscroll", show=True),
        Binding("c", "copy", "Copy", show=True),
    ]

    def __init__(self, source: LogSource, api: Any, *, previous: bool = False, follow: bool = True) -> None:
        super().__init__()
        self.source = source
        self.api = api
        self.previous = previous
        self.follow = follow
        self.lines_shown = 0
        self.state = "connecting"
        self._pending: list[str] = []
        self._lock = threading.Lock()
        self._gen = 0
        self.busy = True
        """True until the first answer (lines or an error) is on screen (tests wait for it)."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="logs-status")
        yield Log(id="log", max_lines=20_000, highlight=False)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.sub_title = visible(self.source.label, limit=200)
        self.set_interval(0.1, self._drain)
        self._restart()

    def on_unmount(self) -> None:
        self._gen += 1  # the reader stops at its next line

    def _restart(self) -> None:
        self._gen += 1
        with self._lock:
            self._pending.clear()
        self.query_one(Log).clear()
        self.lines_shown = 0
        self.state = "connecting"
        self.busy = True
        self._show_status()
        # A daemon thread, not a Textual worker: a followed log blocks in a read for as long as the
        # container is quiet, and the app must be able to quit (or close this screen) meanwhile.
        threading.Thread(target=self.read, args=(self._gen, self.source.keep()), name="log-reader",
                         daemon=True).start()

    def read(self, gen: int, keep: Callable[[str], bool] | None) -> None:
        from gputui.kube.api import KubeError

        src = self.source
        path = f"/api/v1/namespaces/{src.namespace}/pods/{src.pod}/log"
        query: list[tuple[str, Any]] = [("container", src.container), ("tailLines", TAIL_LINES)]
        if self.previous:
            query.append(("previous", "true"))
        follow = self.follow and not self.previous
        if follow:
            query.append(("follow", "true"))
        try:
            self._set_state(gen, "following" if follow else "read")
            for raw in self.api.stream(path, query, read_timeout=3600, keep_blank=True):
                if gen != self._gen:
                    return
                line = raw.decode("utf-8", "replace").rstrip("\r")
                if keep is not None and not keep(line):
                    continue
                with self._lock:
                    self._pending.append(visible(line, limit=LINE_LIMIT))
            self._set_state(gen, "ended (container stopped)" if follow else "read")
        except KubeError as exc:
            self._set_state(gen, f"could not read: HTTP {exc.status} {exc.reason}: {exc.message}"[:300])
        except Exception as exc:  # a reader must never take the TUI down
            self._set_state(gen, f"could not read: {type(exc).__name__}: {exc}"[:300])

    def _set_state(self, gen: int, state: str) -> None:
        if gen == self._gen:
            self.state = state

    def _drain(self) -> None:
        with self._lock:
            lines, self._pending = self._pending, []
        if lines:
            self.query_one(Log).write_lines(lines)
            self.lines_shown += len(lines)
        if self.state != "connecting":
            self.busy = False
        self._show_status()

    def _show_status(self) -> None:
        log = self.query_one(Log)
        t = Text()
        t.append("previous run" if self.previous else "current run", style="bold cyan")
        t.append(" · ")
        bad = self.state.startswith("could not")
        t.append(visible(self.state), style="bold red" if bad else "green" if self.state == "following" else "")
        t.append(f" · {self.lines_shown} lines", style="dim")
        if self.source.about:
            t.append(" (only lines about " + ", ".join(sorted(n for v in self.source.about.values() for n in v))
                     + ")", style="dim")
        t.append(f" · autoscroll {'on' if log.auto_scroll else 'off'}", style="dim")
        self.query_one("#logs-status", Static).update(t)

    def action_previous(self) -> None:
        self.previous = not self.previous
        self._restart()

    def action_autoscroll(self) -> None:
        log = self.query_one(Log)
        log.auto_scroll = not log.auto_scroll
        self._show_status()

    def action_copy(self) -> None:
        text = "\n".join(str(line) for line in self.query_one(Log).lines)
        if text:
            self.app.copy_to_clipboard(text)
            self.notify(f"Copied {self.lines_shown} lines.")


class PickScreen(ModalScreen[int | None]):
    """Pick one of several: a container (or which of a node's pods) to read, a context, a namespace.
    Returns the index chosen, None on Esc."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", show=True),
        Binding("j", "down", "Down", show=False),
        Binding("k", "up", "Up", show=False),
    ]

    def __init__(self, title: str, labels: list[str]) -> None:
        super().__init__()
        self.title_text = title
        self.labels = labels

    def compose(self) -> ComposeResult:
        from textual.containers import Vertical

        with Vertical(classes="modal-box"):
            yield Static(Text(visible(self.title_text, limit=200)), classes="modal-title")
            yield OptionList(*(Option(Text(visible(label, limit=200)), id=str(i))
                               for i, label in enumerate(self.labels)), id="picker")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id or 0))

    def action_down(self) -> None:
        self.query_one(OptionList).action_cursor_down()

    def action_up(self) -> None:
        self.query_one(OptionList).action_cursor_up()

    def action_cancel(self) -> None:
        self.dismiss(None)
