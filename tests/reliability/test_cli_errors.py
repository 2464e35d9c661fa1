"""Every bad target, flag, kubeconfig or context: one error line and a documented exit code, never a traceback.

The table is gputui.dev.reliability.cli_matrix.CASES (also rendered as README's exit-code table by
`python -m gputui.dev.reliability`); tests/cli/test_usage_errors.py keeps the cases it already had.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.errors import ExitCode
from gputui.dev.reliability.cli_matrix import CASES, MEANINGS, CliCase, CliWorld, exit_code_table, run_case
from gputui.sim.cluster import SimCluster

pytestmark = pytest.mark.slow  # the reliability suite: faults injected end to end (README "Reliability")

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def world() -> Iterator[CliWorld]:
    with CliWorld() as w:
        yield w


def _param(case: CliCase) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=case.known_bug)] if case.known_bug else []
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_bad_input_gets_one_line_and_a_documented_code(world: CliWorld, case: CliCase) -> None:
    result = run_case(world, case)
    assert result.exit_code in MEANINGS, result.to_json()
    assert result.problems == [], result.to_json()


def test_every_documented_code_in_the_table() -> None:
    table = exit_code_table([])
    for code in ExitCode:
        assert f"\n| {int(code)} | " in table


def test_diagnose_piped_into_head_is_not_an_internal_error(tmp_path: Path) -> None:
    with SimCluster("incident") as sim:
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        proc = subprocess.Popen([sys.executable, "-m", "gputui", "diagnose", "--kubeconfig", str(kubeconfig)],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()  # `| head -1` read its line and left
        err = proc.stderr.read()
        proc.wait(timeout=60)
    assert "Traceback" not in err
    assert proc.returncode != ExitCode.INTERNAL


def test_headless_demo_piped_into_head_exits_ok() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "gputui", "demo", "--headless"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(timeout=120)
    assert "Traceback" not in err
    assert proc.returncode == ExitCode.OK
