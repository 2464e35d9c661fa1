"""Output on a terminal that is not UTF-8, or with stdout closed, is degraded, never a crash."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_non_utf8_terminal_gets_replacements(encoding: str) -> None:
    env = {**os.environ, "PYTHONIOENCODING": encoding, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "gputui", "explain", "gpu-idle"], cwd=REPO, env=env,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert b"GT702 gpu-idle (warning)" in proc.stdout and b"internal error" not in proc.stderr


@pytest.mark.slow
def test_a_closed_stdout_is_not_an_internal_error(tmp_path: Path) -> None:
    from gputui.sim.cluster import SimCluster

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with SimCluster("healthy") as sim:
        kc = sim.write_kubeconfig(tmp_path / "kubeconfig")
        proc = subprocess.run(f"{sys.executable} -m gputui diagnose --kubeconfig {kc} >&-", shell=True, cwd=REPO,
                              env=env, capture_output=True, timeout=120)
    assert b"internal error" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 4)
