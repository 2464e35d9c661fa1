"""A live session: informers for every Kubernetes source feeding one Store, plus cluster identity."""

from __future__ import annotations

from datetime import datetime

from diagnostics.snapshot import KUBE_SOURCES, Snapshot
from gputui import clock
from gputui.kubeapi import Api, ClusterInfo, KubeError
from gputui.sources.kube import Informer
from gputui.store import Store


class LiveSession:
    def __init__(self, api: Api, info: ClusterInfo, *, watch_timeout: int = 55) -> None:
        self.api = api
        self.info = info
        self.store = Store(clock=clock.now)
        self.store.cluster = {"context": info.context, "server": info.server}
        self.informers = [Informer(api, s, self.store, watch_timeout=watch_timeout) for s in KUBE_SOURCES]

    def start(self) -> None:
        try:
            v = self.api.get("/version", timeout=5)
            self.store.cluster["version"] = v.get("gitVersion", "") if isinstance(v, dict) else ""
        except KubeError:
            pass  # informers report reachability per source
        for inf in self.informers:
            inf.start()

    def wait_synced(self, timeout: float) -> bool:
        return self.store.wait_synced(KUBE_SOURCES, timeout)

    def snapshot(self, taken_at: datetime | None = None) -> Snapshot:
        return self.store.snapshot(taken_at)

    def stop(self) -> None:
        for inf in self.informers:
            inf.stop()
