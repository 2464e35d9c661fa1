"""Run the fleet benchmark: one simulator process, then every client timed in its own fresh process.

Order per repeat: gputui's cache, the floor, kubectl, the kubernetes client's models (interleaved
so drift on a shared machine hits them alike); then the one-shot beside the guide's kubectl
checklist and its floor; then the TUI (first useful screen, key latency, a watch burst). Every raw
run is kept with the load average before it; `summarize` turns them into per-pair ratios and
verdicts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputui.dev.bench.fleet import SCALES
from gputui.dev.bench.floor import server_and_token
from gputui.dev.bench.machine import load_average, machine_facts
from gputui.dev.bench.procs import ServerProcess, Timed, run_timed

REPO = Path(__file__).resolve().parents[3]
KUBECTL_KINDS = ("nodes", "pods", "events", "nodeclaims", "nodepools")
_KUBECTL_ITEM_KIND = re.compile(rb'\n {12}"kind": "([A-Za-z]+)"')
_KIND_SOURCE = {"Node": "nodes", "Pod": "pods", "Event": "events", "NodeClaim": "nodeclaims", "NodePool": "nodepools"}


@dataclass
class Options:
    scale: str = "S"
    repeat: int = 3
    burst_rate: float = 1000.0
    burst_seconds: float = 20.0
    models_timeout: float = 300.0
    """Cap for the kubernetes client's model deserialization (reported as "> cap" when hit)."""
    probe_timeout: float = 900.0
    diag_runs: int = 5
    tui: bool = True
    cold_start: bool = True
    """Measure the cold start (gputui's cache, the floor, kubectl, the client's models): minutes at L."""
    key_rounds: int = 2
    """Rounds of timed keys per TUI run (each key of a round once)."""
    cache_burst: bool = True
    """Also measure cache lag in a cache-only process (first repeat), apart from the TUI's."""
    profile: bool = False
    """cProfile one diagnostics run (first repeat) into the work directory."""
    workdir: Path | None = None
    kubectl: str | None = field(default_factory=lambda: shutil.which("kubectl"))
    python: str = sys.executable
    seed: int = 20260821


PYCACHE = Path(tempfile.gettempdir()) / "gputui-bench-pycache"


def child_env() -> dict[str, str]:
    """The caller's environment minus what would point gputui elsewhere; AWS never dials IMDS.

    Bytecode is cached (in a private prefix, never in the source tree) even when the caller sets
    PYTHONDONTWRITEBYTECODE: an installed gputui has its .pyc files, and compiling ~80 modules on
    every start would add ~0.2 s to each measured process start.
    """
    env = dict(os.environ)
    for var in ("GPUTUI_NOW", "KUBECONFIG", "GPUTUI_PROMETHEUS_URL", "GPUTUI_PROMETHEUS_TOKEN", "GPUTUI_DEBUG",
                "PYTHONDONTWRITEBYTECODE"):
        env.pop(var, None)
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


class Bench:
    def __init__(self, opts: Options, log: Callable[[str], None]) -> None:
        self.opts = opts
        self.log = log
        self.env = child_env()
        self.workdir = opts.workdir or Path(tempfile.mkdtemp(prefix="gputui-bench-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.kubectl_cache = self.workdir / "kubectl-cache"
        self.server: ServerProcess | None = None
        self.server_counts: dict[str, int] = {}
        self.oneshot_paths: Path | None = None

    # --- helpers ---
    def probe(self, module: str, *args: str, timeout: float | None = None) -> Timed:
        return run_timed([self.opts.python, "-m", module, *args], timeout=timeout or self.opts.probe_timeout,
                         env=self.env, cwd=str(REPO))

    def kubectl(self, *args: str, stdout_path: str | None = None, timeout: float | None = None) -> Timed:
        assert self.opts.kubectl
        return run_timed([self.opts.kubectl, "--kubeconfig", self.kubeconfig, "--cache-dir", str(self.kubectl_cache),
                          *args], timeout=timeout or self.opts.probe_timeout, env=self.env, stdout_path=stdout_path)

    @property
    def kubeconfig(self) -> str:
        assert self.server is not None
        return str(self.server.kubeconfig)

    @property
    def control(self) -> str:
        assert self.server is not None
        return self.server.control

    def _error(self, t: Timed) -> dict[str, Any]:
        what = "timed out" if t.timed_out else f"exit {t.returncode}"
        return {"error": f"{what}: {t.stderr.strip()[-1500:]}", "wall_s": round(t.wall_s, 3)}

    def reset_burst(self) -> None:
        """After a probe's burst (its process has exited): put the pods it finished back, so every
        run measures the same cluster."""
        assert self.server is not None
        answer = self.server.post("/reset")
        if "error" in answer:
            self.log(f"  could not reset the burst's changes: {answer['error']}")

    # --- measurements ---
    def gputui_cache(self, first: bool) -> dict[str, Any]:
        args = ["--kubeconfig", self.kubeconfig, "--diag-runs", str(self.opts.diag_runs)]
        if first and self.opts.cache_burst and self.opts.burst_rate > 0:
            args += ["--control", self.control, "--burst-rate", str(self.opts.burst_rate),
                     "--burst-seconds", str(self.opts.burst_seconds)]
        if first and self.opts.profile:
            args += ["--profile", str(self.workdir / "diagnostics.prof.txt")]
        t = self.probe("gputui.dev.bench.cache_probe", *args)
        if "--control" in args:
            self.reset_burst()
        r = t.result
        if not r or "t_complete" not in r:
            return self._error(t)
        return {
            "complete_s": round(r["t_complete"] - t.spawned_at, 3),
            "synced_s": round(r["t_synced"] - t.spawned_at, 3),
            "interpreter_s": round(r["t_start"] - t.spawned_at, 3),
            "imports_s": round(r["t_imported"] - r["t_imports"], 3),
            "list_and_watch_s": round(r["t_complete"] - r["t_imported"], 3),
            "complete": r["complete"], "counts": r["counts"], "counts_match": r["counts"] == self.server_counts,
            "statuses": r["statuses"], "rss_at_cache_mb": r["rss_at_cache_mb"].get("VmHWM"),
            "peak_rss_mb": r["rss_mb"].get("VmHWM"), "diagnostics": r["diagnostics"], "watch": r.get("watch"),
        }

    def floor(self) -> dict[str, Any]:
        t = self.probe("gputui.dev.bench.floor", "--kubeconfig", self.kubeconfig)
        r = t.result
        if not r or "t_done" not in r:
            return self._error(t)
        return {"complete_s": round(r["t_done"] - t.spawned_at, 3), "counts": r["counts"],
                "counts_match": r["counts"] == self.server_counts, "bytes": r["bytes"], "errors": r["errors"],
                "peak_rss_mb": round(t.maxrss_mb, 1)}

    def kubectl_get(self) -> dict[str, Any]:
        out = self.workdir / "kubectl-get.json"
        t = self.kubectl("get", ",".join(KUBECTL_KINDS), "-A", "-o", "json", stdout_path=str(out))
        if t.returncode != 0:
            out.unlink(missing_ok=True)
            return self._error(t)
        counts: dict[str, int] = {}
        for m in _KUBECTL_ITEM_KIND.finditer(out.read_bytes()):
            source = _KIND_SOURCE.get(m.group(1).decode(), m.group(1).decode())
            counts[source] = counts.get(source, 0) + 1
        size = out.stat().st_size
        out.unlink()
        expected = {k: self.server_counts.get(k, 0) for k in KUBECTL_KINDS}
        return {"complete_s": round(t.wall_s, 3), "counts": counts, "counts_match": counts == expected,
                "output_bytes": size, "peak_rss_mb": round(t.maxrss_mb, 1)}

    def models(self) -> dict[str, Any]:
        t = self.probe("gputui.dev.bench.models_probe", "--kubeconfig", self.kubeconfig, timeout=self.opts.models_timeout)
        r = t.result
        if t.timed_out:
            return {"timed_out": True, "cap_s": self.opts.models_timeout, "progress": r,
                    "peak_rss_mb": round(t.maxrss_mb, 1)}
        if not r or r.get("partial", True):
            return self._error(t)
        return {"complete_s": round(r["t_done"] - t.spawned_at, 3), "counts": r["counts"],
                "counts_match": r["counts"] == self.server_counts, "seconds": r["seconds"],
                "peak_rss_mb": round(t.maxrss_mb, 1)}

    def diagnose(self, target: str) -> dict[str, Any]:
        """`gputui diagnose pod/NS/NAME`, process start to exit."""
        ns, name = target.split("/", 1)
        d = run_timed([self.opts.python, "-m", "gputui", "diagnose", f"pod/{ns}/{name}", "--kubeconfig",
                       self.kubeconfig], timeout=self.opts.probe_timeout, env=self.env, cwd=str(REPO))
        if d.returncode in (0, 3, 4) and name in d.stdout:
            return {"wall_s": round(d.wall_s, 3), "exit": d.returncode, "peak_rss_mb": round(d.maxrss_mb, 1)}
        return self._error(d)

    def checklist(self, target: str, node: str) -> dict[str, Any]:
        """What a user does instead: the Karpenter GPU guide's manual checklist, one command after another.

        The guide's troubleshooting section ("Analyze pending pod causes", "Check NodeClaim status",
        "GPU resources not showing on node", "Check GPU Operator pod status") plus the events, with
        the installed kubectl; the time is the sum of the five processes (nobody types faster).
        """
        ns, name = target.split("/", 1)
        steps: dict[str, Any] = {}
        total, peak = 0.0, 0.0
        for label, args in checklist_steps(ns, name, node):
            k = self.kubectl(*args)
            if k.returncode != 0:
                return {**self._error(k), "step": label}
            steps[label] = round(k.wall_s, 3)
            total += k.wall_s
            peak = max(peak, k.maxrss_mb)
        return {"wall_s": round(total, 3), "steps": steps, "peak_rss_mb": round(peak, 1)}

    def oneshot_floor(self) -> dict[str, Any]:
        """The one-shot's GETs (captured by `capture_oneshot_reads`), all at once with urllib + json."""
        assert self.oneshot_paths is not None
        if not self.oneshot_paths.read_text().strip():
            return {"error": "the one-shot made no GET to replay (did its untimed run fail?)"}
        server, token = server_and_token(self.kubeconfig)
        t = run_timed([self.opts.python, "-m", "gputui.dev.bench.oneshot_floor", "--server", server, "--paths",
                       str(self.oneshot_paths)], timeout=self.opts.probe_timeout,
                      env={**self.env, "GPUTUI_BENCH_TOKEN": token}, cwd=str(REPO))
        r = t.result
        if not r or "t_done" not in r or r.get("errors"):
            return {**self._error(t), **({"errors": r["errors"]} if r.get("errors") else {})}
        return {"wall_s": round(t.wall_s, 3), "requests": r["requests"], "bytes": r["bytes"], "items": r["items"],
                "peak_rss_mb": round(t.maxrss_mb, 1)}

    def capture_oneshot_reads(self, target: str) -> list[str]:
        """Run the one-shot once, untimed, and keep the GETs it made (from the simulator's request log)."""
        assert self.server is not None
        self.server.post("/requests/clear")
        self.diagnose(target)
        paths = [path for method, path in self.server.get("/requests")
                 if method == "GET" and "watch=" not in path]
        self.oneshot_paths = self.workdir / "oneshot-paths.txt"
        self.oneshot_paths.write_text("".join(p + "\n" for p in paths))
        return paths

    def oneshot_pair(self, target: str, node: str, flip: bool) -> dict[str, Any]:
        """gputui, the checklist and the floor back to back (in reverse order every other pair, so a
        drifting machine load hits all three alike), with the load average before the pair."""
        out: dict[str, Any] = {"load": load_average()[:1]}
        order = ["gputui", "checklist", "floor"]
        for what in reversed(order) if flip else order:
            if what == "gputui":
                out["gputui"] = self.diagnose(target)
            elif what == "checklist" and self.opts.kubectl:
                out["checklist"] = self.checklist(target, node)
            elif what == "floor":
                out["floor"] = self.oneshot_floor()
        return out

    def oneshot_imports(self, target: str) -> dict[str, Any]:
        """Does `gputui diagnose` import Textual or boto3, and what do its imports cost (`python -X importtime`)?"""
        ns, name = target.split("/", 1)
        t = run_timed([self.opts.python, "-X", "importtime", "-m", "gputui", "diagnose", f"pod/{ns}/{name}",
                       "--kubeconfig", self.kubeconfig], timeout=self.opts.probe_timeout, env=self.env, cwd=str(REPO),
                      keep_stderr=None)
        modules = parse_importtime(t.stderr)
        top = {m: us for m, (us, depth) in modules.items() if depth == 0}
        return {"imports_textual": any(m.split(".")[0] == "textual" for m in modules),
                "imports_boto3": any(m.split(".")[0] == "boto3" for m in modules),
                "import_ms": round(sum(top.values()) / 1000, 1),
                "top_imports_ms": {m: round(us / 1000, 1) for m, us in sorted(top.items(), key=lambda kv: -kv[1])[:8]}}

    def tui(self, sample_pod: str) -> dict[str, Any]:
        sc = SCALES[self.opts.scale]
        args = ["--kubeconfig", self.kubeconfig, "--expect-gpu-nodes", str(sc.gpu_nodes), "--expect-pending",
                str(sc.pending), "--key-rounds", str(self.opts.key_rounds),
                "--filter-text", sample_pod.split("/", 1)[1][:6]]
        if self.opts.burst_rate > 0:
            args += ["--control", self.control, "--burst-rate", str(self.opts.burst_rate),
                     "--burst-seconds", str(self.opts.burst_seconds)]
        t = self.probe("gputui.dev.bench.tui_probe", *args)
        if "--control" in args:
            self.reset_burst()
        r = t.result
        if not r or "t_first_complete" not in r:
            return self._error(t)
        return {"first_complete_s": round(r["t_first_complete"] - t.spawned_at, 3),
                "first_useful_s": round(r["t_first_useful"] - t.spawned_at, 3) if r.get("t_first_useful") else None,
                "keys": r.get("keys", {}),
                "synced_s": round(r["t_synced"] - t.spawned_at, 3) if r.get("t_synced") else None,
                "imports_s": round(r["t_imported"] - r["t_start"], 3), "first_frame": r["first_frame"],
                "frames_before_complete": r["frames_before_complete"], "rows": r["rows"],
                "rss_at_first_mb": r["rss_at_first_mb"].get("VmHWM"), "peak_rss_mb": r["rss_mb"].get("VmHWM"),
                "watch": r.get("watch")}

    # --- the whole run ---
    def warm_up(self, sample_pod: str) -> None:
        """Untimed: compile .pyc files, fill kubectl's discovery cache, and have the server answer every
        list once, as on a machine and a cluster in use (a freshly loaded simulator serves its first
        full lists ~2x slower, which penalised whichever client was timed first)."""
        subprocess.run([self.opts.python, "-c", "import gputui.collect.live, gputui.tui.app, gputui.cli.diagnose, "
                        "kubernetes.client; from diagnostics.registry import all_checks; all_checks()"],
                       env=self.env, cwd=str(REPO), capture_output=True, timeout=300)
        self.floor()
        if self.opts.kubectl:
            self.kubectl("api-resources", timeout=120)
            ns, name = sample_pod.split("/", 1)
            self.kubectl("describe", "pod", name, "-n", ns, timeout=120)

    def run(self) -> dict[str, Any]:
        opts = self.opts
        facts = machine_facts(opts.kubectl)
        self.log(f"scale {opts.scale}: starting the simulator (loading the fleet)...")
        t0 = time.perf_counter()
        self.server = ServerProcess(opts.scale, self.workdir, seed=opts.seed, python=opts.python, env=self.env)
        try:
            info = self.server.info
            self.server_counts = dict(info["counts"])
            self.log(f"  loaded in {time.perf_counter() - t0:.1f} s: {self.server_counts}")
            sample = info["samples"]["pending_pod"]
            node = info["samples"]["gpu_node"]
            self.warm_up(sample)
            self.capture_oneshot_reads(sample)
            cold: dict[str, list[dict[str, Any]]] = {"gputui": [], "floor": [], "kubectl": [], "models": []}
            oneshot: list[dict[str, Any]] = []
            tui: list[dict[str, Any]] = []
            models_capped = False
            for r in range(opts.repeat if opts.cold_start else 0):
                self.log(f"  cold start, run {r + 1}/{opts.repeat}")
                cold.setdefault("load", []).append({"load": load_average()[:1]})
                if r % 2:  # every other pair the floor goes first: drift on a shared machine hits both alike
                    cold["floor"].append(self.floor())
                    cold["gputui"].append(self.gputui_cache(first=False))
                else:
                    cold["gputui"].append(self.gputui_cache(first=r == 0))
                    cold["floor"].append(self.floor())
                if opts.kubectl:
                    cold["kubectl"].append(self.kubectl_get())
                if not models_capped:
                    m = self.models()
                    models_capped = bool(m.get("timed_out"))
                    cold["models"].append(m)
            for r in range(opts.repeat):
                self.log(f"  one-shot, pair {r + 1}/{opts.repeat}")
                oneshot.append(self.oneshot_pair(sample, node, flip=r % 2 == 1))
            imports = self.oneshot_imports(sample)
            if opts.tui:
                for r in range(opts.repeat):
                    self.log(f"  TUI, run {r + 1}/{opts.repeat}")
                    tui.append({"load": load_average()[:1], **self.tui(sample)})
            server_rss = self.server.get("/rss")["rss_mb"]
            counts_after = self.server.get("/counts")
        finally:
            self.server.stop()
        facts["load_average_end"] = load_average()
        sc = SCALES[opts.scale]
        return {
            "scale": opts.scale,
            "fleet": {"nodes": sc.nodes, "gpu_nodes": sc.gpu_nodes, "gpus_per_node": sc.gpus_per_node,
                      "pods": sc.pods, "gpu_pods": sc.gpu_pods, "pending_gpu_pods": sc.pending,
                      "nodeclaims": sc.nodeclaims, "nodepools": sc.nodepools, "ec2nodeclasses": sc.nodeclasses,
                      "events": sc.events, "server_counts": self.server_counts, "server_counts_after": counts_after,
                      "server_load_s": info["load_s"], "server_rss_mb": server_rss, "seed": opts.seed},
            "options": {"repeat": opts.repeat, "burst_rate": opts.burst_rate, "burst_seconds": opts.burst_seconds,
                        "models_timeout_s": opts.models_timeout, "diag_runs": opts.diag_runs},
            "machine": facts,
            "runs": {"cold_start": cold, "oneshot": oneshot, "oneshot_imports": imports, "tui": tui,
                     "oneshot_reads": self.oneshot_paths.read_text().splitlines() if self.oneshot_paths else []},
        }


def checklist_steps(ns: str, name: str, node: str) -> list[tuple[str, list[str]]]:
    """The guide's manual checklist for "why is this GPU pod pending", as kubectl arguments."""
    return [("describe pod", ["describe", "pod", name, "-n", ns]),
            ("get nodeclaims -o wide", ["get", "nodeclaims", "-o", "wide"]),
            ("describe node", ["describe", "node", node]),
            ("get pods -n gpu-operator", ["get", "pods", "-n", "gpu-operator"]),
            ("get events", ["get", "events", "-A"])]


def parse_importtime(stderr: str) -> dict[str, tuple[int, int]]:
    """Module -> (cumulative microseconds, nesting depth) from `python -X importtime` output."""
    out: dict[str, tuple[int, int]] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        _self, cum, name = line.split("|")
        if not cum.strip().isdigit():
            continue  # the header line
        bare = name[1:]
        out[bare.strip()] = (int(cum), (len(bare) - len(bare.lstrip(" "))) // 2)
    return out
