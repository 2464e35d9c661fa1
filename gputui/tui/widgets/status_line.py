"""One line at the bottom of every screen: where the data comes from and how fresh each source is."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual.widgets import Static

from diagnostics.snapshot import KUBE_SOURCES, Snapshot, SourceState
from gputui.tui.honesty import LEVEL_STYLE, sight

STATE_STYLE = {
    SourceState.OK: "green",
    SourceState.STALE: "yellow",
    SourceState.LOADING: "dim",
    SourceState.NOT_CONFIGURED: "dim",
    SourceState.FORBIDDEN: "bold red",
    SourceState.ABSENT: "yellow",
    SourceState.UNREACHABLE: "bold red",
}


def _clock(dt: datetime | None) -> str:
    return dt.strftime("%H:%M:%S") if dt else "never"


def status_text(snap: Snapshot | None, *, bundle_time: datetime | None = None, error: str = "",
                read_only: bool = False) -> Text:
    """`● live · 9 sources ok · nodeclaims forbidden (list nodeclaims.karpenter.sh) · updated 10:00:03`.

    Healthy sources are counted, the others named with their state, so it fits 80 columns yet a
    forbidden or stale source is never hidden. The dot is green only when every source is current
    (gputui.tui.honesty): red when the API server is unreachable, yellow when stale or limited.
    """
    t = Text()
    if bundle_time is not None:
        t.append(f"bundle from {bundle_time.strftime('%Y-%m-%d %H:%M:%SZ')}", style="bold cyan")
    else:
        seen = sight(snap)
        t.append(seen.mark, style=LEVEL_STYLE[seen.level])
    if read_only:
        t.append(" · ", style="dim")
        t.append("read-only", style="bold cyan")
    if snap is None:
        if bundle_time is not None:
            t.append(" · loading…", style="dim")
        return t  # live: the dot already says "● connecting"
    ok = [s for s in snap.sources.values() if s.state is SourceState.OK]
    other = sorted((s for s in snap.sources.values() if s.state is not SourceState.OK), key=lambda s: s.name)
    t.append(" · ", style="dim")
    t.append(f"{len(ok)} source{'s' if len(ok) != 1 else ''} ok", style="green" if ok else "dim")
    partial = [s for s in ok if s.partial and s.detail]
    if partial:  # read in one namespace only: "ok", but not the whole cluster
        scope = partial[0].detail.split(" (")[0]
        t.append(f" ({', '.join(s.name for s in partial)}: {scope})", style="yellow")
    for s in other:
        if s.state is SourceState.NOT_CONFIGURED:
            continue
        t.append(" · ", style="dim")
        t.append(f"{s.name} {s.state.value}", style=STATE_STYLE[s.state])
        if s.state is SourceState.STALE:
            t.append(f" since {_clock(s.updated_at)}", style="yellow")
        elif s.detail and s.state is not SourceState.LOADING:
            t.append(f" ({s.detail})", style="dim")
    if bundle_time is None:
        # The cluster's own sources: the pollers (Prometheus, AWS) say their age when they go stale.
        updated = max((s.updated_at for s in snap.sources.values() if s.updated_at and s.name in KUBE_SOURCES),
                      default=None)
        t.append(" · ", style="dim")
        t.append(f"updated {_clock(updated)}", style="dim")
    if error:
        t.append(" · ", style="dim")
        t.append(f"diagnostics failed: {error}", style="bold red")
    return t


class StatusLine(Static):
    """Re-rendered on every snapshot; cheap (one line of Text)."""

    DEFAULT_CSS = """
    StatusLine { height: 1; padding: 0 1; background: $panel; }
    """
