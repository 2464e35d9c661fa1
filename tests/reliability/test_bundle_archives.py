"""The bundle issue's hostile and damaged archives, run here against the other entry: `gputui --bundle`.

tests/bundle checks `open_bundle` and `diagnose --bundle`; an on-call engineer opening a ticket's
attachment in the TUI goes through the global flag, which must refuse the same set in one line
before any screen starts, writing nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gputui.errors import ExitCode
from tests.bundle.helpers import run
from tests.bundle.test_reader_safety import CASES, ESCAPE, good_bundle  # noqa: F401 - fixture

# slow: the reliability suite, faults injected end to end (README "Reliability")
pytestmark = [pytest.mark.usefixtures("good_bundle"), pytest.mark.slow]


@pytest.mark.parametrize("case", list(CASES))
def test_tui_refuses_hostile_or_damaged_bundle(case: str, good_bundle: Path, tmp_path: Path,  # noqa: F811
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    build, message = CASES[case]
    path = build(good_bundle, tmp_path / f"{case.replace(' ', '-')}.tar.gz")
    code, out, err = run(capsys, "--bundle", str(path))
    assert code == ExitCode.USAGE and out == ""
    assert err.count("\n") == 1 and err.startswith("gputui: error: ") and message in err
    assert os.listdir(work) == []
    assert not (Path("/tmp") / ESCAPE).exists()
