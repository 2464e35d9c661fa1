"""Textual's Footer, recomposed only when the keys it shows change.

Footer rebuilds all its key widgets whenever the screen's bindings may have changed, which is on
every focus move (`/`, `:`, Enter back to a table): a dozen widgets mounted and styled for a line
that usually reads the same, and twice for a prompt opened and closed again.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer, Input

from gputui.tui.widgets.filter_bar import FilterBar
from gputui.tui.widgets.jump_bar import JumpBar

PROMPTS = (FilterBar, JumpBar)
"""One-line prompts over the bottom of a screen; while one has focus the footer is left as it was."""


class SteadyFooter(Footer):
    def __init__(self, *, compact: bool = False, show_command_palette: bool = True) -> None:
        super().__init__(compact=compact, show_command_palette=show_command_palette)
        self._shown: tuple[object, ...] | None = None

    def bindings_changed(self, screen: Screen[object]) -> None:
        if self.is_attached and screen is self.screen and screen.app.app_focus:
            focused = screen.focused
            if isinstance(focused, Input) and any(isinstance(n, PROMPTS) for n in focused.ancestors_with_self):
                return  # a prompt (`/`, `:`) names its own keys; the footer keeps the screen's for its return
            shown = tuple((b.key, b.action, b.description, b.key_display, enabled, tooltip)
                          for _node, b, enabled, tooltip in screen.active_bindings.values() if b.show)
            if shown == self._shown and self._bindings_ready:
                return
            self._shown = shown
        super().bindings_changed(screen)
