"""A live session: informers for every Kubernetes source feeding one Store, plus cluster identity."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import platform
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from diagnostics.snapshot import KUBE_SOURCES, Snapshot
from gputui import clock
from gputui.kube.api import Api, ClusterInfo, KubeError
from gputui.kube.informer import Informer, gc_paused
from gputui.collect.store import Store


PENDING = "status.phase=Pending"
"""The fieldSelector of the pods read first (the apiserver serves it on list and watch)."""
PRELOAD_WATCH_S = 10
"""The pending pods' watch is re-opened this often, so it notices soon that the full list is in."""
FIRST_SCREEN = ("nodes", "events", "pods", "nodeclaims", "nodepools")
"""Sources the first useful screen needs (`pods`: the pending ones) before the full pod list is read."""
FULL_PODS_WAIT = 3.0
"""Seconds the full pod list waits at most for FIRST_SCREEN (a slow source must not hold it back for long)."""
SYNC_GC_HOLD = 300.0
"""Seconds the GC stays paused at most while the first lists load (a stuck source must not leak forever)."""

MMAP_THRESHOLD = 256 * 1024
"""Bytes from which glibc's malloc maps a block of its own (returned to the system when freed)."""
_M_MMAP_THRESHOLD = -3
"""mallopt's parameter number for it (malloc.h)."""


def settle_heap(threshold: int = MMAP_THRESHOLD) -> bool:
    """Once the first lists are in: fix glibc's mmap threshold and give the heap's free pages back.

    glibc raises its mmap threshold to the size of each mapped block that is freed (up to 32 MB),
    so after the list pages (MBs each) every multi-MB buffer, snapshot tuple or index dict is
    carved from the heap of whichever thread allocates it, and stays there as free-but-resident
    memory once freed (at 60k pods, 80-130 MB of the TUI's RSS by the end of a watch burst). Fixed
    (what MALLOC_MMAP_THRESHOLD_ does), big blocks are mapped and unmapped. Not from the start:
    mapping each list page's buffers afresh costs ~10% of the cold start in page faults. glibc only;
    returns whether it applied.
    """
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, threshold)
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        return False
    return True


def _refreeze(phase: str, info: dict[str, int]) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


def freeze_after_full_collections() -> None:
    """After each full collection, freeze its survivors (all reachable: the garbage is gone).

    Watch churn keeps replacing records; without this, every full collection re-scans the whole
    cache (300-800 ms pauses at 60k pods, stalling every thread: the watch lag's p99). Frozen
    objects are still freed by reference counting; only a cycle that forms among them later is
    never collected, and records form none. Once per process.
    """
    if _refreeze not in gc.callbacks:
        gc.callbacks.append(_refreeze)


class LiveSession:
    """Informers (watch) for Kubernetes; pollers on an interval for the optional sources."""

    def __init__(self, api: Api, info: ClusterInfo, *, watch_timeout: int = 55, prometheus: Any = None,
                 aws: Any = None, namespace: str | None = None, pending_first: bool = False) -> None:
        self.api = api
        self.info = info
        self.store = Store(clock=clock.now)
        self.store.cluster = {"context": info.context, "server": info.server}
        self._stopped = threading.Event()
        self.namespace = namespace or None
        """`-n NS` (or the context's namespace): where a user who may not list cluster-wide still looks."""
        fallback = self.namespace or info.namespace or None
        self._first_findings = threading.Event()
        """Set while findings for the first screen are computed: the full pod list waits between pages."""
        self.informers = [Informer(api, s, self.store, watch_timeout=watch_timeout, fallback_namespace=fallback,
                                   pause=self._first_findings.is_set if pending_first and s == "pods" else None)
                          for s in KUBE_SOURCES]
        self.preloader: Informer | None = (
            Informer(api, "pods", self.store, watch_timeout=min(watch_timeout, PRELOAD_WATCH_S), preload=PENDING)
            if pending_first else None)
        """`pending_first` (the TUI): the pending pods, read before the full pod list (a few per cent
        of it) so the pending GPU pods and their findings are on screen seconds earlier."""
        self.prometheus: Any = None
        if prometheus is not None:
            from gputui.sources.prometheus import PrometheusPoller

            self.prometheus = PrometheusPoller(self.store, prometheus, api, now=clock.now)
        self.aws: Any = None
        if aws is not None:
            from gputui.sources.aws import AwsPoller

            self.aws = AwsPoller(self.store, aws)
        self._start_lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        """Start the informers and pollers; once (the CLI starts the session before Textual is
        imported, the app asks again when it mounts and waits here until the first call is done)."""
        with self._start_lock:
            if not self._started:
                self._start()
                self._started = True

    def _start(self) -> None:
        try:
            v = self.api.get("/version", timeout=5)
            self.store.cluster["version"] = v.get("gitVersion", "") if isinstance(v, dict) else ""
        except KubeError:
            pass  # informers report reachability per source
        threading.Thread(target=self._hold_gc_until_synced, name="gc-sync", daemon=True).start()
        if self.preloader is not None:
            self.preloader.start()  # its list request goes out first
        later = [inf for inf in self.informers if self.preloader is not None and inf.res.source == "pods"]
        for inf in self.informers:
            if inf not in later:
                inf.start()
        if later:
            threading.Thread(target=self._start_after_first_screen, args=(later,), name="pods-after",
                             daemon=True).start()
        for poller in (self.prometheus, self.aws):
            if poller is not None:
                poller.start()

    def _start_after_first_screen(self, informers: list[Informer], timeout: float = FULL_PODS_WAIT) -> None:
        """Start the full pod list once what the first screen needs (nodes, events, the pending pods)
        is in, or after `timeout`: parsing the biggest list beside them (all threads share one GIL)
        made each of them, and the findings computed from them, come later."""
        deadline = time.monotonic() + timeout
        needed = FIRST_SCREEN
        preloader = self.preloader
        while not self._stopped.is_set() and time.monotonic() < deadline:
            status = self.store.status()
            if all(s in status for s in needed):
                break
            if preloader is not None and not preloader.running and "pods" not in status:
                break  # the pending pods could not be read (forbidden cluster-wide...): no reason to wait
            time.sleep(0.01)
        if not self._stopped.is_set():
            for inf in informers:
                inf.start()

    def _hold_gc_until_synced(self, timeout: float = SYNC_GC_HOLD) -> None:
        """No cyclic GC while the initial lists load, then freeze what they built.

        Listing builds millions of long-lived, acyclic objects; every full collection during the
        load re-scans all of them (a third of the cold start at 60k pods). Frozen, they are never
        scanned again, and later collections only look at what changed since.
        """
        deadline = time.monotonic() + timeout
        with gc_paused():
            while not self._stopped.is_set() and time.monotonic() < deadline:
                if self.store.wait_synced(KUBE_SOURCES, 0.2):
                    gc.freeze()
                    freeze_after_full_collections()
                    settle_heap()
                    return

    @contextlib.contextmanager
    def first_findings(self) -> Iterator[None]:
        """While the first findings (from the pending pods) are computed, the full pod list, parsed in
        another thread of this process, waits between its pages (a few seconds at most): the two shared
        the GIL and the findings came a second later at 1k nodes."""
        self._first_findings.set()
        try:
            yield
        finally:
            self._first_findings.clear()

    def refresh(self) -> None:
        """Ask the pollers for a new round now (the TUI's `r`); watches are already live."""
        for poller in (self.prometheus, self.aws):
            if poller is not None:
                poller.refresh()

    def wait_synced(self, timeout: float) -> bool:
        return self.store.wait_synced(KUBE_SOURCES, timeout)

    def snapshot(self, taken_at: datetime | None = None) -> Snapshot:
        return self.store.snapshot(taken_at)

    def stop(self) -> None:
        self._stopped.set()
        for inf in self.informers:
            inf.stop()
        if self.preloader is not None:
            self.preloader.stop()
        for poller in (self.prometheus, self.aws):
            if poller is not None:
                poller.stop()
