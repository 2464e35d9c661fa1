"""`python -m gputui.dev.bench.serve --scale L --kubeconfig-out F`: a fleet in a simulator, in its own process.

The simulator runs apart from the measured clients because a big heap slows the cyclic GC of
every thread in its process. Once loaded it prints one JSON line (API URL, control URL, counts,
sample objects) and serves until killed or `POST /shutdown`. The control endpoint (plain HTTP
on 127.0.0.1) reports live object and watch counts and the API requests served (`/requests`, the
one-shot floor replays them), and starts watch bursts: pods modified at a
fixed rate, each stamped with its wall-clock emission time so a client can measure its lag.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import signal
import sys
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from gputui.dev.bench.fleet import SCALES, Fleet
from gputui.dev.bench.procs import rss_mb
from gputui.dev.bench.watchlog import EMITTED, SEQ
from gputui.kube.resources import RESOURCES
from gputui.sim.cluster import SimCluster
from gputui.sim.kinds import KINDS

POD = KINDS.resolve("Pod")
LOAD_CHUNK = 5_000


class Burst:
    """Modify pods at `rate`/s on the simulator's loop; bound GPU pods flip Running <-> Succeeded.

    The phase flips change what the TUI shows (GPUs in use per node); the other pods only get
    the stamp annotations, like the status churn that dominates a real cluster's watch traffic.
    """

    def __init__(self, sim: SimCluster, order: list[tuple[str, str, bool]]) -> None:
        self.sim = sim
        self.order = order
        self.phase: dict[tuple[str, str], str] = {}
        self.seq = 0
        self.planned = 0
        self.emitted = 0
        self.max_behind = 0
        self.running = False
        self.started_at = 0.0
        self.finished_at = 0.0

    def start(self, rate: float, seconds: float) -> dict[str, Any]:
        if self.running:
            return {"error": "a burst is already running"}
        self.planned = int(rate * seconds)
        self.emitted = 0
        self.max_behind = 0
        self.running = True
        self.started_at = time.time()
        self.finished_at = 0.0
        seq0 = self.seq
        self.sim.call(lambda: asyncio.ensure_future(self._run(rate)))
        return {**self.status(), "seq0": seq0}

    def status(self) -> dict[str, Any]:
        return {"running": self.running, "planned": self.planned, "emitted": self.emitted,
                "max_behind": self.max_behind, "started_at": self.started_at, "finished_at": self.finished_at}

    async def _run(self, rate: float) -> None:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        try:
            while self.emitted < self.planned:
                due = min(self.planned, int((loop.time() - t0) * rate) + 1)
                self.max_behind = max(self.max_behind, due - self.emitted)
                while self.emitted < due:
                    self._mutate()
                    self.emitted += 1
                await asyncio.sleep(0.001)
        finally:
            self.running = False
            self.finished_at = time.time()

    def reset(self) -> dict[str, Any]:
        """Put back every GPU pod a burst finished (as ordinary changes, between measurements).

        Each burst flips a different stretch of GPU pods to Succeeded; left as they are, every
        later run would see more idle GPU nodes, more findings and more rows than the first, and
        repeated runs would not measure the same cluster.
        """
        if self.running:
            return {"error": "a burst is running"}
        done = [key for key, phase in self.phase.items() if phase != "Running"]

        def restore() -> None:
            for ns, name in done:
                self.sim.store.patch(POD, ns, name, {"status": {"phase": "Running"}}, "all")

        self.sim.call(restore)
        self.phase.clear()
        return {"restored": len(done)}

    def _mutate(self) -> None:
        seq = self.seq
        self.seq += 1
        ns, name, gpu = self.order[seq % len(self.order)]
        patch: dict[str, Any] = {"metadata": {"annotations": {EMITTED: f"{time.time():.6f}", SEQ: str(seq)}}}
        if gpu:
            phase = "Succeeded" if self.phase.get((ns, name), "Running") == "Running" else "Running"
            self.phase[(ns, name)] = phase
            patch["status"] = {"phase": phase}
        self.sim.store.patch(POD, ns, name, patch, "all")


class Server:
    """A loaded SimCluster plus its control endpoint."""

    def __init__(self, scale: str, seed: int, history_size: int = 30_000) -> None:
        self.scale = SCALES[scale]
        self.seed = seed
        self.sim = SimCluster(None, history_size=history_size)
        self.fleet = Fleet(self.scale, seed=seed)
        self.load_s = 0.0
        self.stop_event = threading.Event()
        self.control: ThreadingHTTPServer | None = None
        self.burst: Burst | None = None

    def load(self) -> None:
        t0 = time.perf_counter()
        chunk: list[dict[str, Any]] = []
        for obj in self.fleet.objects():
            chunk.append(obj)
            if len(chunk) >= LOAD_CHUNK:
                self.sim.bulk_load(chunk)
                chunk = []
        if chunk:
            self.sim.bulk_load(chunk)
        del chunk
        gc.collect()
        gc.freeze()  # the loaded store is long-lived: keep the GC from rescanning it
        self.load_s = time.perf_counter() - t0
        idx = self.fleet.index
        order = [(ns, n, True) for ns, n in idx.gpu_pods] + [(ns, n, False) for ns, n in idx.other_pods]
        random.Random(self.seed).shuffle(order)
        self.burst = Burst(self.sim, order)

    def counts(self) -> dict[str, int]:
        def read() -> dict[str, int]:
            return {s: self.sim.store.count(KINDS.resolve(r.kind)) for s, r in RESOURCES.items()}
        return self.sim.call(read)

    def watches(self) -> dict[str, int]:
        def read() -> dict[str, int]:
            out: dict[str, int] = {}
            for w in self.sim.store.watchers():
                out[w.info.kind] = out.get(w.info.kind, 0) + 1
            return out
        return self.sim.call(read)

    def info(self, kubeconfig: str) -> dict[str, Any]:
        idx = self.fleet.index
        return {
            "scale": self.scale.name, "url": self.sim.url, "kubeconfig": kubeconfig,
            "control": f"http://127.0.0.1:{self.control.server_address[1]}" if self.control else "",
            "counts": self.counts(), "load_s": round(self.load_s, 2), "rss_mb": rss_mb(),
            "samples": {"pending_pod": "/".join(idx.pending_pods[0]) if idx.pending_pods else "",
                        "gpu_pod": "/".join(idx.gpu_pods[0]) if idx.gpu_pods else "",
                        "gpu_node": idx.gpu_nodes[0] if idx.gpu_nodes else ""},
        }

    def serve_control(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet: the benchmark prints its own table
                pass

            def _send(self, body: Any, code: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                path = urlparse(self.path).path
                if path == "/counts":
                    self._send(server.counts())
                elif path == "/watches":
                    self._send(server.watches())
                elif path == "/burst":
                    assert server.burst is not None
                    self._send(server.burst.status())
                elif path == "/rss":
                    self._send({"rss_mb": rss_mb()})
                elif path == "/requests":
                    self._send(server.sim.requests())
                else:
                    self._send({"error": f"no such endpoint {path}"}, 404)

            def do_POST(self) -> None:  # noqa: N802
                url = urlparse(self.path)
                q = {k: v[-1] for k, v in parse_qs(url.query).items()}
                if url.path == "/burst":
                    assert server.burst is not None
                    self._send(server.burst.start(float(q.get("rate", 1000)), float(q.get("seconds", 20))))
                elif url.path == "/reset":
                    assert server.burst is not None
                    self._send(server.burst.reset())
                elif url.path == "/requests/clear":
                    server.sim.call(server.sim.server.requests.clear)
                    self._send({"ok": True})
                elif url.path == "/shutdown":
                    self._send({"ok": True})
                    server.stop_event.set()
                else:
                    self._send({"error": f"no such endpoint {url.path}"}, 404)

        self.control = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.control.daemon_threads = True
        threading.Thread(target=self.control.serve_forever, name="bench-control", daemon=True).start()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gputui.dev.bench.serve", description=__doc__.splitlines()[0])
    p.add_argument("--scale", choices=sorted(SCALES), default="S")
    p.add_argument("--seed", type=int, default=20260821)
    p.add_argument("--kubeconfig-out", required=True, help="where to write the kubeconfig for the simulator")
    p.add_argument("--port", type=int, default=0, help="API port (default: any free port)")
    args = p.parse_args(argv)
    server = Server(args.scale, args.seed)
    server.load()
    server.sim.port = args.port
    server.sim.start()
    kubeconfig = str(server.sim.write_kubeconfig(Path(args.kubeconfig_out)))
    server.serve_control()
    signal.signal(signal.SIGTERM, lambda *_: server.stop_event.set())
    print(json.dumps(server.info(kubeconfig)), flush=True)
    try:
        while not server.stop_event.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    if server.control is not None:
        server.control.shutdown()
    server.sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
