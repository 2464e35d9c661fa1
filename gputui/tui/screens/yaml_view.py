"""`y`: an object's full YAML, fetched from the API in a worker when opened (managedFields dropped)."""

from __future__ import annotations

from typing import Any

import yaml
from rich.console import RenderableType
from rich.syntax import Syntax
from textual.binding import Binding

from gputui.tui.screens.fetched import FetchedObjectScreen


def clean(obj: Any) -> Any:
    """Drop `metadata.managedFields`: pages of noise nobody reads while on call."""
    if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
        obj = dict(obj)
        obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return obj


def to_yaml(obj: Any) -> str:
    return yaml.safe_dump(clean(obj), sort_keys=False, allow_unicode=True, width=120)


class YamlScreen(FetchedObjectScreen):
    """Shows the cached (projected) object at once when there is one, then the full object from the API."""

    KIND = "yaml"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", show=True),
        Binding("c", "copy", "Copy YAML", show=True),
    ]

    def render_object(self, obj: Any) -> tuple[str, RenderableType]:
        text = to_yaml(obj)
        return text, Syntax(text, "yaml", theme="ansi_dark", background_color="default", word_wrap=True)

    def action_copy(self) -> None:
        if self.text:
            self.app.copy_to_clipboard(self.text)
            self.notify(f"Copied the YAML of {self.ref}.")
