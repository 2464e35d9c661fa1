"""README opens with the two commands, and CI runs exactly the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _code_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, re.S)]


def test_readme_opens_with_demo_then_test_command() -> None:
    blocks = _code_blocks((ROOT / "README.md").read_text())
    assert "gputui demo" in blocks[0]
    assert "pytest" in blocks[1]


def test_ci_runs_the_readme_test_command() -> None:
    test_cmd = _code_blocks((ROOT / "README.md").read_text())[1]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_cmd in ci


def test_readme_checks_table_is_generated_from_the_registry() -> None:
    from gputui.dev.docs import render

    text = (ROOT / "README.md").read_text()
    assert render(text) == text, "run `python -m gputui.dev.docs` to regenerate README's checks table"
