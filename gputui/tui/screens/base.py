"""The frame every data screen shares: header, body, status line, footer; re-rendered per snapshot."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, cast

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget
from rich.text import Text
from textual.widgets import Header, Static

from diagnostics.model import ObjectRef
from diagnostics.snapshot import Snapshot
from gputui.tui.honesty import BAD, OK, LEVEL_STYLE, Sight, sight
from gputui.tui.widgets.footer import SteadyFooter
from gputui.tui.widgets.jump_bar import JumpBar
from gputui.tui.widgets.status_line import StatusLine, status_text

if TYPE_CHECKING:
    from gputui.tui.app import GputuiApp


class DataScreen(Screen[None]):
    """A screen that shows the app's latest snapshot/report.

    The app calls `refresh_data()` on the visible screen for every new diagnosis (and, when
    FOLLOWS_FRAMES, for every new frame; otherwise a frame only updates the status line); a screen
    that was covered catches up when it is shown again (`on_screen_resume`), so hidden screens cost
    nothing.
    """

    FOLLOWS_FRAMES = False
    """True for screens that show the newest rows (the overview), not only the diagnosed snapshot."""

    BINDINGS = [
        Binding("escape", "back", "Back", show=True),
        Binding("d", "describe", "Describe", show=True),
        Binding("y", "yaml", "YAML", show=True),
        Binding("l", "logs", "Logs", show=True),
        Binding("ctrl+d", "debug", "Debug pod", show=True),
    ]

    def __init__(self, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self.data_version = -1
        self._banner = ""

    @property
    def gapp(self) -> GputuiApp:
        return cast("GputuiApp", self.app)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="banner", classes="banner")
        yield from self.compose_body()
        yield StatusLine(id="status")
        yield SteadyFooter(compact=True, show_command_palette=False)
        yield JumpBar(id="jump")

    def on_jump_bar_chosen(self, event: JumpBar.Chosen) -> None:
        event.stop()
        self.gapp.jump_chosen(event.text)

    def compose_body(self) -> ComposeResult:
        yield from ()

    def _watch_maximized(self, previously: Widget | None, maximized: Widget | None) -> None:
        """Mark the maximized widget only. Textual also puts `-maximized-view` on the screen, a class
        change that re-matches the CSS of every widget on it (tens of ms at 1k nodes, for `:nodes` and
        again for Esc); our screens already lay out vertically and size a maximized table themselves."""
        if previously is not None:
            previously.remove_class("-maximized")
        if maximized is not None:
            maximized.add_class("-maximized")

    def on_mount(self) -> None:
        self.refresh_data()

    def on_screen_resume(self) -> None:
        if self.data_version != self.gapp.data_version:
            self.refresh_data()

    def refresh_data(self) -> None:
        app = self.gapp
        # Frames come from worker threads at any moment: a screen still composing or being torn
        # down (its widgets half gone) has nothing to update, and its mount draws the newest data.
        with contextlib.suppress(NoMatches):
            self.refresh_status()
            if app.snapshot is not None:
                with app.batch_update():
                    self.render_data()

    def refresh_status(self) -> None:
        app = self.gapp
        self.data_version = app.data_version
        try:
            status = self.query_one(StatusLine)
        except NoMatches:
            return  # composing or torn down (see refresh_data)
        # One line of fixed height: no relayout of the whole screen for it on every snapshot.
        status.update(status_text(app.snapshot, bundle_time=app.bundle_time, error=app.diagnose_error,
                                  read_only=app.read_only), layout=False)
        self._show_banner(app.snapshot)

    def _show_banner(self, snap: object) -> None:
        """Under the header: what cannot be seen and why, in red or yellow; hidden when all is current."""
        seen = sight(app_snapshot(snap), namespace=self.gapp.namespace)
        text = banner_text(seen, self.gapp.namespace_note)
        if text.plain == self._banner:
            return
        self._banner = text.plain
        try:
            banner = self.query_one("#banner", Static)
        except NoMatches:
            return
        self.set_class(seen.level == BAD, "-sight-bad")
        self.set_class(seen.level not in (OK, BAD), "-sight-warn")
        banner.set_class(seen.level == BAD, "-bad")
        banner.set_class(bool(text.plain), "-shown")
        banner.update(text)

    def render_data(self) -> None:
        """Update widgets from `self.gapp.detail_snapshot` / `.report` (the snapshot is never None here)."""

    def selected_ref(self) -> ObjectRef | None:
        """The object under the cursor, for `y` (YAML) and `d` (debug pod)."""
        return None

    def action_back(self) -> None:
        """Esc as in k9s: clear an open or non-empty filter first, then go back."""
        if self.clear_filter():
            return
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    def clear_filter(self) -> bool:
        """Clear this screen's filter bar when it is open or set; False when there was none to clear."""
        from gputui.tui.widgets.filter_bar import FilterBar

        try:
            bar = self.query_one(FilterBar)
        except NoMatches:
            return False
        if not (bar.value or bar.has_class("-shown")):
            return False
        bar.action_clear_filter()
        return True

    def action_yaml(self) -> None:
        ref = self.selected_ref()
        if ref is None:
            self.notify("Select a row with an object first.", severity="warning")
            return
        self.gapp.show_yaml(ref)

    def action_describe(self) -> None:
        """`d`, as in k9s: the object and its events, laid out as `kubectl describe` does."""
        ref = self.selected_ref()
        if ref is None:
            self.notify("Select a row with an object first.", severity="warning")
            return
        self.gapp.describe_ref(ref)

    def action_logs(self) -> None:
        """`l`, as in k9s: a pod's containers; for a node its GPU plugin pods and Karpenter's lines about it."""
        ref = self.selected_ref()
        if ref is None:
            self.notify("Select a row with an object first.", severity="warning")
            return
        self.gapp.show_logs(ref)

    def action_debug(self) -> None:
        self.notify("Select a GPU node (or an object on one) first.", severity="warning")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Read-only mode (and a bundle opened offline) hides the debug pod instead of offering it."""
        if action == "debug" and (self.gapp.read_only or self.gapp.session is None):
            return False
        return True

    def on_paste(self, event: events.Paste) -> None:
        """A pasted `:pods` or `/gpu-1` does what typing it does (the `:` was dropped before)."""
        text = event.text.strip()
        if text.startswith(":"):
            event.stop()
            self.gapp.action_jump(text[1:])
        elif text.startswith("/") and hasattr(self, "action_filter"):
            event.stop()
            self.open_filter(text[1:])

    def open_filter(self, text: str) -> None:
        from gputui.tui.widgets.filter_bar import FilterBar

        try:
            bar = self.query_one(FilterBar)
        except NoMatches:
            return
        bar.open()
        bar.value = text


def app_snapshot(snap: object) -> Snapshot | None:
    return snap if isinstance(snap, Snapshot) else None


def banner_text(seen: Sight, note: str = "") -> Text:
    """One line per reason (and the namespace note), styled by level; empty when all is well."""
    lines = list(seen.reasons) if seen.level != OK else []
    if note:
        lines.append(note)
    t = Text()
    style = LEVEL_STYLE[seen.level] if seen.level != OK else "bold yellow"
    for i, line in enumerate(lines):
        if i:
            t.append("\n")
        t.append(("✗ " if seen.level == BAD else "! ") + line, style=style)
    return t
