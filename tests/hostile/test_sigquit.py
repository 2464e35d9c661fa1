"""Ctrl-\\ (SIGQUIT) during `gputui debug` deletes the debug pod like Ctrl-C does (issue #24, item 7).

Python's default for SIGQUIT dumps core without running `finally`, so the pod stayed behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.sim import SimCluster
from tests.debugpod import sim_helpers as sh

REPO = Path(__file__).resolve().parents[2]


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
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "gputui", "debug", f"node/{sh.HANGS}", "--kubeconfig", kc],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def ready() -> bool:
            pods = sh.gputui_pods(sim)
            return bool(pods) and (phase is None or (pods[0].get("status") or {}).get("phase") == phase)

        assert sim.wait_for(ready, timeout=20, interval=0.02), proc.poll()
        proc.send_signal(signal.SIGQUIT)
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert "gputui: deleted pod default/gputui-debug-" in err and "Traceback" not in err
    assert sh.gputui_pods(sim) == []
