"""Helpers for bundle tests: a demo scenario served by the simulator at its own frozen time, CLI runs."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gputui.cli.program import main
from gputui.sim.cluster import SimCluster
from gputui.sim.scenario import Scenario, load_scenario


@contextmanager
def served(scenario: str | Scenario, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SimCluster, Path]]:
    """The scenario as written (no time shift) with gputui's clock frozen at its referenceTime."""
    sc = load_scenario(scenario) if isinstance(scenario, str) else scenario
    assert sc.reference_time is not None
    monkeypatch.setenv("GPUTUI_NOW", sc.reference_time.isoformat())
    with SimCluster(sc, debug_pod_delay=0.05) as sim:
        yield sim, sim.write_kubeconfig(tmp / "kubeconfig")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def findings(capsys: pytest.CaptureFixture[str], *argv: str) -> list[tuple[str, str, str]]:
    """(check, subject, severity) of `gputui diagnose ... -o json`, worst first."""
    code, out, err = run(capsys, "diagnose", *argv, "-o", "json")
    assert code in (0, 3, 4), err
    return [(f["check"], f["subject"], f["severity"]) for f in json.loads(out)["findings"]]


def members(path: Path) -> dict[str, bytes]:
    """Every member's raw bytes, read with plain tarfile (not gputui's reader), root directory stripped."""
    out = {}
    with tarfile.open(path, "r:gz") as tar:
        for m in tar.getmembers():
            f = tar.extractfile(m)
            if f is not None:
                out[m.name.split("/", 1)[1]] = f.read()
    return out


def manifest(path: Path) -> dict[str, Any]:
    return json.loads(members(path)["manifest.json"])


def make_tar_gz(path: Path, entries: list[tuple[tarfile.TarInfo, bytes | None]], *, level: int = 6) -> Path:
    """A .tar.gz from raw TarInfo headers (to build hostile archives gputui must refuse)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    path.write_bytes(gzip.compress(buf.getvalue(), compresslevel=level))
    return path


def file_entry(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data
