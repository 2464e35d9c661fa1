"""`python -m gputui.dev.bench.cache_probe --kubeconfig F`: gputui's live cache from a cold process.

Starts a LiveSession (the informers every gputui view reads), waits until every kind is listed
and its watch is open, then times full-cluster diagnostics on the warm cache and, when asked, a
watch burst's cache lag. Prints one JSON line: wall-clock milestones (the parent subtracts its
spawn time), per-kind counts, diagnostics timings, peak RSS.
"""

from __future__ import annotations

import time

T_START = time.time()

import argparse  # noqa: E402 - the start time is taken before anything else loads
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402


def _profile_top(fn: Any, out: str, limit: int = 40) -> None:
    """cProfile one call of `fn` and write the top functions by cumulative time to `out`."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.runcall(fn)
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("cumulative").print_stats(limit)
    stats.sort_stats("tottime").print_stats(limit)
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(buf.getvalue())


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gputui.dev.bench.cache_probe", description=__doc__.splitlines()[0])
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the cache")
    p.add_argument("--diag-runs", type=int, default=5, help="full-cluster diagnostics runs on the warm cache")
    p.add_argument("--profile", help="write a cProfile of one diagnostics run to this file")
    p.add_argument("--control", help="the benchmark server's control URL, for a watch burst")
    p.add_argument("--burst-rate", type=float, default=0.0)
    p.add_argument("--burst-seconds", type=float, default=20.0)
    args = p.parse_args(argv)

    t_imports = time.time()
    from diagnostics.snapshot import KUBE_SOURCES
    from gputui.dev.bench.procs import rss_mb
    from gputui.kube.api import Api, load
    from gputui.collect.live import LiveSession

    class TimedApi(Api):
        """Notes when each watch request got its response headers (the watch is open)."""

        watch_opened: dict[str, float] = {}

        def _request(self, method: str, path: str, query: list[tuple[str, Any]] | None = None,
                     *a: Any, **kw: Any) -> Any:
            resp = super()._request(method, path, query, *a, **kw)
            if query and ("watch", "true") in query:
                self.watch_opened.setdefault(path, time.time())
            return resp

    t_imported = time.time()
    client, info = load(args.kubeconfig)
    api = TimedApi(client)
    session = LiveSession(api, info)
    log = None
    if args.burst_rate > 0 and args.control:
        from gputui.dev.bench.watchlog import WatchLog

        log = WatchLog()
        log.attach(session.store)
    session.start()
    synced = session.wait_synced(args.timeout)
    t_synced = time.time()
    deadline = time.time() + 30
    while len(api.watch_opened) < len(KUBE_SOURCES) and time.time() < deadline:
        time.sleep(0.002)
    t_watching = max(api.watch_opened.values()) if api.watch_opened else None
    complete = synced and len(api.watch_opened) == len(KUBE_SOURCES)
    counts = {s: session.store.count(s) for s in KUBE_SOURCES}
    rss_cache = rss_mb()
    statuses = {s: st.state.value for s, st in session.store.status().items()}

    from diagnostics import run
    from diagnostics.model import CheckStatus

    runs = []
    report = None
    for _ in range(max(1, args.diag_runs)):
        t0 = time.perf_counter()
        snap = session.snapshot()
        t1 = time.perf_counter()
        snap.index  # noqa: B018 - built once per snapshot; timed apart from the checks
        t2 = time.perf_counter()
        report = run(snap)
        t3 = time.perf_counter()
        runs.append({"snapshot_ms": round((t1 - t0) * 1000, 1), "index_ms": round((t2 - t1) * 1000, 1),
                     "checks_ms": round((t3 - t2) * 1000, 1), "total_ms": round((t3 - t0) * 1000, 1)})
    if args.profile:
        _profile_top(lambda: run(session.snapshot()), args.profile)
    assert report is not None
    by_status: dict[str, int] = {}
    for r in report.results:
        by_status[r.status.value] = by_status.get(r.status.value, 0) + 1
    errored = {r.check: r.reason for r in report.results if r.status is CheckStatus.ERRORED}
    by_check: dict[str, int] = {}
    for f in report.findings:
        by_check[f.check] = by_check.get(f.check, 0) + 1

    watch = None
    if log is not None and args.control:
        from gputui.dev.bench.watchlog import GcPauses, run_burst

        with GcPauses() as gc_pauses:
            burst = run_burst(args.control, log, args.burst_rate, args.burst_seconds)
        watch = {"planned": burst["planned"], "applied": len(log.since(burst["seq0"])), "gc": gc_pauses.summary(),
                 "server_max_behind": burst["server"].get("max_behind"),
                 "cache_lag": log.cache_lag(burst["seq0"]),
                 "relists": sum(i.relists for i in session.informers) - len(session.informers)}

    out = {
        "t_start": T_START, "t_imports": t_imports, "t_imported": t_imported, "t_synced": t_synced,
        "t_watching": t_watching, "t_complete": max(t_synced, t_watching or t_synced), "complete": complete,
        "counts": counts, "statuses": statuses, "rss_at_cache_mb": rss_cache,
        "diagnostics": {"runs": runs, "findings": len(report.findings), "results": by_status, "errored": errored,
                        "findings_by_check": by_check},
        "watch": watch, "rss_mb": rss_mb(),
    }
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)  # skip tearing down a big heap and the informer threads: the measurement is over


if __name__ == "__main__":
    sys.exit(main())
