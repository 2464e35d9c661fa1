"""`gputui demo --headless`'s summary on a terminal narrower than its tables.

Names are what the reader copies into kubectl: they must come out whole, on one line, however
narrow the terminal; the free-text columns (a NodeClaim's reason, a pending pod's why) wrap.
"""

from __future__ import annotations

import io

from rich.console import Console

from diagnostics import run
from gputui.output import rows
from gputui.sim.scenario import load_scenario
from gputui.output.summary import render_summary
from tests.builders import snapshot


def _render(width: int) -> str:
    snap = snapshot(load_scenario("incident").all_objects())
    out = io.StringIO()
    render_summary(snap, run(snap), Console(file=out, width=width, color_system=None))
    return out.getvalue()


def test_names_stay_whole_on_a_narrow_terminal() -> None:
    snap = snapshot(load_scenario("incident").all_objects())
    text = _render(150)
    lines = text.splitlines()
    names = ([c.name for c in snap.nodeclaims] + [n.name for n in snap.nodes if n.capacity.get("nvidia.com/gpu")]
             + [c.node_name for c in snap.nodeclaims if c.node_name])
    for name in names:
        assert any(name in line for line in lines), f"{name} is split across lines"
    # The reason column absorbed the width instead: some reason did wrap.
    assert any(line.startswith(" " * 40) for line in lines)


def test_a_long_pending_reason_is_cut_at_a_word() -> None:
    snap = snapshot(load_scenario("incident").all_objects())
    report = run(snap)
    data = rows.pending_rows(snap, report)
    why = rows.PENDING_COLUMNS.index("WHY")
    full = {r.ref: rows.reason_from(p, snap.index.events("Pod", p.name, p.namespace), rows.explained_by(report))
            for r in data for p in snap.pods if p.ref == r.ref}
    cut = [r for r in data if len(full[r.ref]) > rows.WHY_WIDTH]
    assert cut, "the incident scenario has a pending pod with a long reason"
    for r in cut:
        shown = r.cells[why]
        assert len(shown) <= rows.WHY_WIDTH and shown.endswith(" …")
        kept = shown.removesuffix(" …")
        assert full[r.ref].startswith(kept) and full[r.ref][len(kept)] == " ", "cut inside a word"
