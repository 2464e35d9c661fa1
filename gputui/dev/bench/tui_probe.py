"""`python -m gputui.dev.bench.tui_probe --kubeconfig F`: the TUI headless, launch to first complete overview.

Runs the real GputuiApp on a real LiveSession under `run_test` (Textual's headless driver still
composes and renders every frame; it only skips writing to a terminal). Subclasses observe without
changing behaviour: the overview screen times each `refresh_data` (the UI-thread work of a table
update), the app notes each SnapshotReady and when the screen was refreshed after it, and the
frame worker's model times each update. With `--control`, a watch burst follows; each stamped
change is matched to the first frame whose snapshot contains it (event -> screen), and to the
first frame whose findings were computed from a snapshot that contains it (event -> findings:
diagnostics run on their own cadence), and a 20 ms timer measures how long the UI loop stalls.
Before the burst: the first useful screen (every GPU node and pending GPU pod with their
findings) and, with `--key-rounds`, key -> repaint latency for posted key events.
"""

from __future__ import annotations

import time

T_START = time.time()

import argparse  # noqa: E402
import asyncio  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

TABLES = ("findings", "nodes", "pods", "nodeclaims", "nodepools")


def event_to_screen(events: Sequence[Any], frames: Sequence[dict[str, Any]],
                    t_end: float, version: str = "version") -> tuple[dict[str, list[float]], int]:
    """Seconds from each change's emission to the paint of the first frame whose snapshot holds it.

    A frame's `version` is the store version its snapshot was cut at (a lower bound of what it
    shows), so a change applied at version v is on screen in the first frame with version >= v
    (`version="diag_version"`: the first frame whose findings come from such a snapshot).
    Returns the latencies with their parts (cache lag; waiting for the frame worker to start; its
    update of the rows; handing the frame to the UI, updating the tables and painting) and how
    many changes no frame showed by `t_end`: those count in "total" as `t_end - emitted`, a lower
    bound, so a screen that never caught up reads as slow rather than as no data.
    """
    ordered = sorted((f for f in frames if f.get(version) is not None), key=lambda f: f[version])
    parts: dict[str, list[float]] = {"total": [], "cache": [], "wait": [], "build": [], "ui": []}
    missing = 0
    i = 0
    for e in sorted(events, key=lambda e: e.version):
        while i < len(ordered) and ordered[i][version] < e.version:
            i += 1
        if i == len(ordered):
            missing += 1
            parts["total"].append(t_end - e.emitted)
            continue
        f = ordered[i]
        parts["total"].append(f["painted"] - e.emitted)
        parts["cache"].append(e.applied - e.emitted)
        if f.get("build_start") is not None:
            parts["wait"].append(max(0.0, f["build_start"] - e.applied))
            parts["build"].append(f["build_end"] - f["build_start"])
            parts["ui"].append(f["painted"] - f["build_end"])
    return parts, missing


def first_useful(frames: Sequence[dict[str, Any]], gpu_nodes: int, pending: int) -> dict[str, Any] | None:
    """The first painted frame showing every GPU node and pending GPU pod with findings computed from them.

    What the on-call engineer opened the TUI for, whether or not the full pod list (needed for
    GPUs in use per node and the whole checklist) has arrived: the tables hold `gpu_nodes` and
    `pending` rows in some frame at version v, and this frame's findings come from a diagnostics
    run on a snapshot at v or later.
    """
    full = [f["version"] for f in frames if f["gpu_nodes"] >= gpu_nodes and f["pending_pods"] >= pending]
    if not full:
        return None
    v = min(full)
    return next((f for f in frames if f.get("diag_version") is not None and f["diag_version"] >= v
                 and f["gpu_nodes"] >= gpu_nodes and f["pending_pods"] >= pending), None)


KEY_ROUND = (("down", "down", None), (": opening the jump prompt", "colon", ":"), (":nodes typing", "n", "n"), (":nodes typing", "o", "o"),
             (":nodes typing", "d", "d"), (":nodes typing", "e", "e"), (":nodes typing", "s", "s"),
             (":nodes Enter", "enter", "\r"), ("Esc restoring the overview", "escape", "\x1b"),
             ("/ opening the filter", "slash", "/"))
"""(label, key, character) of one round; the filter's keystrokes and Esc follow (see `press_keys`)."""


async def press_keys(app: Any, displays: list[float], rounds: int, filter_text: str,
                     quiet: float = 0.15, cap: float = 10.0) -> dict[str, list[float]]:
    """Key -> repaint latencies (seconds) by key, from key events posted as a terminal driver posts them.

    `pilot.press` waits for the app to go idle between keys; here each key is posted on its own
    and timed until the last screen update it caused: the first update, however long it takes
    (up to `cap`), then no further one for `quiet` s. A key with no update within `cap` counts as
    `cap` (a lower bound), never as missing: dropping it would drop the slowest. A focused Input's
    cursor blink is turned off so its repaints are not taken for the key's.
    """
    from textual import events
    from textual.widgets import Input

    out: dict[str, list[float]] = {}
    keys = list(KEY_ROUND) + [("filter keystroke that narrows", c, c) for c in filter_text] + [
        ("filter Enter", "enter", "\r"), ("Esc clearing a filter", "escape", "\x1b")]
    for _ in range(rounds):
        for label, key, char in keys:
            await asyncio.sleep(quiet)
            n0 = len(displays)
            event = events.Key(key, char)
            event.set_sender(app)
            t0 = time.perf_counter()
            app.post_message(event)
            deadline = t0 + cap
            while time.perf_counter() < deadline:
                await asyncio.sleep(0.005)
                if len(displays) > n0 and time.perf_counter() - displays[-1] > quiet:
                    break
            out.setdefault(label, []).append(displays[-1] - t0 if len(displays) > n0 else cap)
            focused = app.focused
            if isinstance(focused, Input):
                focused.cursor_blink = False
    return out


async def drive(args: argparse.Namespace) -> dict[str, Any]:
    from diagnostics.snapshot import KUBE_SOURCES
    from gputui.dev.bench.procs import rss_mb
    from gputui.dev.bench.stats import summary_ms
    from gputui.dev.bench.watchlog import GcPauses, WatchLog, run_burst
    from gputui.kube.api import Api, load
    from gputui.collect.live import LiveSession

    # As `gputui` does (gputui.cli.tui.start_early): the session starts before Textual loads.
    client, info = load(args.kubeconfig)
    session = LiveSession(Api(client), info, pending_first=not args.all_pods_first)
    log = WatchLog()
    log.attach(session.store)
    threading.Thread(target=session.start, name="session-start", daemon=True).start()

    from gputui.tui.app import GputuiApp
    from gputui.tui.messages import SnapshotReady
    from gputui.tui.overview_model import OverviewModel
    from gputui.tui.screens.overview import OverviewScreen
    from gputui.tui.widgets.keyed_table import KeyedTable

    t_imported = time.time()
    frames: list[dict[str, Any]] = []
    state: dict[str, Any] = {"current": None, "last_version": -1}
    build_times: dict[int, tuple[float, float]] = {}

    class TimedModel(OverviewModel):
        """The frame worker's model, timed per update (keyed by the frame's snapshot)."""

        def update(self, changes: Any, diagnosis: Any) -> Any:
            t0 = time.time()
            frame = super().update(changes, diagnosis)
            build_times[id(frame.snapshot)] = (t0, time.time())
            return frame

    def painted(frame: dict[str, Any]) -> None:
        frame["painted"] = time.time()
        frames.append(frame)

    class BenchOverview(OverviewScreen):
        def refresh_data(self) -> None:
            t0 = time.perf_counter()
            super().refresh_data()
            frame = state["current"]
            if frame is not None and "update_s" not in frame:
                frame["update_s"] = time.perf_counter() - t0

    displays: list[float] = []

    class BenchApp(GputuiApp):
        # Textual resolves a relative CSS_PATH against the subclass's file: point at the app's own.
        CSS_PATH = str(Path(inspect.getfile(GputuiApp)).parent / str(GputuiApp.CSS_PATH))
        MODEL = TimedModel

        def _display(self, screen: Any, renderable: Any) -> None:
            # Every compositor update of the screen (headless: laid out and rendered, not written).
            if renderable is not None:
                displays.append(time.perf_counter())
            super()._display(screen, renderable)

        def get_default_screen(self) -> Any:
            return BenchOverview()

        def on_snapshot_ready(self, message: SnapshotReady) -> None:
            # Textual calls this, then GputuiApp.on_snapshot_ready (handlers run along the MRO).
            if message.version < state["last_version"] and not message.forced:
                return
            state["last_version"] = message.version
            snap = message.snapshot
            started, ended = build_times.pop(id(snap), (None, None))
            diagnosis = message.frame.diagnosis if message.frame is not None else None
            tables = message.frame.tables if message.frame is not None else {}
            frame = {"version": message.version, "received": time.time(), "build_start": started,
                     "build_end": ended, "gpu_nodes": len(tables.get("nodes", ())),
                     "pending_pods": len(tables.get("pods", ())),
                     "diag_version": diagnosis.version if diagnosis is not None and diagnosis.report is not None
                     else None,
                     "complete": message.report is not None
                     and all(snap.status(s).state.usable and not snap.status(s).partial for s in KUBE_SOURCES)}
            state["current"] = frame
            self.call_after_refresh(painted, frame)

    app = BenchApp(session=session, title="bench", read_only=True)
    width, height = (int(x) for x in args.size.split("x"))
    result: dict[str, Any] = {"t_start": T_START, "t_imported": t_imported}
    async with app.run_test(size=(width, height)) as pilot:
        deadline = time.time() + args.timeout
        t_synced = None
        first = None
        while first is None and time.time() < deadline and app.is_running:
            await pilot.pause(0.01)
            if t_synced is None and session.store.wait_synced(KUBE_SOURCES, 0):
                t_synced = time.time()
            first = next((f for f in frames if f["complete"]), None)
        if first is None:
            result["error"] = (f"no complete overview within {args.timeout} s" if app.is_running
                               else "the app stopped before showing a complete overview")
            return result
        useful = first_useful(frames, args.expect_gpu_nodes, args.expect_pending)
        while useful is None and time.time() < deadline and app.is_running:
            await pilot.pause(0.02)
            useful = first_useful(frames, args.expect_gpu_nodes, args.expect_pending)
        while not app.settled and time.time() < deadline:
            await pilot.pause(0.05)
        screen = app.screen
        rows = {t: screen.query_one(f"#{t}", KeyedTable).row_count_shown for t in TABLES}
        if args.frames:
            Path(args.frames).write_text(json.dumps([{**f, "t": round(f["painted"] - T_START, 3)} for f in frames]))
        if args.key_rounds > 0:
            result["keys"] = await press_keys(app, displays, args.key_rounds, args.filter_text)
        result.update({"t_synced": t_synced, "t_first_complete": first["painted"],
                       "t_first_useful": useful["painted"] if useful is not None else None,
                       "first_frame": {"update_ms": round(first.get("update_s", 0) * 1000, 1),
                                       "paint_ms": round((first["painted"] - first["received"]) * 1000, 1)},
                       "frames_before_complete": frames.index(first), "rows": rows, "rss_at_first_mb": rss_mb()})
        if args.burst_rate > 0 and args.control:
            gaps: list[float] = []
            last = [time.perf_counter()]

            def tick() -> None:
                now = time.perf_counter()
                gaps.append(now - last[0])
                last[0] = now

            n0 = len(frames)
            timer = app.set_interval(0.02, tick)
            prof = None
            if args.profile:
                import cProfile

                prof = cProfile.Profile()  # the UI thread only: what the event loop spends the burst on
                prof.enable()
            with GcPauses() as gc_pauses:
                burst = await asyncio.to_thread(run_burst, args.control, log, args.burst_rate, args.burst_seconds)
                events = log.since(burst["seq0"])
                final = max((e.version for e in events), default=0)
                drain = time.time() + 60
                while (not frames or frames[-1]["version"] < final) and time.time() < drain and app.is_running:
                    await pilot.pause(0.05)
            timer.stop()
            if prof is not None:
                prof.disable()
                import io
                import pstats

                buf = io.StringIO()
                st = pstats.Stats(prof, stream=buf)
                st.sort_stats("cumulative").print_stats(50)
                st.sort_stats("tottime").print_stats(40)
                Path(args.profile).write_text(buf.getvalue())
            burst_frames = frames[n0:]
            t_end = time.time()
            parts, unshown = event_to_screen(events, burst_frames, t_end)
            findings, not_diagnosed = event_to_screen(events, burst_frames, t_end, "diag_version")
            result["watch"] = {
                "planned": burst["planned"], "applied": len(events), "unshown": unshown,
                "server_max_behind": burst["server"].get("max_behind"),
                "frames": len(burst_frames),
                "update": summary_ms([f.get("update_s", 0.0) for f in burst_frames]),
                "paint": summary_ms([f["painted"] - f["received"] for f in burst_frames]),
                "event_to_screen": {**summary_ms(parts["total"]),
                                    "lower_bound": unshown > len(events) / 100},
                "event_to_screen_parts": {k: summary_ms(v) for k, v in parts.items() if k != "total"},
                "event_to_findings": {**summary_ms(findings["total"]),
                                      "lower_bound": not_diagnosed > len(events) / 100},
                "cache_lag": log.cache_lag(burst["seq0"]),
                "ui_gap": summary_ms(gaps),
                "relists": sum(i.relists for i in session.informers) - len(session.informers),
                "gc": gc_pauses.summary(),
            }
        result["rss_mb"] = rss_mb()
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
        os._exit(0)  # the measurement is over: skip tearing down the app, its workers and a big heap
    return result


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gputui.dev.bench.tui_probe", description=__doc__.splitlines()[0])
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--size", default="160x50", help="terminal size WxH")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the first complete overview")
    p.add_argument("--control", help="the benchmark server's control URL, for a watch burst")
    p.add_argument("--burst-rate", type=float, default=0.0)
    p.add_argument("--burst-seconds", type=float, default=20.0)
    p.add_argument("--profile", help="write a cProfile of the UI thread during the burst to this file")
    p.add_argument("--expect-gpu-nodes", type=int, default=1, help="GPU nodes the first useful screen shows")
    p.add_argument("--expect-pending", type=int, default=1, help="pending GPU pods the first useful screen shows")
    p.add_argument("--key-rounds", type=int, default=0, help="rounds of timed keys after the first overview")
    p.add_argument("--filter-text", default="gpu", help="what the timed `/` filter types, one key at a time")
    p.add_argument("--frames", help="write every painted frame's counts and times here (JSON)")
    p.add_argument("--all-pods-first", action="store_true",
                   help="no pending-first read (the TUI before #25), for before/after comparisons")
    args = p.parse_args(argv)
    result = asyncio.run(drive(args))
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
