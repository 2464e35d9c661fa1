"""`y`: an object's full YAML, fetched from the API in a worker when opened (managedFields dropped)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from diagnostics.model import ObjectRef


def clean(obj: Any) -> Any:
    """Drop `metadata.managedFields`: pages of noise nobody reads while on call."""
    if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
        obj = dict(obj)
        obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return obj


def to_yaml(obj: Any) -> str:
    return yaml.safe_dump(clean(obj), sort_keys=False, allow_unicode=True, width=120)


class YamlScreen(Screen[None]):
    """Shows the cached (projected) object at once when there is one, then the full object from the API."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", show=True),
        Binding("c", "copy", "Copy YAML", show=True),
    ]

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
        with VerticalScroll(id="yaml-body"):
            yield Static(Text(f"loading {self.ref}…", style="dim"), id="yaml")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#yaml-body").focus()
        if self.cached is not None:
            note = ("as stored in the bundle (slimmed: gputui keeps what it shows and checks)"
                    if self.fetch is None else "cached copy (slimmed); fetching the full object…")
            self.show(self.cached, note)
        elif self.fetch is None:
            self.show(None, f"{self.ref} is not in this snapshot")
        if self.fetch is not None:
            self.load()

    @work(thread=True, exclusive=True, group="yaml", exit_on_error=False)
    def load(self) -> None:
        from gputui.kubeapi import KubeError

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
        if note:
            parts.append(Text(note, style="bold red" if error else "dim"))
        if obj is not None:
            self.text = to_yaml(obj)
            parts.append(Syntax(self.text, "yaml", theme="ansi_dark", background_color="default",
                                word_wrap=True))
        self.query_one("#yaml", Static).update(Group(*parts))

    def action_copy(self) -> None:
        if self.text:
            self.app.copy_to_clipboard(self.text)
            self.notify(f"Copied the YAML of {self.ref}.")
