"""The built wheel is the product without the dev tooling (#23): no benchmark, reliability runner or
screenshot script, and nothing it ships imports them. Built by the project's own build backend
(hatchling, from the `test` extra) in a subprocess, offline, in about a second."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEV_TOOLING = ("gputui/dev/",)
DEV_MODULES = ("gputui.dev",)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    name = subprocess.run(
        [sys.executable, "-c", "import sys; from hatchling.build import build_wheel; print(build_wheel(sys.argv[1]))",
         str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True).stdout.strip().splitlines()[-1]
    return zipfile.ZipFile(out / name)


def _imports(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_the_wheel_leaves_out_the_dev_tooling(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    assert not [n for n in names if n.startswith(DEV_TOOLING)]
    # The checkout has them (so `python -m gputui.dev.bench` runs from an editable install).
    assert all((ROOT / d.rstrip("/")).exists() for d in DEV_TOOLING)


def test_the_wheel_holds_every_module_of_the_product(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    shipped = {p.relative_to(ROOT).as_posix() for pkg in ("gputui", "diagnostics") for p in (ROOT / pkg).rglob("*.py")
               if not p.relative_to(ROOT).as_posix().startswith(DEV_TOOLING)}
    assert shipped - names == set()
    assert {"gputui/__main__.py", "gputui/cli/program.py", "diagnostics/checks/gpu_idle.py"} <= names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "gputui = gputui.cli:main" in wheel.read(entry_points).decode()


def test_nothing_in_the_wheel_imports_the_dev_tooling(wheel: zipfile.ZipFile) -> None:
    offenders = {n: sorted(i for i in _imports(wheel.read(n).decode()) if i.startswith(DEV_MODULES))
                 for n in wheel.namelist() if n.endswith(".py")}
    assert {n: found for n, found in offenders.items() if found} == {}
