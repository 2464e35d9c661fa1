"""Planted credentials never reach a bundle's bytes, the manifest counts what was masked, and --no-redact keeps all."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest

from gputui.errors import ExitCode
from gputui.sim.scenario import Scenario, load_scenario
from tests.bundle.helpers import findings, manifest, members, run, served

AKID = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PLANTED = {
    "env": "hunter2-planted-env-S3cret",
    "args": "tok-planted-args-9f8e7d",
    "flag=": "planted-pw-arg-77",
    "annotation": "planted-annotation-secret-55",
    "last-applied": "planted-lastapplied-secret-66",
    "bearer": "planted.bearer.token-abc123XYZ",
    "url": "planted-url-pw-88",
    "log-kv": "planted-log-password-99",
    "event": "planted-event-token-4242",
}
POD = "llama3-lora-sft-0-h7x2k"
CLAIM = "gpu-finetune-7xk2q"


def planted_scenario() -> Scenario:
    """gpu-not-advertised with credentials where real clusters leak them: env, args, annotations, logs, events."""
    sc = copy.deepcopy(load_scenario("gpu-not-advertised"))
    pod = next(p for p in sc.objects["Pod"] if p["metadata"]["name"] == POD)
    c = pod["spec"]["containers"][0]
    c["env"] = [
        {"name": "DB_PASSWORD", "value": PLANTED["env"]},
        {"name": "AWS_ACCESS_KEY_ID", "value": AKID},
        {"name": "AWS_SECRET_ACCESS_KEY", "value": SECRET_KEY},
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},  # a GPU setting: kept, it explains GPU problems
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
    ]
    c["args"] = [*c["args"], "--api-token", PLANTED["args"], f"--password={PLANTED['flag=']}"]
    pod["metadata"]["annotations"].update({
        "example.com/db-password": PLANTED["annotation"],
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(
            {"spec": {"containers": [{"env": [{"name": "X", "value": PLANTED["last-applied"]}]}]}}),
    })
    key = next(iter(sc.logs))
    sc.logs[key] += json.dumps({
        "level": "ERROR", "time": "2026-08-21T09:50:00.000Z", "logger": "controller",
        "message": "failed pulling", "NodeClaim": {"name": CLAIM},
        "error": (f"GET https://admin:{PLANTED['url']}@registry.example.com/v2 with Authorization: Bearer "
                  f"{PLANTED['bearer']} and aws_access_key_id={AKID} aws_secret_access_key={SECRET_KEY} "
                  f"password={PLANTED['log-kv']}"),
    }) + "\n"
    event = next(e for e in sc.objects["Event"] if e["involvedObject"]["kind"] == "Node")
    event["message"] += f" (token={PLANTED['event']})"
    return sc


def _secrets() -> list[str]:
    return [*PLANTED.values(), AKID, SECRET_KEY]


def test_planted_credentials_are_in_zero_bytes_of_the_archive(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "b.tar.gz"
    with served(planted_scenario(), tmp_path, monkeypatch) as (sim, cfg):
        code, stdout, _ = run(capsys, "bundle", "-q", "--kubeconfig", str(cfg), "-o", str(out))
        live = findings(capsys, "--kubeconfig", str(cfg))
        server = sim.url
    assert code == ExitCode.OK
    raw = gzip.decompress(out.read_bytes())  # every member, tar headers included
    for secret in [*_secrets(), server]:
        for form in (secret, json.dumps(secret)[1:-1]):
            assert form.encode() not in raw, secret
    files = members(out)
    # The planted log line and event are in the bundle - masked, not dropped.
    log = next(d for n, d in files.items() if n.startswith("logs/kube-system/karpenter-")).decode()
    assert "failed pulling" in log and "[REDACTED:bearer-token]" in log and "[REDACTED:url-credentials]" in log
    pod = next(p for p in json.loads(files["resources/pods.json"])["items"] if p["metadata"]["name"] == POD)
    env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
    assert env["DB_PASSWORD"]["value"] == "[REDACTED:env-value]"  # names stay: they say what was there
    assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all"
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "hf", "key": "token"}
    assert pod["spec"]["containers"][0]["args"][-3:] == [
        "--api-token", "[REDACTED:command-args]", "--password=[REDACTED:credential-assignment]"]
    rules = manifest(out)["redaction"]["rules"]
    assert rules["env-value"] >= 3
    for rule in ("command-args", "credential-assignment", "annotation", "last-applied-configuration",
                 "aws-access-key-id", "aws-secret-access-key", "bearer-token", "url-credentials", "cluster-server"):
        assert rules.get(rule, 0) >= 1, rule
    assert manifest(out)["redaction"]["enabled"] is True
    assert "redacted:" in stdout
    # Masking changed nothing a check reads.
    assert findings(capsys, "--bundle", str(out)) == live


def test_no_redact_keeps_values_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "b.tar.gz"
    with served(planted_scenario(), tmp_path, monkeypatch) as (sim, cfg):
        code, stdout, _ = run(capsys, "bundle", "-q", "--no-redact", "--kubeconfig", str(cfg), "-o", str(out))
        server = sim.url
    assert code == ExitCode.OK
    raw = gzip.decompress(out.read_bytes())
    assert PLANTED["env"].encode() in raw and AKID.encode() in raw
    m = manifest(out)
    assert m["redaction"]["enabled"] is False and m["redaction"]["rules"] == {}
    assert m["context"]["server"] == server
    assert "OFF" in stdout
    assert "Redaction: **off**" in members(out)["SUMMARY.md"].decode()


def test_redact_pattern_adds_a_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "b.tar.gz"
    with served("gpu-not-advertised", tmp_path, monkeypatch) as (_sim, cfg):
        # Internal IPs are not masked by default (they help debugging); a site may want them gone.
        code, _, _ = run(capsys, "bundle", "-q", "--kubeconfig", str(cfg), "-o", str(out),
                         "--redact-pattern", r"\b10\.0\.\d+\.\d+\b")
    assert code == ExitCode.OK
    assert b"10.0.45.211" not in gzip.decompress(out.read_bytes())
    m = manifest(out)
    assert m["redaction"]["rules"]["custom-1"] >= 1 and m["redaction"]["custom_patterns"] == 1


@pytest.mark.parametrize(("pattern", "message"), [
    ("([unclosed", "is not a valid regular expression"),
    ("x*", "matches the empty string"),
])
def test_bad_redact_pattern_is_a_one_line_usage_error(pattern: str, message: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # Refused before any connection: no kubeconfig is needed to find out.
    code, out, err = run(capsys, "bundle", "-o", str(tmp_path / "b.tar.gz"), "--redact-pattern", pattern)
    assert code == ExitCode.USAGE and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err and err.startswith("gputui: error: ")
    assert not list(tmp_path.iterdir())
