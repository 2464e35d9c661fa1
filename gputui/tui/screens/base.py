"""The frame every data screen shares: header, body, status line, footer; re-rendered per snapshot."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Header

from diagnostics.model import ObjectRef
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
        Binding("y", "yaml", "YAML", show=True),
    ]

    def __init__(self, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self.data_version = -1

    @property
    def gapp(self) -> GputuiApp:
        return cast("GputuiApp", self.app)

    def compose(self) -> ComposeResult:
        yield Header()
        yield from self.compose_body()
        yield StatusLine(id="status")
        yield Footer(compact=True, show_command_palette=False)

    def compose_body(self) -> ComposeResult:
        yield from ()

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
        status.update(status_text(app.snapshot, bundle_time=app.bundle_time, error=app.diagnose_error),
                      layout=False)

    def render_data(self) -> None:
        """Update widgets from `self.gapp.detail_snapshot` / `.report` (the snapshot is never None here)."""

    def selected_ref(self) -> ObjectRef | None:
        """The object under the cursor, for `y` (YAML) and `d` (debug pod)."""
        return None

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    def action_yaml(self) -> None:
        ref = self.selected_ref()
        if ref is None:
            self.notify("Select a row with an object first.", severity="warning")
            return
        self.gapp.show_yaml(ref)
