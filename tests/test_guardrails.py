"""CI runs ruff, mypy and import-linter before the tests, README says how, and the configuration keeps
what #23 asked of it (strict mypy for diagnostics/, the layer contracts). The tools themselves run in
.ci/run (mypy takes ~30 s from a cold cache); these tests keep that step from quietly going away."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GUARDRAILS = [".venv/bin/ruff check", ".venv/bin/mypy", ".venv/bin/lint-imports"]


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _ci() -> list[str]:
    return [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]


def test_ci_runs_the_guardrails_after_installing_and_before_the_tests() -> None:
    ci = _ci()
    assert "set -euo pipefail" in ci  # a failing tool stops the run
    install = ci.index("python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]'")
    tests = next(i for i, line in enumerate(ci) if line.endswith("&& .venv/bin/pytest"))
    at = [ci.index(cmd) for cmd in GUARDRAILS]
    assert install < at[0] < at[1] < at[2] < tests


def test_readme_development_section_names_the_same_commands() -> None:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Development\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    commands = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    assert [c for c in commands if c] == GUARDRAILS


def test_the_dev_tools_are_in_the_test_extra() -> None:
    extra = " ".join(_pyproject()["project"]["optional-dependencies"]["test"])
    for tool in ("ruff==", "mypy==", "import-linter==", "types-PyYAML", "types-croniter"):
        assert tool in extra


def test_mypy_is_strict_for_diagnostics() -> None:
    """mypy takes `strict` only globally, so the override lists --strict's flags; a mypy that adds one
    to --strict fails here until it is listed."""
    help_text = subprocess.run([sys.executable, "-m", "mypy", "--help"], capture_output=True, text=True, check=True,
                               env={**os.environ, "COLUMNS": "1000"}).stdout
    enabled = re.search(r"Strict mode; enables the following flags: (.*)", help_text)
    assert enabled is not None
    strict = {flag.replace("-", "_") for flag in re.findall(r"--([a-z][a-z-]*)", enabled.group(1))}
    assert {"disallow_untyped_defs", "warn_return_any"} <= strict
    mypy = _pyproject()["tool"]["mypy"]
    override = next(o for o in mypy["overrides"] if "diagnostics.*" in o["module"])
    assert {flag for flag in strict if not (override.get(flag) or mypy.get(flag))} == set()
    assert {"diagnostics", "gputui"} <= set(mypy["files"])


def test_the_layer_contracts_are_declared() -> None:
    contracts = {c["id"]: c for c in _pyproject()["tool"]["importlinter"]["contracts"]}
    assert contracts["pure-diagnostics"]["forbidden_modules"] == ["gputui"]
    assert set(contracts["checks-no-caches"]["forbidden_modules"]) == {
        "diagnostics.carry", "diagnostics.snapshot_memo", "diagnostics.index_parts"}
    assert set(contracts["one-shot-without-tui"]["source_modules"]) == {
        "gputui.commands.diagnose", "gputui.collect", "gputui.output"}
    assert set(contracts["sources-no-views"]["forbidden_modules"]) == {"gputui.tui", "gputui.output", "gputui.commands"}
