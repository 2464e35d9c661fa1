"""`gputui diagnose pod/X` imports only what its path needs: no Textual, no boto3 without AWS credentials.

Run as a user runs it (a fresh process against the simulator), with `python -X importtime`, which
lists every module the process imported even though the one-shot leaves without tearing down.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.dev.bench.runner import parse_importtime
from gputui.sim.cluster import SimCluster

DATA = Path(__file__).resolve().parent / "sim" / "data" / "small.yaml"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimCluster, Path]]:
    with SimCluster(DATA) as sim:
        yield sim, sim.write_kubeconfig(tmp_path_factory.mktemp("oneshot") / "kubeconfig")


def _diagnose(cluster: tuple[SimCluster, Path], tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str],
                                                                                      set[str]]:
    sim, cfg = cluster
    pod = next(p for p in sim.objects("Pod") if p.get("status", {}).get("phase") == "Pending")
    target = f"pod/{pod['metadata']['namespace']}/{pod['metadata']['name']}"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GPUTUI_", "KUBECONFIG"))}
    clean.update({"AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_CONFIG_FILE": str(tmp_path / "none"),
                  "HOME": str(tmp_path), "AWS_EC2_METADATA_DISABLED": "true", **env})
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "gputui", "diagnose", target, "--kubeconfig",
                          str(cfg)], capture_output=True, text=True, env=clean, timeout=120)
    assert out.returncode in (0, 3, 4), out.stderr[-2000:]
    assert pod["metadata"]["name"] in out.stdout
    return out, {m.split(".")[0] for m in parse_importtime(out.stderr)}


def test_without_aws_credentials_the_one_shot_never_imports_boto3(cluster: tuple[SimCluster, Path],
                                                                   tmp_path: Path) -> None:
    out, loaded = _diagnose(cluster, tmp_path)
    assert not loaded & {"boto3", "botocore", "s3transfer", "textual"}, loaded & {"boto3", "botocore", "textual"}
    assert "croniter" not in loaded  # no NodePool here has a scheduled disruption budget
    # The source still says why it is missing, as boto3's own NoCredentialsError did.
    assert "aws not configured (no AWS credentials: set AWS_PROFILE or --aws-profile" in out.stdout


def test_with_credentials_in_the_environment_aws_is_asked(cluster: tuple[SimCluster, Path], tmp_path: Path) -> None:
    # Keys in the environment, an endpoint nobody listens on: boto3 is loaded and its failure is the status.
    out, loaded = _diagnose(cluster, tmp_path, AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY="x",
                            AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_MAX_ATTEMPTS="1")
    assert "boto3" in loaded
    assert "no AWS credentials" not in out.stdout


def test_json_output_is_whole_when_the_one_shot_leaves_without_teardown(cluster: tuple[SimCluster, Path],
                                                                        tmp_path: Path) -> None:
    import json

    sim, cfg = cluster
    pod = next(p for p in sim.objects("Pod") if p.get("status", {}).get("phase") == "Pending")
    out = subprocess.run([sys.executable, "-m", "gputui", "diagnose", "-o", "json", "-n", pod["metadata"]["namespace"],
                          f"pod/{pod['metadata']['name']}", "--kubeconfig", str(cfg)],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert out.returncode in (0, 3, 4), out.stderr[-2000:]
    assert json.loads(out.stdout)["target"] == f"pod/{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def test_skipping_teardown_still_runs_atexit_cleanup(tmp_path: Path) -> None:
    """The kubernetes client deletes the certificate and key it decoded from a kubeconfig in an atexit
    handler: leaving early must not leave them behind."""
    secret = tmp_path / "client-key.pem"
    code = ("import atexit, os, sys\n"
            f"open({str(secret)!r}, 'w').write('key')\n"
            f"atexit.register(os.remove, {str(secret)!r})\n"
            "from gputui.cli import program as cli\n"
            "sys.argv = ['gputui', 'explain', '--list']\n"
            "cli.skip_teardown()\n"
            "cli.entry()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "gpu-not-advertised" in out.stdout  # flushed before leaving
    assert not secret.exists()
