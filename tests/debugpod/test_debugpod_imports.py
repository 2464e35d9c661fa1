"""The debugpod package's own layering (#23): no import cycle inside it, nvidia-smi parsing one module per format."""

from __future__ import annotations

import itertools
from pathlib import Path

import grimp

from gputui.debugpod import nvidia_smi

ROOT = Path(__file__).resolve().parents[2]


def test_no_import_cycle_in_debugpod() -> None:
    """Not even through an import inside a function or under TYPE_CHECKING: the result's `render()` reads the
    view lazily, so the view must not import the result back (it takes a protocol)."""
    graph = grimp.build_graph("gputui", cache_dir=None)
    mods = sorted(m for m in graph.modules if m.startswith("gputui.debugpod"))
    cycles = [(a, b) for a, b in itertools.combinations(mods, 2)
              if graph.find_shortest_chain(a, b) and graph.find_shortest_chain(b, a)]
    assert cycles == []
    assert graph.find_shortest_chain("gputui.debugpod.render", "gputui.debugpod.result") is None


def test_nvidia_smi_is_a_package_with_a_module_per_format() -> None:
    modules = {p.stem for p in (ROOT / "gputui" / "debugpod" / "nvidia_smi").glob("*.py")}
    assert {"table", "query", "query_csv", "gpu_list", "debug_log", "capture_bundle", "parse"} <= modules
    assert not (ROOT / "gputui" / "debugpod" / "nvidia_smi.py").exists()
    assert nvidia_smi.parse("").source_format == "empty"  # the package's entry point
