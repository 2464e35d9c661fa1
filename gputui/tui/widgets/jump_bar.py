"""The `:` prompt as a bar over the bottom of a data screen (k9s-style), not a screen of its own.

A modal screen dims and re-renders everything under it when it opens and when it closes (a few
hundred ms at 1k nodes); a bar in the screen's overlay layer moves nothing underneath, so opening
it repaints two lines.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widget import Widget
from textual.widgets import Input, Label

from gputui.tui.screens.jump import HELP, SUGGESTIONS


class JumpBar(Vertical):
    """Hidden until `open()`; Enter posts `Chosen(text)`, Esc closes; focus goes back where it was."""

    DEFAULT_CSS = """
    JumpBar { layer: overlay; dock: bottom; height: 2; margin-bottom: 1; display: none; }
    JumpBar.-shown { display: block; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]

    class Chosen(Message):
        """What was typed after `:` (the app resolves it)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self._return_to: Widget | None = None

    def compose(self) -> ComposeResult:
        yield Label(HELP, id="jump-help")
        yield Input(placeholder=":", id="jump-input", suggester=SuggestFromList(SUGGESTIONS, case_sensitive=False))

    @property
    def is_open(self) -> bool:
        return self.has_class("-shown")

    def open(self, prefill: str = "") -> None:
        if not self.is_open:
            self._return_to = self.screen.focused
        self.add_class("-shown")
        field = self.query_one(Input)
        field.value = prefill
        field.cursor_position = len(prefill)
        field.focus()

    def close(self) -> None:
        self.remove_class("-shown")
        back = self._return_to
        self._return_to = None
        if back is not None and back.is_attached and back.focusable:
            back.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value
        self.close()
        self.post_message(self.Chosen(text))

    def action_cancel(self) -> None:
        self.close()
