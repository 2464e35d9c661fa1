"""Bad input: malformed objects served by the simulator and diagnosed, and property runs over the
snapshot -> diagnostics path (generated odd objects, and the demo scenarios with fields deleted or made odd)."""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
import yaml

from gputui.kube import ingest

SOURCE_OF_KIND = {v: k for k, v in ingest.KIND_OF_SOURCE.items()}
TARGETS = ("", "node/odd-quantities", "node/odd-no-status", "node/odd-zero-gpus", "nodeclaim/odd-claim-v1beta1",
           "nodeclaim/odd-claim-no-status", "nodepool/odd-pool", "nodepool/odd-pool-bare", "ec2nodeclass/odd-class",
           "pod/default/odd-gpu-requests", "pod/default/odd-no-spec", "pod/default/odd-on-missing-node")
"""`diagnose` targets over the malformed objects ("" = the whole cluster)."""
REFERENCE_TIME = datetime(2026, 8, 21, 10, 0, 0, tzinfo=timezone.utc)
"""The demo scenarios' referenceTime: generated timestamps are around it."""
EVIDENCE_TEXT_LIMIT = 1000
"""Longest string a finding may carry (checks clip messages to ~300 characters)."""


def malformed_objects() -> list[dict[str, Any]]:
    text = resources.files("gputui.dev.reliability").joinpath("data/malformed.yaml").read_text(encoding="utf-8")
    return [d for d in yaml.safe_load_all(text) if d]


@dataclass
class DiagnoseRun:
    target: str
    output: str
    exit_code: int | None
    stderr: str
    errored: list[str] = field(default_factory=list)
    long_texts: list[str] = field(default_factory=list)
    """Finding fields longer than EVIDENCE_TEXT_LIMIT (path: length)."""

    @property
    def ok(self) -> bool:
        # A warning line is the verdict speaking (e.g. a pod with no spec is "pending, cause not
        # determined", exit 4); anything else on stderr is a crash or internal noise.
        noise = [ln for ln in self.stderr.splitlines() if ln.strip() and not ln.startswith("gputui: warning: ")]
        return self.exit_code in (0, 3, 4) and not self.errored and not noise

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target or "cluster", "output": self.output, "exit_code": self.exit_code, "ok": self.ok,
                "errored": self.errored, "long_texts": self.long_texts, "stderr": self.stderr.strip()[:300]}


def _long_texts(value: Any, path: str, out: list[str]) -> None:
    if isinstance(value, str):
        if len(value) > EVIDENCE_TEXT_LIMIT:
            out.append(f"{path}: {len(value)} chars")
    elif isinstance(value, dict):
        for k, v in value.items():
            _long_texts(v, f"{path}.{k}", out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _long_texts(v, f"{path}[{i}]", out)


def diagnose(kubeconfig: Path, target: str, output: str) -> DiagnoseRun:
    from gputui.cli.program import main

    out, err = io.StringIO(), io.StringIO()
    argv = ["diagnose", "--kubeconfig", str(kubeconfig), "-o", output, *([target] if target else [])]
    code: int | None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = int(main(argv))
        except BaseException as exc:  # noqa: BLE001 - what this looks for
            code = None
            err.write(f"escaped main(): {type(exc).__name__}: {exc}\n")
    run = DiagnoseRun(target, output, code, err.getvalue())
    if output == "json" and code is not None:
        try:
            body = orjson.loads(out.getvalue())
        except orjson.JSONDecodeError:
            run.errored.append("stdout is not JSON")
            return run
        run.errored = [f"{r['check']}: {r['reason']}" for r in body["results"] if r["status"] == "errored"]
        for i, f in enumerate(body["findings"]):
            _long_texts(f, f"{f['check']} {f['subject']} findings[{i}]", run.long_texts)
    return run


def diagnose_malformed(scenario: str = "healthy", targets: tuple[str, ...] = TARGETS) -> list[DiagnoseRun]:
    """Serve the malformed objects (on top of `scenario`) and `gputui diagnose` each target, JSON and text."""
    from gputui.sim.cluster import SimCluster

    with SimCluster(scenario, shift_to_now=True) as sim, tempfile.TemporaryDirectory(prefix="gputui-bad-") as tmp:
        for obj in malformed_objects():
            sim.apply(obj)
        kubeconfig = sim.write_kubeconfig(Path(tmp) / "kubeconfig")
        return [diagnose(kubeconfig, t, o) for t in targets for o in ("json", "text")]


@dataclass
class PropertyRun:
    strategy: str
    examples: int = 0
    errored: dict[str, str] = field(default_factory=dict)
    """check: reason, first seen (with the objects' kinds and names in `witness`)."""
    witness: dict[str, list[str]] = field(default_factory=dict)
    crashed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errored and not self.crashed

    def to_json(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "examples": self.examples, "ok": self.ok, "errored": self.errored,
                "witness": self.witness, "crashed": self.crashed, "seconds": round(self.seconds, 1)}


def diagnose_objects(objs: list[dict[str, Any]]) -> Any:
    """Objects -> Snapshot (the same ingest as live data and bundles) -> Report."""
    from diagnostics import run
    from gputui.collect.one_shot import snapshot_from_objects

    by: dict[str, list[dict[str, Any]]] = {}
    for o in objs:
        by.setdefault(SOURCE_OF_KIND[o["kind"]], []).append(o)
    return run(snapshot_from_objects(by, taken_at=REFERENCE_TIME))


def property_run(strategy: str, examples: int, random_seed: int = 0) -> PropertyRun:
    """Run the checks on `examples` generated clusters; `strategy` is "generated" or "mutated-scenarios"."""
    from hypothesis import HealthCheck, given, seed, settings

    from diagnostics.model import CheckStatus
    from gputui.dev.reliability import strategies

    result = PropertyRun(strategy)
    chosen = strategies.objects if strategy == "generated" else strategies.mutated_scenario()

    @seed(random_seed)
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(chosen)
    def body(objs: list[dict[str, Any]]) -> None:
        result.examples += 1
        try:
            report = diagnose_objects(objs)
            orjson.dumps(report.to_json(), default=str)
        except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
            result.crashed.setdefault(f"{type(exc).__name__}: {exc}"[:200], "")
            return
        for r in report.results:
            if r.status is CheckStatus.ERRORED and r.check not in result.errored:
                result.errored[r.check] = r.reason
                result.witness[r.check] = [f"{o['kind']}/{(o.get('metadata') or {}).get('name')}" for o in objs]

    started = time.monotonic()
    body()
    result.seconds = time.monotonic() - started
    return result
