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
    assert set(contracts["checks-no-caches"]["forbidden_modules"]) == {"diagnostics.carry", "diagnostics.index_parts"}
    assert set(contracts["one-shot-without-tui"]["source_modules"]) == {
        "gputui.cli.diagnose", "gputui.collect.one_shot", "gputui.output"}
    assert set(contracts["sources-no-views"]["source_modules"]) == {"gputui.sources", "gputui.kube", "gputui.collect"}
    assert set(contracts["sources-no-views"]["forbidden_modules"]) == {
        "gputui.tui", "gputui.output", "gputui.cli", "gputui.bundle", "gputui.debugpod"}


def _folder(graph: Any, module: str) -> str:
    """A package is its own folder; a plain module lives in its parent's."""
    return module if graph.find_children(module) else module.rpartition(".")[0]


def _import_cycles(graph: Any) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_import_cycle_crosses_a_folder() -> None:
    """A cycle inside one folder is that folder's business; one across folders (the CLI and the TUI, a
    screen and the app) means the layers in the tree are not the layers in the code. Imports under
    TYPE_CHECKING are annotations, not load order, and do not count."""
    import grimp

    graph = grimp.build_graph("gputui", "diagnostics", exclude_type_checking_imports=True, cache_dir=None)
    crossing = [c for c in _import_cycles(graph) if len({_folder(graph, m) for m in c}) > 1]
    assert crossing == []


def test_the_top_level_of_gputui_is_not_a_hallway() -> None:
    """At most six modules loose at gputui/'s top level (dunder files included); everything else lives in
    the folder that says what it is (kube, collect, cli, output, tui, bundle, debugpod, sim, dev)."""
    loose = sorted(p.name for p in (ROOT / "gputui").glob("*.py"))
    assert len(loose) <= 6, loose
