"""`d`: a debug pod's nvidia-smi run on one node, streamed live; Esc cancels (the pod is always deleted)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, RichLog

if TYPE_CHECKING:
    from gputui.tui.app import GputuiApp


class DebugScreen(Screen[None]):
    """Runs `gputui.debugpod.run.run_debug` in a thread worker and shows its output as it arrives."""

    BINDINGS = [Binding("escape", "back", "Cancel / back", show=True)]

    def __init__(self, node: str, namespace: str | None, context_namespace: str | None) -> None:
        super().__init__()
        self.node = node
        self.namespace = namespace
        self.context_namespace = context_namespace
        self.cancel = threading.Event()
        self.done = False
        self.busy = True
        """True while the pod runs (tests and screenshots wait for it)."""
        self.result: Any = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield RichLog(id="debug-log", wrap=True, markup=False, highlight=False)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        log = self.log_widget = self.query_one(RichLog)
        log.write(Text(f"Starting a debug pod on {self.node}… (Esc cancels; the pod is always deleted)",
                       style="bold"), expand=True)
        self.run()

    @work(thread=True, exclusive=True, group="debugpod", exit_on_error=False)
    def run(self) -> None:
        from gputui.debugpod.run import run_debug

        app = cast("GputuiApp", self.app)
        session = app.session
        assert session is not None
        log = self.log_widget

        def line(text: str, style: str = "") -> None:
            app.call_from_thread(log.write, Text(text, style=style), expand=True)

        try:
            result = run_debug(session.api, self.node, namespace=self.namespace,
                               context_namespace=self.context_namespace, on_output=line,
                               on_status=lambda s: line(s, "dim"), cancel=self.cancel, store=session.store)
        except Exception as exc:  # DebugUsageError, Unreachable: say it, never crash the TUI
            line(f"Debug pod on {self.node} failed: {exc}", "bold red")
            app.call_from_thread(self._finished, None)
            return
        app.call_from_thread(self._finished, result)

    def _finished(self, result: Any) -> None:
        self.done = True
        self.busy = False
        self.result = result
        if result is None:
            return
        log = self.query_one(RichLog)
        log.write(Text(""))
        render = getattr(result, "render", None)
        log.write(render() if callable(render) else Text(str(result)), expand=True)
        summary = getattr(result, "summary", "")
        if summary:
            self.notify(str(summary), title=f"Debug pod on {self.node}", timeout=8)

    def action_back(self) -> None:
        if not self.done:
            self.cancel.set()
            self.log_widget.write(Text("Cancelling: deleting the debug pod…", style="yellow"), expand=True)
            return
        self.app.pop_screen()
