"""The seeded soak: a LiveSession against the simulator while a mutator writes and faults hit every informer.

Per resource, one fault at a time: inject it, write a probe object, and wait until the cache holds the probe
and equals the server for that resource. That wait is the fault's recovery time. Every `restart_every`
faults, once every resource has recovered, the apiserver "restarts" with a new resourceVersion history.
At the end the mutator stops and the whole cache must equal the server: 0 divergent objects.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnostics.snapshot import KUBE_SOURCES, SourceState
from gputui.kube.api import Api, load
from gputui.collect.live import LiveSession
from gputui.dev.reliability.compare import Divergence, compare, fingerprint_cache, fingerprint_server
from gputui.dev.reliability.injector import Fault, Injected, Injector, ListFaults, RecordingFaults, install
from gputui.dev.reliability.mutator import Mutator
from gputui.dev.reliability.probes import probe_key, probe_object
from gputui.kube.resources import RESOURCES
from gputui.sim.cluster import SimCluster


@dataclass(frozen=True)
class SoakConfig:
    faults: int = 1000
    seed: int = 1
    scenario: str = "incident"
    mutation_rate: float = 40.0
    """Writes a second by the mutator (nodes, pods, NodeClaims, events, now and then the rest)."""
    restart_every: int = 75
    recovery_timeout: float = 60.0
    """A fault not recovered from within this is counted as unrecovered (and the soak moves on)."""
    settle_timeout: float = 60.0
    tui: bool = True
    """Also check the TUI stays responsive on the churned cluster (if gputui.tui is importable)."""
    tui_bound: float = 2.0
    """Seconds within which a key press must change the screen and a cluster change must reach it."""


@dataclass
class Recovery:
    fault: Fault
    source: str
    seconds: float


@dataclass
class TuiProbe:
    ran: bool
    first_report_s: float | None = None
    key_to_screen_s: float | None = None
    press_returned_s: float | None = None
    change_to_screen_s: float | None = None
    error: str = ""

    def ok(self, bound: float) -> bool:
        if not self.ran:
            return True
        return (not self.error and self.key_to_screen_s is not None and self.key_to_screen_s <= bound
                and self.change_to_screen_s is not None and self.change_to_screen_s <= bound)

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


@dataclass
class SoakResult:
    config: SoakConfig
    duration_s: float = 0.0
    faults: Counter[str] = field(default_factory=Counter)
    recoveries: list[Recovery] = field(default_factory=list)
    unrecovered: list[tuple[str, str]] = field(default_factory=list)
    divergence: Divergence = field(default_factory=Divergence)
    final_convergence_s: float | None = None
    statuses_not_ok: dict[str, str] = field(default_factory=dict)
    mutations: Counter[str] = field(default_factory=Counter)
    server: dict[str, Any] = field(default_factory=dict)
    informers: dict[str, dict[str, int]] = field(default_factory=dict)
    retry_after: dict[str, Any] = field(default_factory=dict)
    tui: TuiProbe = field(default_factory=lambda: TuiProbe(False))
    error: str = ""

    @property
    def total_faults(self) -> int:
        return sum(self.faults.values())

    @property
    def max_recovery(self) -> Recovery | None:
        return max(self.recoveries, key=lambda r: r.seconds, default=None)

    @property
    def ok(self) -> bool:
        return (not self.error and self.divergence.count == 0 and not self.unrecovered
                and self.final_convergence_s is not None and self.tui.ok(self.config.tui_bound))

    def by_fault(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for f in Fault:
            secs = sorted(r.seconds for r in self.recoveries if r.fault is f)
            if not secs and not self.faults.get(f.value):
                continue
            out[f.value] = {
                "injected": self.faults.get(f.value, 0),
                "recovered": len(secs),
                "median_s": round(statistics.median(secs), 3) if secs else 0.0,
                "p95_s": round(secs[min(len(secs) - 1, int(len(secs) * 0.95))], 3) if secs else 0.0,
                "max_s": round(secs[-1], 3) if secs else 0.0,
            }
        return out

    def to_json(self) -> dict[str, Any]:
        worst = self.max_recovery
        return {
            "ok": self.ok,
            "seed": self.config.seed,
            "scenario": self.config.scenario,
            "duration_s": round(self.duration_s, 1),
            "faults_injected": self.total_faults,
            "faults_by_type": self.by_fault(),
            "unrecovered": [{"fault": f, "source": s} for f, s in self.unrecovered],
            "max_recovery": ({"seconds": round(worst.seconds, 3), "fault": worst.fault.value, "source": worst.source}
                             if worst else None),
            "divergent_objects": self.divergence.count,
            "divergence": self.divergence.to_json(),
            "final_convergence_s": (round(self.final_convergence_s, 3)
                                    if self.final_convergence_s is not None else None),
            "statuses_not_ok": self.statuses_not_ok,
            "mutations": dict(sorted(self.mutations.items())),
            "mutations_total": sum(self.mutations.values()),
            "server": self.server,
            "informers": self.informers,
            "retry_after": self.retry_after,
            "tui": self.tui.to_json(),
            "error": self.error,
        }


@dataclass
class _Pending:
    injected: Injected
    probe: str
    previous: str | None


class Soak:
    """One soak run; `run()` returns the SoakResult (it never raises for a failed expectation)."""

    def __init__(self, config: SoakConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.result = SoakResult(config)
        self.sim = SimCluster(config.scenario, shift_to_now=True)
        self.faults: RecordingFaults
        self.lists: ListFaults
        self.faults, self.lists = install(self.sim)
        self.injector = Injector(self.sim, self.lists, random.Random(config.seed + 1))
        self.mutator = Mutator(self.sim, random.Random(config.seed + 2), rate=config.mutation_rate)
        self._probe_n = 0
        self._probes: dict[str, str] = {}
        self.session: LiveSession | None = None

    # ---- probes --------------------------------------------------------------------------------

    def _write_probe(self, source: str) -> tuple[str, str | None]:
        self._probe_n += 1
        name = f"soak-probe-{self._probe_n}"
        previous = self._probes.get(source)
        self.sim.apply(probe_object(source, name))
        if previous is not None:
            ns = probe_key(source, previous)[0]
            self.sim.delete(RESOURCES[source].kind, previous, ns)
        self._probes[source] = name
        return name, previous

    # ---- the run -------------------------------------------------------------------------------

    def run(self) -> SoakResult:
        started = time.monotonic()
        tmp = tempfile.TemporaryDirectory(prefix="gputui-soak-")
        try:
            self.sim.start()
            kubeconfig = self.sim.write_kubeconfig(Path(tmp.name) / "kubeconfig")
            client, info = load(str(kubeconfig))
            self.session = LiveSession(Api(client), info)
            self.session.start()
            if not self.session.wait_synced(30):
                self.result.error = "the live session did not sync within 30 s"
                return self.result
            self.mutator.setup()
            self.mutator.start()
            self._faults_phase()
            if self.config.tui:
                self.result.tui = self._tui_probe(kubeconfig)
            self.mutator.stop()
            self.mutator.join(10)
            if self.mutator.error is not None:
                self.result.error = f"mutator failed: {type(self.mutator.error).__name__}: {self.mutator.error}"
            self._settle()
        except Exception as exc:  # noqa: BLE001 - the report says what broke
            self.result.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.mutator.stop()
            self._collect_figures()
            if self.session is not None:
                self.session.stop()
            self.sim.stop()
            tmp.cleanup()
            self.result.duration_s = time.monotonic() - started
        return self.result

    def _faults_phase(self) -> None:
        assert self.session is not None
        cfg, inj = self.config, self.injector
        store = self.session.store
        pending: dict[str, _Pending] = {}
        injected = 0
        restart_due = cfg.restart_every
        while injected < cfg.faults or pending:
            now = time.monotonic()
            if pending:
                srcs = tuple(pending)
                server = fingerprint_server(self.sim, srcs)
                cache = fingerprint_cache(store, srcs)
                for s in srcs:
                    p = pending[s]
                    done = (probe_key(s, p.probe) in cache[s]
                            and (p.previous is None or probe_key(s, p.previous) not in cache[s])
                            and server[s] == cache[s])
                    if done:
                        self.result.recoveries.append(Recovery(p.injected.fault, s, time.monotonic() - p.injected.at))
                        inj.recovered(s)
                        del pending[s]
                    elif now - p.injected.at > cfg.recovery_timeout:
                        self.result.unrecovered.append((p.injected.fault.value, s))
                        inj.recovered(s)
                        del pending[s]
            if injected < cfg.faults:
                if injected >= restart_due:
                    if not pending:  # restart only when every resource is calm, so its recovery is its own
                        restart_due += cfg.restart_every
                        injected += 1
                        ev = inj.inject(Fault.RESTART, "nodes")
                        for s in KUBE_SOURCES:
                            probe, prev = self._write_probe(s)
                            pending[s] = _Pending(Injected(Fault.RESTART, s, ev.at), probe, prev)
                else:
                    free = [s for s in KUBE_SOURCES if s not in pending]
                    if free:
                        s = self.rng.choice(free)
                        ev = inj.inject(inj.choose(), s)
                        probe, prev = self._write_probe(s)
                        pending[s] = _Pending(ev, probe, prev)
                        injected += 1
            if self.mutator.error is not None:
                raise RuntimeError(f"mutator failed: {self.mutator.error!r}")
            time.sleep(0.015)
        self.result.faults.update({f.value: n for f, n in inj.counts.items()})

    def _settle(self) -> None:
        """No more writes or faults: the whole cache must equal the server, and every source be OK."""
        assert self.session is not None
        self.sim.faults.clear()
        self.lists.clear()
        started = time.monotonic()
        div = compare(self.sim, self.session.store)
        while div.count and time.monotonic() - started < self.config.settle_timeout:
            time.sleep(0.05)
            div = compare(self.sim, self.session.store)
        self.result.divergence = div
        if not div.count:
            self.result.final_convergence_s = time.monotonic() - started
        # Statuses: a source that recovered must say so (not "stale" forever).
        deadline = time.monotonic() + 5
        while True:
            bad = {s: f"{st.state.value}: {st.detail}" for s, st in self.session.store.status().items()
                   if s in KUBE_SOURCES and st.state is not SourceState.OK}
            if not bad or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.result.statuses_not_ok = bad

    # ---- figures -------------------------------------------------------------------------------

    def _collect_figures(self) -> None:
        r = self.result
        if not r.faults:
            r.faults.update({f.value: n for f, n in self.injector.counts.items()})
        r.mutations = Counter(self.mutator.ops)
        log = list(self.faults.log)
        answers = Counter(str(rec.failed) for rec in log if rec.failed is not None)
        answers.update({f"{k} (list)": v for k, v in self.lists.hits.items()})
        r.server = {"requests": len(log), "error_answers": dict(sorted(answers.items())),
                    "streams_dropped": self.injector.streams_dropped}
        if self.session is not None:
            r.informers = {i.res.source: {"relists": i.relists, "reconnects": i.reconnects}
                           for i in self.session.informers}
        r.retry_after = retry_after_compliance(log, self.lists.log)

    # ---- the TUI -------------------------------------------------------------------------------

    def _tui_probe(self, kubeconfig: Path) -> TuiProbe:
        try:
            import gputui.tui.app  # noqa: F401
        except ImportError:
            return TuiProbe(False)
        import asyncio

        stop = threading.Event()

        def keep_dropping() -> None:  # faults go on while the TUI is used
            while not stop.wait(0.7):
                self.sim.drop_watches(mid_event=self.rng.random() < 0.5)

        dropper = threading.Thread(target=keep_dropping, daemon=True)
        dropper.start()
        try:
            return asyncio.run(tui_probe(self.sim, kubeconfig))
        finally:
            stop.set()
            dropper.join(5)


def retry_after_compliance(log: list[Any], list_log: list[tuple[float, str, int, int | None]]) -> dict[str, Any]:
    """For each 429 with Retry-After: did the client wait that long before its next request there?"""
    by_path: dict[str, list[float]] = {}
    for rec in log:
        by_path.setdefault(rec.path, []).append(rec.at)
    answers: list[tuple[float, str, int]] = [(rec.at, rec.path, rec.retry_after) for rec in log
                                             if rec.failed == 429 and rec.retry_after]
    kind_path = {r.kind: r.path() for r in RESOURCES.values()}
    answers += [(at, kind_path[kind], ra) for at, kind, status, ra in list_log if status == 429 and ra]
    gaps: list[tuple[float, int]] = []
    for at, path, ra in answers:
        nxt = next((t for t in by_path.get(path, []) if t > at + 1e-6), None)
        if nxt is not None:
            gaps.append((nxt - at, ra))
    early = [(g, ra) for g, ra in gaps if g + 0.05 < ra]
    return {"answers": len(answers), "followed_by_a_retry": len(gaps), "retried_too_early": len(early),
            "shortest_wait_s": round(min((g for g, _ in gaps), default=0.0), 3),
            "example_too_early": ({"waited_s": round(early[0][0], 3), "retry_after_s": early[0][1]}
                                  if early else None)}


async def tui_probe(sim: SimCluster, kubeconfig: Path, timeout: float = 30.0) -> TuiProbe:
    """Open the TUI on the churning cluster: press `f`, time the screen change; add a node, time its arrival."""
    import asyncio

    from gputui.dev.screenshots import build_app
    from gputui.tui.screens.findings import FindingsScreen

    probe = TuiProbe(True)
    app = build_app(kubeconfig, title="soak")
    started = time.monotonic()
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            while app.report is None:
                if time.monotonic() - started > timeout:
                    probe.error = "no diagnostics shown within the timeout"
                    return probe
                await pilot.pause(0.02)
            probe.first_report_s = time.monotonic() - started
            seen: list[float] = []

            async def watch_screen() -> None:
                while not isinstance(app.screen, FindingsScreen):
                    await asyncio.sleep(0.005)
                seen.append(time.monotonic())

            watcher = asyncio.create_task(watch_screen())
            t0 = time.monotonic()
            await pilot.press("f")
            try:
                await asyncio.wait_for(watcher, timeout)
            except TimeoutError:
                probe.error = "`f` did not open the findings screen"
                return probe
            probe.key_to_screen_s = seen[0] - t0
            probe.press_returned_s = time.monotonic() - t0
            name = f"soak-tui-{int(t0 * 1000) % 100000}"
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
            t0 = time.monotonic()
            sim.apply(node)
            while app.snapshot is None or all(n.meta.name != name for n in app.snapshot.nodes):
                if time.monotonic() - t0 > timeout:
                    probe.error = "a new node did not reach the screen"
                    return probe
                await pilot.pause(0.01)
            probe.change_to_screen_s = time.monotonic() - t0
            sim.delete("Node", name)
    except Exception as exc:  # noqa: BLE001 - reported
        probe.error = f"{type(exc).__name__}: {exc}"
    return probe
