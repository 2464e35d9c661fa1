"""Bad input gets one line on stderr and a documented exit code, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gputui.cli.program import main
from gputui.errors import ExitCode


def run_cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gputui", *argv], capture_output=True, text=True, env=env,
                          timeout=60)


@pytest.mark.parametrize("argv, needle", [
    (["diagnose", "pod/a/b/c"], "bad target 'pod/a/b/c'"),
    (["diagnose", "deployment/x"], "bad target 'deployment/x'"),
    # The URL path would resolve '..' to the list itself, judged "ok".
    (["diagnose", "node/.."], "'.' and '..' are not object names"),
    (["diagnose", "pod/ml/.."], "'.' and '..' are not object names"),
    (["diagnose", "--kubeconfig", "/does/not/exist"], "kubeconfig '/does/not/exist' does not exist"),
    (["diagnose", "--only", "no-such-check", "--kubeconfig", "/does/not/exist"], "does not exist"),
    (["explain", "no-such-check"], "unknown check 'no-such-check'"),
    (["diagnose", "-o", "yaml"], "invalid choice"),
    (["--no-such-flag"], "unrecognized arguments"),
])
def test_one_line_usage_errors(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(argv))
    assert exc.value.code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert needle in err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


@pytest.mark.slow
def test_unreadable_kubeconfig_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "config"
    bad.write_text("this: [is not: a kubeconfig")
    res = run_cli("diagnose", "--kubeconfig", str(bad))
    assert res.returncode == ExitCode.USAGE
    assert res.stderr.startswith("gputui: error: cannot read kubeconfig")
    assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_unknown_context(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: real, context: {cluster: c, user: u}}]
current-context: real
""")
    res = run_cli("diagnose", "--kubeconfig", str(cfg), "--context", "nope")
    assert res.returncode == ExitCode.USAGE
    assert "context 'nope' not found" in res.stderr


def test_unreachable_cluster_exits_5(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    cfg.write_text("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: real, context: {cluster: c, user: u}}]
current-context: real
""")
    res = run_cli("diagnose", "--kubeconfig", str(cfg))
    assert res.returncode == ExitCode.UNREACHABLE, res.stderr
    assert res.stderr.startswith("gputui: error: cluster unreachable")
    assert "Traceback" not in res.stderr


def test_nothing_readable_is_not_all_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gputui.sim.cluster import SimCluster

    with SimCluster("healthy") as sim:
        for res in ("nodes", "pods", "events", "namespaces", "daemonsets.apps", "poddisruptionbudgets.policy",
                    "runtimeclasses.node.k8s.io", "nodeclaims.karpenter.sh", "nodepools.karpenter.sh",
                    "ec2nodeclasses.karpenter.k8s.aws"):
            sim.forbid(res)
        cfg = tmp_path / "kubeconfig"
        sim.write_kubeconfig(cfg)
        code = main(["diagnose", "--kubeconfig", str(cfg), "--only", "gpu-not-advertised",
                     "--only", "nodeclaim-launch-failed"])
    err = capsys.readouterr().err
    assert code == ExitCode.FINDINGS_WARNING
    assert "no check could run" in err
