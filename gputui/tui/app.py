"""GputuiApp: owns the data feed (a LiveSession or a static bundle snapshot) and the refresh loop.

Refresh loop (never blocks the UI): informer threads write the Store; a 50 ms timer starts two
independent thread workers, one of each at a time, and both pause while a modal is open:
- the frame worker, whenever `store.version` moved: reads what changed since its last frame
  (`Store.changes`), updates only those rows (OverviewModel) and posts SnapshotReady, so a burst
  of watch events reaches the tables in one poll plus O(changes) work, at most ~20 frames a second
  and never faster than the screen paints them;
- the diagnostics worker, on its own slower cadence (it costs O(cluster) per run): when the
  version moved (or every RERUN_EVERY), after resting twice as long as its last run took, so the
  informers and the tables keep the GIL most of the time. Its report reaches the screen with the
  next frame.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from rich.text import Text
from textual import events, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import Notification, SeverityLevel
from textual.screen import ModalScreen, Screen

from diagnostics import run as run_checks
from diagnostics.model import Finding, ObjectRef, Report
from diagnostics.snapshot import KUBE_SOURCES, Snapshot
from gputui import clock
from gputui.errors import ExitCode
from gputui.output.sanitize import visible
from gputui.collect.live import LiveSession
from gputui.collect.store import Changes
from gputui.tui import actions, early, objects
from gputui.tui.messages import DiagnosisDone, DiagnosticsFailed, SnapshotReady
from gputui.tui.overview_model import Diagnosis, Frame, OverviewModel, store_labels
from gputui.tui.screens.base import DataScreen
from gputui.tui.screens.detail import detail_screen
from gputui.tui.screens.finding import FindingScreen
from gputui.tui.screens.findings import FindingsScreen
from gputui.tui.screens.help import HelpScreen
from gputui.tui.screens.info import InfoScreen
from gputui.tui.screens.jump import JumpScreen, resolve
from gputui.tui.screens.overview import OverviewScreen
from gputui.tui.screens.yaml_view import YamlScreen

RERUN_EVERY = 5.0
"""Seconds between diagnostics runs when nothing changed, so ages and budget windows stay current."""
FRAME_EVERY = 1.0
"""Seconds between frames when nothing changed (ages, the status line's `updated` time)."""
PAINT_WAIT = 1.0
"""A new frame waits until the last one was painted (the UI sets the pace), at most this long."""
DIAG_REST = 2.0
"""After a diagnostics run, wait this many times its duration before the next (a third of the time at most)."""
FIRST_LISTS_WAIT = 3.0
"""Seconds after launch the first diagnostics run waits at most for every Kubernetes source's first answer."""
IDLE_AFTER_KEY = 0.5
"""Seconds after a key before a frame that only moves the clock and ages (nothing changed) is built."""
KEY_QUIET = 0.25
"""Seconds after a key during which a diagnostics run steps aside (the key's handling and repaint come first)."""
DIAG_YIELD = 2.0
"""Seconds a diagnostics run may spend in total stepping aside for frames (then it finishes regardless)."""


class GputuiApp(App[int]):
    """Live (`session=`) or static (`snapshot=`, a bundle opened offline) - never both."""

    CSS_PATH = "gputui.tcss"
    TITLE = "gputui"
    MODEL: type[OverviewModel] = OverviewModel
    """What keeps the overview's rows (the TUI benchmark times a subclass)."""
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("question_mark", "help", "Help", show=True),
        Binding("colon", "jump", "Jump", show=True),
        Binding("f", "findings", "Findings", show=True),
        Binding("r", "rerun", "Rerun", show=True),
        Binding("e", "export", "Export", show=True),
        Binding("q", "quit", "Quit", show=True),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),  # k9s: Ctrl-C quits
    ]

    def __init__(self, *, session: LiveSession | None = None, snapshot: Snapshot | None = None,
                 read_only: bool = False, title: str = "", namespace: str | None = None,
                 bundle_time: datetime | None = None, poll_interval: float = 0.05,
                 diagnose: Callable[[Snapshot], Report] | None = None,
                 new_session: Callable[[str | None, str | None], LiveSession] | None = None,
                 contexts: Callable[[], list[str]] | None = None) -> None:
        if (session is None) == (snapshot is None):
            raise ValueError("GputuiApp needs exactly one of session= or snapshot=")
        super().__init__()
        self.session = session
        self.static_snapshot = snapshot
        self.read_only = read_only
        self.namespace = namespace
        self.bundle_time = (bundle_time or snapshot.taken_at) if snapshot is not None else None
        """Set for a static snapshot: the status line then says `bundle from <time>`."""
        self.poll_interval = poll_interval
        self._diagnose = diagnose or self._run_checks
        self.snapshot: Snapshot | None = None
        """The newest snapshot shown (cut with the overview's rows)."""
        self.report: Report | None = None
        """The newest good report; it comes from `report_snapshot`, usually older than `snapshot`."""
        self.report_snapshot: Snapshot | None = None
        self.frame: Frame | None = None
        self.data_version = 0
        """Bumped for every frame shown; screens compare it to know they are behind."""
        self.diagnose_error = ""
        self.namespace_note = ""
        """Set when only one namespace can be seen: the banner says what is out of sight."""
        self.new_session = new_session
        """Builds a session for (context, namespace): `:ctx` and `:ns` switch live with it."""
        self.contexts = contexts
        self._model = self._new_model()
        self._diagnosis: Diagnosis | None = None
        """The newest finished diagnostics run (set by its worker thread)."""
        self._shown_diagnosis: Diagnosis | None = None
        self._diagnosed_version = -1
        self._diagnosed_sight: object = None
        """The sources' states the last diagnostics run started from (see `_sources_moved`)."""
        self._started_at = time.monotonic()
        self._key_at = 0.0
        self._diag_urgent = False
        """The running diagnostics computes the first findings: it does not step aside for frames."""
        """When the last key arrived (monotonic): diagnostics step aside for KEY_QUIET after it."""
        self._diag_busy = False
        self._diag_started = 0.0
        self._diag_rest_until = 0.0
        self._diag_yield_until = 0.0
        self._diag_yielded = 0.0
        """Seconds the running diagnostics spent stepping aside for frames (not its own cost)."""
        self._rerun = False
        self._frame_busy = False
        self._unpainted_since: float | None = None
        """When the last frame was posted, until the screen painted it."""
        self._frame_at = 0.0
        self._tick_missed = False
        """A poll found the last frame still building or unpainted: frame again once it is painted."""
        self._framed_diagnosis: Diagnosis | None = None
        self._shown_version = -1
        if title:
            self.title = f"gputui · {title}"
        if session is not None:
            self.sub_title = self._where()
        elif snapshot is not None:
            ctx = snapshot.cluster.get("context", "")
            self.sub_title = f"bundle · context {ctx}" if ctx else "bundle"

    # --- lifecycle ---
    def get_default_screen(self) -> Screen[Any]:
        return OverviewScreen()

    def on_mount(self) -> None:
        if self.session is not None:
            self._start_session()
        self._poll_timer = self.set_interval(self.poll_interval, self._poll)
        self._poll()
        self._exit_on_signals()

    def _exit_on_signals(self) -> None:
        """SIGTERM and SIGHUP (the terminal closed) leave like `q`: the caller's cleanup runs (the demo
        stops its Prometheus and removes its temp dirs); by default they killed the process mid-way."""
        import asyncio
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return  # run_test in a worker thread, or an embedding: the host owns signals
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                loop.add_signal_handler(sig, self.exit, int(ExitCode.TERMINATED))
            except (NotImplementedError, RuntimeError, ValueError):
                pass

    @property
    def last_key_at(self) -> float:
        """When the last key arrived (time.monotonic): idle work waits a moment after it."""
        return self._key_at

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self._key_at = time.monotonic()
        await super().on_event(event)

    def on_unmount(self) -> None:
        if self.session is not None:
            self.session.stop()

    @work(thread=True, group="session", exit_on_error=False)
    def _start_session(self) -> None:
        """`LiveSession.start` asks /version (up to 5 s) before starting informers: not on the UI thread."""
        assert self.session is not None
        self.session.start()

    @property
    def settled(self) -> bool:
        """Every source answered once, the screen shows the newest data and its diagnosis, and
        nothing is being fetched (tests, screenshots)."""
        if (self.report is None or self._diag_busy or self._frame_busy or self._unpainted_since is not None
                or getattr(self.screen, "busy", False)):
            return False
        if self._shown_diagnosis is not self._diagnosis:
            return False
        if self.session is None:
            return True
        store = self.session.store
        return (store.wait_synced(KUBE_SOURCES, 0) and self._shown_version == store.version
                and self._diagnosis is not None and self._diagnosis.version == store.version)

    @property
    def detail_snapshot(self) -> Snapshot | None:
        """What detail screens read: the snapshot diagnosed (its index is built, its findings match),
        or the newest one before diagnostics first ran."""
        return self.report_snapshot or self.snapshot

    # --- refresh loop ---
    @property
    def paused(self) -> bool:
        """True while a modal (help, confirm, jump) is open: the screen under it stays still."""
        stack = self.screen_stack
        return not stack or isinstance(stack[-1], ModalScreen)

    def _new_model(self) -> OverviewModel:
        if self.session is not None:
            return self.MODEL(store_labels(self.session.store))
        snap = self.static_snapshot
        return self.MODEL(lambda ref: objects.labels_of(snap, ref) if snap is not None else {})

    def _poll(self) -> None:
        if self.paused:
            return
        version = self.session.store.version if self.session is not None else 0
        self._schedule_diagnostics(version)
        self._schedule_frame(version)

    def _schedule_diagnostics(self, version: int) -> None:
        if self._diag_busy:
            return
        forced = self._rerun
        now = time.monotonic()
        sight = self._sources_sight()
        if not forced:
            if self._first_lists_due(sight, now):
                return  # findings from half the lists would be replaced at once, and slow the rest
            if now < self._diag_rest_until and sight == self._diagnosed_sight:
                return
            stale = self.session is not None and now - self._diag_started > RERUN_EVERY
            if version == self._diagnosed_version and not stale:
                return
        self._rerun = False
        self._diag_busy = True
        self._diag_started = now
        self._diag_yielded = 0.0
        self._diagnosed_version = version
        self._diagnosed_sight = sight
        self.diagnose(forced)

    def _sources_sight(self) -> object:
        """Each source's state and whether it is read in part: when this moves (a list arrived, the full pod
        list replaced the pending pods, a source failed), the next run starts without resting first."""
        if self.session is None:
            return None
        return frozenset((name, st.state, st.partial) for name, st in self.session.store.status().items())

    def _first_lists_due(self, sight: object, now: float) -> bool:
        """Some Kubernetes source has not answered its first list yet (the pending pods count as an
        answer), for at most FIRST_LISTS_WAIT after launch: a run before that judges a cluster without
        its nodes or events, and competes with the lists for the GIL."""
        if not isinstance(sight, frozenset) or now - self._started_at > FIRST_LISTS_WAIT:
            return False
        answered = {name for name, _state, _partial in sight}
        return any(s not in answered for s in KUBE_SOURCES)

    @work(thread=True, exclusive=True, group="diagnose", exit_on_error=False)
    def diagnose(self, forced: bool = False) -> None:
        """Cut a snapshot and run the checks off the UI thread; the next frame carries the result."""
        try:
            session = self.session
            version = session.store.version if session is not None else 0
            snap = session.snapshot() if session is not None else self.static_snapshot
            assert snap is not None
            try:
                report: Report | None = self._diagnose(snap)
                error = ""
            except Exception as exc:  # show the data anyway, with the last good findings and why
                report, error = None, f"{type(exc).__name__}: {exc}"[:200]
            if self.session is not session:
                return  # `:ctx` / `:ns` switched meanwhile: another cluster's findings
            self._diagnosis = Diagnosis(snap, report, version, forced, error)
            self.post_message(DiagnosisDone())
        except Exception as exc:
            self.post_message(DiagnosticsFailed(f"{type(exc).__name__}: {exc}"[:200]))
        finally:
            self._rest_after_run()
            self._diag_busy = False

    def _rest_after_run(self) -> None:
        """Adaptive rate: a big fleet's run takes a while; leave twice as much time to the informer
        threads (the GIL), the frame worker and the UI before the next one. Time the run spent
        stepping aside for frames was already theirs: counting it would make findings trail further."""
        took = time.monotonic() - self._diag_started - self._diag_yielded
        self._diag_rest_until = time.monotonic() + DIAG_REST * took

    def _run_checks(self, snap: Snapshot) -> Report:
        """Every check; while only the pending pods are read, those that need every pod wait (gputui.tui.early)."""
        self._diag_yield_until = time.monotonic() + DIAG_YIELD
        waiting = early.waiting_checks(snap)
        # The first findings (none shown yet, or from the pending pods alone) are what the screen waits
        # for: that run does not step aside for frames, which come one after another while lists load.
        self._diag_urgent = self.report is None or bool(waiting)
        session = self.session
        with session.first_findings() if waiting and session is not None else contextlib.nullcontext():
            return early.with_waiting(run_checks(snap, ignore=waiting, between=self._make_way), waiting)

    def _make_way(self) -> None:
        """Between two checks: while a frame is being built or waits to be painted, or a key was
        pressed moments ago, sleep.

        The checks hold the GIL for a few hundred ms per run on a big, churning fleet; without
        this every frame and every key in that window is handled and painted at half speed or
        worse. Findings trail the tables anyway; a run gives way for DIAG_YIELD seconds at most.
        """
        start = time.monotonic()
        while ((((self._frame_busy or self._unpainted_since is not None) and not self._diag_urgent)
                or time.monotonic() - self._key_at < KEY_QUIET)
               and time.monotonic() < self._diag_yield_until):
            time.sleep(0.002)
        self._diag_yielded += time.monotonic() - start

    def on_diagnosis_done(self, _message: DiagnosisDone) -> None:
        self._poll()

    def _schedule_frame(self, version: int) -> None:
        if self._frame_busy:
            self._tick_missed = True
            return
        posted = self._unpainted_since
        if posted is not None and time.monotonic() - posted < PAINT_WAIT:
            self._tick_missed = True
            return  # frames faster than the screen paints them would only queue up and be dropped
        self._tick_missed = False
        diagnosis = self._diagnosis
        idle_due = self.session is not None and time.monotonic() - self._frame_at >= FRAME_EVERY
        if idle_due and time.monotonic() - self._key_at < IDLE_AFTER_KEY:
            idle_due = False  # the clock and ages can wait while keys come: their repaint would trail the key's
        if version == self._model.version and diagnosis is self._framed_diagnosis and not idle_due:
            return
        self._frame_busy = True
        self._frame_at = time.monotonic()
        self.build_frame()

    # No arguments: Textual describes a worker by the repr of its arguments (a whole snapshot's).
    @work(thread=True, exclusive=True, group="frame", exit_on_error=False)
    def build_frame(self) -> None:
        """Bring the overview's rows up to the store's newest version; O(changes) after the first."""
        try:
            diagnosis = self._diagnosis
            model = self._model
            if self.session is not None:
                changes = self.session.store.changes(model.version)
            else:
                assert self.static_snapshot is not None
                first = frozenset(KUBE_SOURCES) if model.version < 0 else frozenset()
                changes = Changes(0, self.static_snapshot, {}, first)
            announce = diagnosis is not None and diagnosis.forced and diagnosis is not self._framed_diagnosis
            frame = model.update(changes, diagnosis)
            if self._model is not model:
                return  # `:ctx` / `:ns` switched meanwhile
            self._framed_diagnosis = diagnosis
            error = diagnosis.error if diagnosis is not None else ""
            self._unpainted_since = time.monotonic()
            self.post_message(SnapshotReady(frame.snapshot, frame.report, frame.version, announce, error, frame))
        except Exception as exc:
            self._model = self._new_model()  # half-applied changes: start the next frame afresh
            self.post_message(DiagnosticsFailed(f"{type(exc).__name__}: {exc}"[:200]))
        finally:
            self._frame_busy = False

    def _refresh_screen(self, diagnosed: bool = True) -> None:
        """Tell the visible screen; others catch up when shown. Nothing to do while shutting down.

        Screens that read only the diagnosed snapshot and report (details, findings) redraw when a
        diagnosis arrives; between diagnoses a frame only updates their status line. A screen still
        composing has no widgets yet: its mount draws the newest data.
        """
        stack = self.screen_stack
        if stack and isinstance(stack[-1], DataScreen) and stack[-1].is_mounted:
            top = stack[-1]
            if diagnosed or top.FOLLOWS_FRAMES:
                top.refresh_data()
            else:
                top.refresh_status()

    def _where(self, version: str = "") -> str:
        """The header's subtitle: context, namespace, server version, and read-only when it is."""
        assert self.session is not None
        parts = [f"context {self.session.info.context}"]
        if self.namespace:
            parts.append(f"namespace {self.namespace}")
        if version:
            parts.append(version)
        if self.read_only:
            parts.append("READ-ONLY")
        return visible(" · ".join(parts), limit=200)

    # --- :ctx / :ns ---
    def switch_context(self, name: str) -> None:
        """`:ctx NAME` connects to another context live (`:ctx` alone lists them), as in k9s."""
        if self.new_session is None or self.session is None:
            self.notify("Switching context needs a live session (not a bundle).", severity="warning")
            return
        if not name:
            names = self.contexts() if self.contexts is not None else []
            current = self.session.info.context
            if not names:
                self.notify("No contexts in the kubeconfig.", severity="warning")
                return
            self._pick(f"Context (now {current})", names, self.switch_context)
            return
        self._switch(name, self.namespace, f"context {name}")

    def switch_namespace(self, name: str) -> None:
        """`:ns NAME` looks at that namespace (`:ns all` at every one; `:ns` alone lists them)."""
        if self.new_session is None or self.session is None:
            self.notify("Switching namespace needs a live session (not a bundle).", severity="warning")
            return
        if not name:
            snap = self.snapshot
            names = ["all", *sorted(snap.namespaces)] if snap is not None and snap.namespaces else ["all"]
            self._pick(f"Namespace (now {self.namespace or 'all'})", names, self.switch_namespace)
            return
        ns = None if name in ("all", "-A", "*") else name
        self._switch(self.session.info.context, ns, f"namespace {ns or 'all'}")

    def _pick(self, title: str, names: list[str], then: Callable[[str], None]) -> None:
        from gputui.tui.screens.logs import PickScreen

        def chosen(i: int | None) -> None:
            if i is not None:
                then(names[i])

        self.push_screen(PickScreen(title, names), chosen)

    def _switch(self, context: str | None, namespace: str | None, what: str) -> None:
        factory = self.new_session
        assert factory is not None
        self.notify(f"Switching to {what}…", timeout=2)

        def work() -> None:
            try:
                session = factory(context, namespace)
            except Exception as exc:  # a bad context is one line, never a crash
                self.call_from_thread(self.notify, f"Cannot switch to {what}: {exc}"[:300], severity="error")
                return
            self.call_from_thread(self._adopt, session, namespace)

        self.run_worker(work, thread=True, group="switch", exit_on_error=False, name="switch session")

    def _adopt(self, session: LiveSession, namespace: str | None) -> None:
        """Show `session` from scratch: the old one's cache, findings and rows are dropped, its informers stopped."""
        old = self.session
        self.session = session
        self.namespace = namespace
        self.report = self.report_snapshot = self.snapshot = self.frame = None
        self._diagnosis = self._shown_diagnosis = self._framed_diagnosis = None
        self._diagnosed_version = self._shown_version = -1
        self._diagnosed_sight = None
        self._started_at = time.monotonic()
        self.diagnose_error = ""
        self._model = self._new_model()
        self.sub_title = self._where()
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self._start_session()
        self.data_version += 1
        self._refresh_screen()
        if old is not None:
            import threading

            threading.Thread(target=old.stop, name="old-session-stop", daemon=True).start()

    def _painted(self) -> None:
        """A slow frame made the last poll skip: the changes it found go out now, not a poll later."""
        self._unpainted_since = None
        if self._tick_missed and not self.paused:
            self._schedule_frame(self.session.store.version if self.session is not None else 0)

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        self.call_after_refresh(self._painted)
        if message.version < self._shown_version and not message.forced:
            return
        frame = message.frame
        self._shown_version = message.version
        self.snapshot = message.snapshot
        self.frame = frame
        diagnosis = frame.diagnosis if frame is not None else None
        diagnosed = diagnosis is not self._shown_diagnosis
        if diagnosed:
            self._shown_diagnosis = diagnosis
            self.diagnose_error = message.error
            if diagnosis is not None and diagnosis.report is not None:
                self.report = diagnosis.report
                self.report_snapshot = diagnosis.snapshot
        self.data_version += 1
        version = message.snapshot.cluster.get("version")
        if self.session is not None and version:
            self.sub_title = self._where(version)
        self._refresh_screen(diagnosed)
        if message.forced and message.report is not None:
            n = len(message.report.findings)
            self.notify(f"Diagnostics re-run: {n} finding{'s' if n != 1 else ''}.", timeout=3)

    def on_diagnostics_failed(self, message: DiagnosticsFailed) -> None:
        self.diagnose_error = message.error
        self.data_version += 1
        self._refresh_screen()

    # --- navigation (called by screens) ---
    def _push(self, screen: Screen[Any], crumb: str) -> None:
        """Push with a breadcrumb in the header: the last three steps (`… › pod/ml/x › nodeclaim/y`)."""
        trail = list(getattr(self.screen, "crumbs", ())) if len(self.screen_stack) > 1 else []
        trail.append(crumb)
        screen.crumbs = trail  # type: ignore[attr-defined]
        screen.sub_title = visible(("… › " if len(trail) > 3 else "") + " › ".join(trail[-3:]), limit=300)
        self.push_screen(screen)

    def open_ref(self, ref: ObjectRef) -> None:
        self._push(detail_screen(ref), str(ref))

    def open_finding(self, finding: Finding) -> None:
        self._push(FindingScreen(finding), finding.code)

    def explain_check(self, slug: str) -> None:
        from diagnostics.registry import find

        spec = find(slug)
        report = self.report
        result = next((r for r in report.results if r.check == slug), None) if report else None
        if spec is None:
            return
        body = Text()
        if result is not None:
            body.append(result.status.value, style="bold")
            if result.reason:
                body.append(f": {result.reason}")
            elif result.examined:
                body.append(f" ({result.examined} examined)")
            body.append("\n\n")
        body.append(inspect.cleandoc(spec.doc))
        self.push_screen(InfoScreen(f"{spec.code} {spec.slug}: {spec.title}", body))

    def _fetcher(self, ref: ObjectRef) -> Callable[[], Any] | None:
        """A function that GETs the full object (run in a worker), or None offline."""
        session = self.session
        if session is None:
            return None
        from gputui.kube.resources import BY_KIND

        res = BY_KIND.get(ref.kind.lower())
        if res is None:
            return None
        return lambda: session.api.get(res.path(ref.namespace, ref.name))

    def describe_ref(self, ref: ObjectRef) -> None:
        """`d`: the object as `kubectl describe` shows it, with its events from the cache."""
        from gputui.tui.screens.describe_view import DescribeScreen

        snap = self.detail_snapshot
        cached = getattr(objects.find(snap, ref), "obj", None) if snap is not None else None
        events = snap.index.events(ref.kind, ref.name, ref.namespace) if snap is not None else []
        now = snap.taken_at if snap is not None else clock.now()
        self._push(DescribeScreen(ref, self._fetcher(ref), cached, events, now), "describe")

    def show_logs(self, ref: ObjectRef) -> None:
        """`l`: a pod's log (a picker first when it has several containers); for a node, its GPU
        plugin pods and Karpenter's lines about it; for a NodeClaim / NodePool, Karpenter's lines."""
        from gputui.tui.log_sources import sources_for
        from gputui.tui.screens.logs import LogsScreen, PickScreen

        session = self.session
        if session is None:
            self.notify("Logs need a live cluster; a bundle keeps log tails in its logs/ folder.", severity="warning")
            return
        snap = self.detail_snapshot
        sources = sources_for(snap, ref) if snap is not None else []
        if not sources:
            self.notify(f"No logs to show for {ref} (no pod of it, or its pods cannot be seen).", severity="warning")
            return

        def chosen(i: int | None) -> None:
            if i is not None:
                self._push(LogsScreen(sources[i], session.api), "logs")

        if len(sources) == 1:
            chosen(0)
        else:
            self.push_screen(PickScreen(f"Logs for {ref}: which one?", [s.label for s in sources]), chosen)

    def show_yaml(self, ref: ObjectRef) -> None:
        cached = None
        snap = self.detail_snapshot
        if snap is not None:
            rec = objects.find(snap, ref)
            cached = getattr(rec, "obj", None)
        fetch = None
        session = self.session
        if session is not None:
            from gputui.kube.resources import BY_KIND

            res = BY_KIND.get(ref.kind.lower())
            if res is not None:
                def fetch() -> Any:
                    return session.api.get(res.path(ref.namespace, ref.name))
        self._push(YamlScreen(ref, fetch, cached), "yaml")

    def show_view(self, view: str, arg: str = "") -> None:
        if view == "quit":  # k9s's `:q`
            self.action_quit()
            return
        if view == "ctx":
            self.switch_context(arg)
            return
        if view == "ns":
            self.switch_namespace(arg)
            return
        if view == "pods":
            while len(self.screen_stack) > 1:
                self.pop_screen()
            from gputui.tui.screens.pods import PodsScreen

            self._push(PodsScreen(pending_only=arg == "pending"), "pods")
            return
        if view == "object":
            from gputui.targets import TargetError, parse_target

            try:
                target = parse_target(arg, self.namespace)
            except TargetError as exc:
                self.notify(str(exc), severity="error")
                return
            if target.ref is not None:
                self.open_ref(target.ref)
            return
        while len(self.screen_stack) > 1:
            self.pop_screen()
        overview = self.screen_stack[0]
        assert isinstance(overview, OverviewScreen)
        if view == "findings":
            self._push(FindingsScreen(), "findings")
        elif view == "overview":
            overview.minimize()
        else:
            overview.show_table(view)

    # --- actions ---
    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.read_only))

    def action_jump(self, prefill: str = "") -> None:
        """`:` opens the prompt as a bar over the bottom of a data screen (nothing under it is redrawn);
        over a modal or a screen without one, as a modal of its own."""
        from textual.css.query import NoMatches

        from gputui.tui.widgets.jump_bar import JumpBar

        try:
            bar = self.screen.query_one(JumpBar)
        except NoMatches:
            self.push_screen(JumpScreen(prefill), self.jump_chosen)
            return
        bar.open(prefill)

    def jump_chosen(self, text: str | None) -> None:
        """What was typed after `:`: a view, an object, `ctx`, `ns`, or one line saying it is unknown."""
        if not text:
            return
        target = resolve(text)
        if target is None:
            self.notify(f"Unknown view {text!r}: try nodes, nodeclaims, pods, nodepools, findings, ctx, ns.",
                        severity="warning")
            return
        self.show_view(*target)

    def action_findings(self) -> None:
        if not isinstance(self.screen, FindingsScreen):
            self.show_view("findings")

    def action_rerun(self) -> None:
        """`r`: the checks now, and a round of Prometheus / AWS queries (the README promised both)."""
        self._rerun = True
        if self.session is not None:
            self.session.refresh()  # wakes the pollers' threads; nothing waits here
        self._poll()

    def action_export(self) -> None:
        actions.export_bundle(self)

    def debug_node(self, node: str) -> None:
        actions.debug_node(self, node)

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Toasts never read Rich markup: they name objects from the cluster (`[`, `[bold]`) as they are."""
        super().notify(visible(message, newlines=True), title=visible(title), severity=severity, timeout=timeout,
                       markup=False)

    @property
    def toasts(self) -> list[Notification]:
        """The notifications on screen now, oldest first. For tests and scripts: Textual keeps its list private."""
        return list(self._notifications)

    def action_quit(self) -> None:  # type: ignore[override]
        self.exit(int(ExitCode.OK))

    # --- command palette: every action by name ---
    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for view, what in (("nodes", "GPU nodes table"), ("nodeclaims", "NodeClaims table"),
                           ("pods", "GPU pods view (running and pending)"), ("nodepools", "NodePools table"),
                           ("overview", "all tables")):
            yield SystemCommand(f"Jump: {view}", f"Show the {what} (:{view})",
                                lambda v=view: self.show_view(v))
        yield SystemCommand("Findings and checklist", "Every finding by severity, and each check's result (f)",
                            self.action_findings)
        yield SystemCommand("Re-run diagnostics", "Run every check on a fresh snapshot now (r)", self.action_rerun)
        yield SystemCommand("Filter", "Filter the tables by text or label key=value (/)",
                            lambda: self._screen_action("filter"))
        yield SystemCommand("YAML of selected object", "Fetch and show the full YAML (y)",
                            lambda: self._screen_action("yaml"))
        yield SystemCommand("Describe selected object", "The object and its events, as kubectl describe (d)",
                            lambda: self._screen_action("describe"))
        yield SystemCommand("Logs of selected object", "A pod's log; a node's GPU plugin and Karpenter lines (l)",
                            lambda: self._screen_action("logs"))
        if not self.read_only:
            yield SystemCommand("Debug pod on selected node", "Run nvidia-smi on the node in a debug pod (Ctrl+D)",
                                lambda: self._screen_action("debug"))
        yield SystemCommand("Export bundle", "Write a redacted diagnostic bundle for a ticket (e)",
                            self.action_export)
        yield SystemCommand("Copy fix commands", "On a finding: copy its commands to the clipboard (c)",
                            lambda: self._screen_action("copy"))
        yield SystemCommand("Help", "Keys, colours and where to start (?)", self.action_help)

    def _screen_action(self, name: str) -> None:
        method = getattr(self.screen, f"action_{name}", None)
        if method is None:
            self.notify(f"Not available on this screen: {name}.", severity="warning")
            return
        method()


def kube_contexts(kubeconfig: str | None) -> list[str]:
    """Context names in the kubeconfig (`:ctx` lists them), as kubectl config get-contexts; [] when unreadable."""
    import os

    from kubernetes import config

    path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or os.path.expanduser("~/.kube/config")
    try:
        contexts, _active = config.list_kube_config_contexts(config_file=path)
    except Exception:  # noqa: BLE001 - an unreadable kubeconfig lists nothing; switching then says why
        return []
    return [str(c.get("name")) for c in contexts or [] if isinstance(c, dict) and c.get("name")]


def run_app(args: argparse.Namespace, title: str = "", session: LiveSession | None = None,
            new_session: Callable[[str | None, str | None], LiveSession] | None = None) -> int:
    """Entry point for `gputui` and `gputui demo`: a bundle with `--bundle`, else the live `session`
    (built and started by `gputui.cli.tui.start_early` before Textual was imported); `new_session`
    builds another for `:ctx` / `:ns` (the CLI passes it in: the TUI never imports the CLI)."""
    bundle = getattr(args, "bundle", None)
    if bundle:
        from gputui.errors import UsageError

        try:
            from gputui.bundle.read import BundleError, open_bundle
        except ImportError:
            raise UsageError("opening bundles is not available in this build") from None
        try:
            snap = open_bundle(bundle).snapshot()
        except BundleError as exc:
            raise UsageError(str(exc)) from None
        app = GputuiApp(snapshot=snap, read_only=True, title=title or f"bundle {bundle}",
                        namespace=getattr(args, "namespace", None))
    else:
        assert session is not None, "a live TUI needs the session start_early built"
        app = GputuiApp(session=session, read_only=bool(getattr(args, "read_only", False)),
                        title=title, namespace=getattr(args, "namespace", None),
                        new_session=new_session,
                        contexts=lambda: kube_contexts(getattr(args, "kubeconfig", None)))
    code = app.run()
    return int(code if code is not None else ExitCode.OK)
