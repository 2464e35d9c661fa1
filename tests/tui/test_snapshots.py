"""SVG snapshots of every screen on the demo scenarios (time frozen, simulator times not shifted).

The incident shots are the ones `python -m gputui.dev.screenshots` writes to screenshots/, so the
README pictures are what these tests check. Both run the pinned check set (gputui.dev.pinned_checks):
a new check adds no row to these checklists. Update baselines with `--snapshot-update` and look
at the diff report before committing them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gputui.dev.pinned_checks import PINNED_CHECKS
from gputui.dev.screenshots import SHOTS, Shot, build_app, play
from gputui.sim.cluster import SimCluster

pytestmark = pytest.mark.slow  # every screen of the demo scenarios, rendered and compared

OTHER_SCENARIOS = ("healthy", "gpu-not-advertised", "subnets-not-found")
"""The incident shots already show spot shortage, an untolerated taint and blocked consolidation."""
EXTRA = (
    *(Shot(f"overview-{name}", scenario=name) for name in OTHER_SCENARIOS),
    Shot("yaml-node", keys=("f", "enter", "o", "y")),
    Shot("findings-80x24", keys=("f",), size=(80, 24)),
)


@pytest.mark.parametrize("shot", (*SHOTS, *EXTRA), ids=lambda s: s.name)
def test_screen(shot: Shot, snap_compare: Callable[..., bool],
                start_sim: Callable[..., tuple[SimCluster, Path]]) -> None:
    _sim, kubeconfig = start_sim(shot.scenario)
    app = build_app(kubeconfig, title=f"demo: {shot.scenario}", read_only=shot.read_only, checks=PINNED_CHECKS)

    async def run_before(pilot: Any) -> None:
        await play(pilot, shot.keys)

    assert snap_compare(app, terminal_size=shot.size, run_before=run_before)
