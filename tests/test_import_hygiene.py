"""diagnostics/ stays pure, and the one-shot CLI path never imports Textual (it must start fast)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FORBIDDEN_FOR_DIAGNOSTICS = ("gputui", "textual", "kubernetes", "boto3", "botocore", "aiohttp",
                             "prometheus_api_client")


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True)
    return {m.split(".")[0] for m in out.stdout.split()}


def test_diagnostics_imports_no_io_or_ui_library() -> None:
    loaded = _loaded_after("import diagnostics\nfrom diagnostics.registry import all_checks\nall_checks()")
    assert not loaded & set(FORBIDDEN_FOR_DIAGNOSTICS), loaded & set(FORBIDDEN_FOR_DIAGNOSTICS)


def test_diagnose_path_does_not_import_textual() -> None:
    loaded = _loaded_after(
        "from gputui.cli.program import build_parser\n"
        "import gputui.cli.diagnose, gputui.collect.one_shot, gputui.output.text, gputui.output.json\n"
        "build_parser().parse_args(['diagnose', 'pod/x'])")
    assert "textual" not in loaded


def test_diagnostics_source_has_no_forbidden_import_statements() -> None:
    import re

    root = Path(__file__).resolve().parents[1] / "diagnostics"
    pat = re.compile(r"^\s*(from|import)\s+(" + "|".join(FORBIDDEN_FOR_DIAGNOSTICS) + r")\b", re.M)
    offenders = [str(p) for p in root.rglob("*.py") if pat.search(p.read_text())]
    assert offenders == []


def test_the_tui_starts_listing_before_textual_is_imported(tmp_path: Path) -> None:
    """`gputui` connects and starts its informers first: the lists load while Textual does."""
    from gputui.sim.cluster import SimCluster

    data = Path(__file__).resolve().parent / "sim" / "data" / "small.yaml"
    with SimCluster(data) as sim:
        cfg = sim.write_kubeconfig(tmp_path / "kubeconfig")
        out = subprocess.run([sys.executable, "-c",
                              "import sys\nfrom gputui.cli.program import build_parser\n"
                              "from gputui.cli.tui import start_early\n"
                              f"s = start_early(build_parser().parse_args(['--kubeconfig', {str(cfg)!r}]))\n"
                              "print(s.wait_synced(15), 'textual' in sys.modules)"],
                             capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["True", "False"]
