"""Adding a check that reads pods and nodes touches exactly its file, its test module and README's
generated table (issue #23): `python -m gputui.dev.new_check_drill`, run in a temporary copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gputui.dev.new_check_drill import ROOT, drill


@pytest.mark.slow
def test_a_new_check_touches_only_its_file_its_test_and_the_readme_table(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout (the drill copies its tracked files)")
    assert drill(tmp_path) == []
