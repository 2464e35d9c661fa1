"""The README's screenshots are what `gputui demo` shows (issue #22): the same shots, replayed on the
whole demo (simulated cluster, the demo's Prometheus and AWS) at the same size and with the same
pinned check set, must show the same text as screenshots/*.svg. Regenerate with
`python -m gputui.dev.screenshots` when this fails."""

from __future__ import annotations

import asyncio
import html
import re
import tempfile
from pathlib import Path

import pytest

from gputui.dev.pinned_checks import PINNED_CHECKS
from gputui.dev.screenshots import OUT_DIR, SHOTS, build_app, demo_sources, frozen_clock, play
from gputui.sim.cluster import SimCluster
from tests.prometheus.conftest import require_prometheus
from tests.tui.conftest import screen_text

pytestmark = pytest.mark.slow  # the whole demo (cluster, Prometheus, moto) for every README shot

_TEXT = re.compile(r'<text[^>]*?x="([\d.]+)"[^>]*clip-path="url\(#terminal-(?:\d+-)?line-(\d+)\)"[^>]*>(.*?)</text>',
                   re.DOTALL)


def svg_text(svg: str) -> str:
    """The terminal text of a saved screenshot, line by line (as conftest.screen_text reads the app)."""
    lines: dict[int, dict[int, str]] = {}
    for x, line, text in _TEXT.findall(svg):
        col = round(float(x) / 12.2)
        row = lines.setdefault(int(line), {})
        for i, ch in enumerate(html.unescape(text).replace("\n", "").replace("\xa0", " ")):
            row[col + i] = ch
    return "\n".join("".join(row.get(c, " ") for c in range(max(row, default=-1) + 1)).rstrip()
                     for _, row in sorted(lines.items()))


async def _shown(shot_names: list[str], kubeconfig: Path, sources: tuple[object, object]) -> dict[str, str]:
    out = {}
    for shot in (s for s in SHOTS if s.name in shot_names):
        app = build_app(kubeconfig, title=f"demo: {shot.scenario}", read_only=shot.read_only, sources=sources,
                        checks=PINNED_CHECKS)
        async with app.run_test(size=shot.size) as pilot:
            await play(pilot, shot.keys)
            out[shot.name] = screen_text(app)
    return out


def test_screenshots_show_what_the_demo_shows() -> None:
    require_prometheus()
    names = [s.name for s in SHOTS if s.scenario == "incident"]
    missing = [n for n in names if not (OUT_DIR / f"{n}.svg").exists()]
    assert not missing, f"screenshots/ lacks {missing}: run python -m gputui.dev.screenshots"
    with frozen_clock("incident"), SimCluster("incident", shift_to_now=False) as sim, \
            tempfile.TemporaryDirectory(prefix="gputui-shots-") as tmp, demo_sources(sim) as sources:
        assert sources[0] is not None and sources[1] is not None, "the demo's Prometheus and AWS must be on"
        shown = asyncio.run(_shown(names, sim.write_kubeconfig(Path(tmp) / "kubeconfig"), sources))
    for name in names:
        saved = svg_text((OUT_DIR / f"{name}.svg").read_text())
        if saved != shown[name]:
            pytest.fail(f"screenshots/{name}.svg differs from what the demo shows now "
                        f"(python -m gputui.dev.screenshots regenerates it):\n--- saved\n{saved}\n--- demo\n{shown[name]}")
