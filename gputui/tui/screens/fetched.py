"""A screen that shows one object at once from the cache, then in full from the API (`y`, `d`).

The fetch runs in a worker, never on the UI thread; a failed fetch keeps the cached copy on screen
and says why. Subclasses say only how an object is rendered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from diagnostics.model import ObjectRef
from gputui.output.sanitize import visible


class FetchedObjectScreen(Screen[None]):
    KIND: ClassVar[str] = ""
    """Names the body's ids (`#<kind>-body`, `#<kind>`) and the worker group."""

    def __init__(self, ref: ObjectRef, fetch: Callable[[], Any] | None, cached: Any = None) -> None:
        super().__init__()
        self.ref = ref
        self.fetch = fetch
        self.cached = cached
        self.text = ""
        self.busy = fetch is not None
        """True until the API answered (tests and screenshots wait for it)."""

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id=f"{self.KIND}-body"):
            yield Static(Text(f"loading {visible(self.ref)}…", style="dim"), id=self.KIND)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one(f"#{self.KIND}-body").focus()
        if self.cached is not None:
            note = ("as stored in the bundle (slimmed: gputui keeps what it shows and checks)"
                    if self.fetch is None else "cached copy (slimmed); fetching the full object…")
            self.show(self.cached, note)
        elif self.fetch is None:
            self.show(None, f"{self.ref} is not in this snapshot", error=True)
        if self.fetch is not None:
            self.run_worker(self.load, thread=True, exclusive=True, group=self.KIND, exit_on_error=False)

    def load(self) -> None:
        from gputui.kube.api import KubeError

        assert self.fetch is not None
        try:
            obj = self.fetch()
        except KubeError as exc:
            note = f"could not fetch {self.ref}: HTTP {exc.status} {exc.reason}: {exc.message}"[:300]
            if self.cached is not None:
                note += " - showing the cached copy"
            self.app.call_from_thread(self.show, self.cached, note, True)
        else:
            self.app.call_from_thread(self.show, obj, "")
        self.busy = False

    def show(self, obj: Any, note: str, error: bool = False) -> None:
        parts: list[RenderableType] = []
        if note:  # the API's message is cluster text: shown, never interpreted
            parts.append(Text(visible(note), style="bold red" if error else "dim"))
        if obj is not None:
            self.text, body = self.render_object(obj)
            parts.append(body)
        self.query_one(f"#{self.KIND}", Static).update(Group(*parts))

    def render_object(self, obj: Any) -> tuple[str, RenderableType]:
        """The object as copyable text and as shown."""
        raise NotImplementedError
