"""The `/` filter input: shown on demand, filters as you type, Enter keeps it, Esc clears it."""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class FilterBar(Input):
    """Posts `FilterChanged(text)` on every keystroke and `FilterDone` on Enter/Esc; hidden until opened.

    It lies over the footer (the screen's overlay layer): showing or hiding it moves no table, so `/`
    and Esc repaint one line instead of laying out and redrawing every table under it.
    """

    DEFAULT_CSS = """
    FilterBar { display: none; border: none; height: 1; padding: 0 1; margin: 0; layer: overlay; dock: bottom; }
    FilterBar:focus { border: none; }
    FilterBar.-shown { display: block; }
    """
    BINDINGS = [Binding("escape", "clear_filter", "Clear filter", show=True)]

    class FilterChanged(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class FilterDone(Message):
        """Enter or Esc: the screen puts focus back where it was."""

    def __init__(self, id: str | None = None) -> None:
        super().__init__(placeholder="filter: text, or label key=value (Enter keeps, Esc clears)", id=id)

    def open(self) -> None:
        self.add_class("-shown")
        self.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.FilterChanged(event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not self.value:
            self.remove_class("-shown")
        self.post_message(self.FilterDone())

    def action_clear_filter(self) -> None:
        self.value = ""
        self.remove_class("-shown")
        self.post_message(self.FilterChanged(""))
        self.post_message(self.FilterDone())
