"""A live session: informers for every Kubernetes source feeding one Store, plus cluster identity."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from diagnostics.snapshot import KUBE_SOURCES, Snapshot
from gputui import clock
from gputui.kubeapi import Api, ClusterInfo, KubeError
from gputui.sources.kube import Informer
from gputui.store import Store


class LiveSession:
    """Informers (watch) for Kubernetes; pollers on an interval for the optional sources."""

    def __init__(self, api: Api, info: ClusterInfo, *, watch_timeout: int = 55, prometheus: Any = None,
                 aws: Any = None) -> None:
        self.api = api
        self.info = info
        self.store = Store(clock=clock.now)
        self.store.cluster = {"context": info.context, "server": info.server}
        self.informers = [Informer(api, s, self.store, watch_timeout=watch_timeout) for s in KUBE_SOURCES]
        self.prometheus: Any = None
        if prometheus is not None:
            from gputui.sources.prometheus import PrometheusPoller

            self.prometheus = PrometheusPoller(self.store, prometheus, api, now=clock.now)
        self.aws: Any = None
        if aws is not None:
            from gputui.sources.aws import AwsPoller

            self.aws = AwsPoller(self.store, aws)

    def start(self) -> None:
        try:
            v = self.api.get("/version", timeout=5)
            self.store.cluster["version"] = v.get("gitVersion", "") if isinstance(v, dict) else ""
        except KubeError:
            pass  # informers report reachability per source
        for inf in self.informers:
            inf.start()
        for poller in (self.prometheus, self.aws):
            if poller is not None:
                poller.start()

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
        for inf in self.informers:
            inf.stop()
        for poller in (self.prometheus, self.aws):
            if poller is not None:
                poller.stop()
