"""Ctrl-\\ (SIGQUIT) during `gputui debug` deletes the debug pod like Ctrl-C does (issue #24, item 7).

Python's default for SIGQUIT dumps core without running `finally`, so the pod stayed behind.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from gputui.sim import SimCluster
from tests.debugpod import sim_helpers as sh


@pytest.fixture(scope="module")
def hanging(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimCluster, str]]:
    sim, path = sh.start(tmp_path_factory.mktemp("sigquit"), delay=0.5)
    sh.hang_after_first_section(sim)
    try:
        yield sim, str(path)
    finally:
        sim.stop()


@pytest.mark.parametrize("phase", [None, "Running"])
def test_sigquit_deletes_the_debug_pod(hanging: tuple[SimCluster, str], phase: str | None) -> None:
    sim, kc = hanging
    returncode, err = sh.signal_debug_mid_run(sim, kc, signal.SIGQUIT, phase)
    assert returncode == 143, err
    assert "gputui: deleted pod default/gputui-debug-" in err and "Traceback" not in err
    assert sh.gputui_pods(sim) == []
