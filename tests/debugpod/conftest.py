"""Real nvidia-smi captures (tests/fixtures/nvidia-smi, copied from upstream with its license) and a way to pull one command's output out of them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.debugpod.capture import capture_sections

REPO = Path(__file__).parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "nvidia-smi"
SHIPPED = REPO / "gputui" / "sim" / "captures"
FIXTURE_FILES = {
    "h100": "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
    "h100-mig": "linux-x86_64__nvidia-h100-mig__590.48.01.txt",
}


def fixture_text(capture: str) -> str:
    return (FIXTURES / FIXTURE_FILES[capture]).read_text(encoding="utf-8")


def section_body(capture: str, phase: str, command_prefix: str) -> str:
    """Body of the capture block whose command is `command_prefix` (exact) or starts with `prefix=`."""
    for section in capture_sections(fixture_text(capture)):
        command = section.command or ""
        if section.phase == phase and (command == command_prefix or command.startswith(command_prefix + "=")):
            return section.body
    raise KeyError(f"{capture}: no {phase} section for {command_prefix!r}")


@pytest.fixture
def section() -> Callable[[str, str, str], str]:
    return section_body


@pytest.fixture
def capture_text() -> Callable[[str], str]:
    return fixture_text
