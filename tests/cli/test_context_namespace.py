"""`pod/NAME` without -n is looked up in the kubeconfig context's namespace, as kubectl does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.cli.program import main
from gputui.errors import ExitCode
from gputui.sim.cluster import SimCluster
from gputui.sim.scenario import load_scenario

POD = "sdxl-worker-5d8c7b9f6-mq4tn"  # in namespace serving


def test_pod_name_alone_uses_the_contexts_namespace(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUTUI_NOW", load_scenario("untolerated-taint").reference_time.isoformat())
    with SimCluster("untolerated-taint") as sim:
        serving = sim.write_kubeconfig(tmp_path / "serving", namespace="serving")
        default = sim.write_kubeconfig(tmp_path / "default")
        code = main(["diagnose", f"pod/{POD}", "--kubeconfig", str(serving), "-o", "json"])
        data = json.loads(capsys.readouterr().out)
        assert code == ExitCode.FINDINGS_ERROR
        assert data["findings"][0]["subject"] == f"pod/serving/{POD}"
        # -n still wins over the context, and a context without the pod says where it looked.
        code = main(["diagnose", f"pod/{POD}", "-n", "serving", "--kubeconfig", str(default), "-o", "json"])
        assert code == ExitCode.FINDINGS_ERROR
        capsys.readouterr()
        code = main(["diagnose", f"pod/{POD}", "--kubeconfig", str(default)])
        assert code == ExitCode.USAGE and "'default'" in capsys.readouterr().err
