"""A demo Prometheus: DCGM and Karpenter history shaped by the demo scenario's objects, on 127.0.0.1.

Roles come from the objects, never from their names, so any scenario works:
- only nodes that advertise GPUs in `status.capacity` have dcgm-exporter series (where the driver
  is broken, the exporter crash-loops too); a NotReady node's series stop 10 minutes ago,
- a GPU node whose allocatable GPUs are below capacity (e.g. 7 of 8) gets an Xid 79 on its last GPU,
  and that GPU's Xid gauge goes back a week: it fell off the bus five and two days ago too (each time
  until a reboot), so gpu-rma-candidate has a GPU that keeps failing to show,
- a GPU node with no GPU pods bound shows idle GPUs,
- other GPU nodes show normal utilisation, GPUs labelled with the pods that hold them (in index order),
- each NodePool exports GPU usage (its nodes' GPUs) and limit (`spec.limits`),
- a NodePool whose NodeClaims got `InsufficientCapacityError` events (NodeClaims are named
  `<nodepool>-<suffix>`) shows that many insufficient-capacity disruptions and launch failures in
  the last 15 minutes; ICE events no pool can be matched to go to the spot-only NodePools.

The history runs on past start-up (`FUTURE`): Prometheus answers at the wall clock, and a history
that ended at start-up made the demo change its story after a few minutes (the Xid gone, the metric
checks "not exported"). Every rule above stays steady from then on, one sample every five minutes
(`FUTURE_STEP`, to keep the backfill quick): every half hour the fallen GPU is reset (its Xid gauge
reads 0 for one sample) and falls off the bus again, so the last hour always holds a new Xid 79 -
a GPU that keeps failing, as the RMA check already says (its count of occurrences grows); the
launch failures go on at the same rate; utilisation and temperatures keep their shape.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes.utils import parse_quantity

from diagnostics.records import is_accelerator
from gputui.sim.prometheus_local import LocalPrometheusError, OpenMetrics, find_binaries, start

_MODELS = {"h100": "NVIDIA H100 80GB HBM3", "h200": "NVIDIA H200", "a100": "NVIDIA A100-SXM4-80GB",
           "a10g": "NVIDIA A10G", "l4": "NVIDIA L4", "l40s": "NVIDIA L40S", "t4": "Tesla T4",
           "v100": "Tesla V100-SXM2-16GB"}
_STEP = 60
_HISTORY = 2 * 3600 + 600  # > 2 h: "offset 1h" windows and the 50-minute idle rule need it
FUTURE = 12 * 3600
"""Seconds of history written past start-up: the demo tells the same story for this long."""
FUTURE_STEP = 300
"""Seconds between samples past start-up (every range the checks query holds at least one)."""
XID_RETRY = 1800
"""Every this many seconds after start-up the fallen GPU is reset and falls off again (see the module doc)."""
ICE_WINDOW = 900
"""Launch failures are spread so that any 15-minute window holds the scenario's count."""


@dataclass
class DemoGpuNode:
    name: str
    gpus: int
    model: str
    ip: str = ""
    pods: list[tuple[str, str]] = field(default_factory=list)
    """(namespace, name) per GPU index, for the GPUs a pod holds."""
    idle: bool = False
    xid79_gpu: int | None = None
    ready: bool = True


@dataclass
class DemoPlan:
    """What the demo history shows; built from the scenario objects by `plan_from_objects`."""

    nodes: list[DemoGpuNode] = field(default_factory=list)
    pools: dict[str, tuple[float, float | None]] = field(default_factory=dict)
    """NodePool -> (GPUs in use, GPU limit or None)."""
    ice: dict[str, int] = field(default_factory=dict)
    """NodePool -> NodeClaims that failed for insufficient capacity in the last 15 minutes."""


def _accel(resources: Mapping[str, Any] | None) -> float:
    total = 0.0
    for k, v in (resources or {}).items():
        if is_accelerator(str(k)):
            try:
                total += float(parse_quantity(v))
            except (ValueError, TypeError):
                continue
    return total


def _gpu_count(node: Mapping[str, Any]) -> int:
    """GPUs the device plugin registered: a node without them has no working driver, so no exporter."""
    return int(_accel((node.get("status") or {}).get("capacity")))


_FAMILY_GPU = {"p5": "h100", "p5e": "h200", "p5en": "h200", "p4d": "a100", "p4de": "a100", "g5": "a10g",
               "g6": "l4", "g6e": "l40s", "g4dn": "t4", "p3": "v100", "p3dn": "v100"}


def _model(labels: Mapping[str, str]) -> str:
    product = labels.get("nvidia.com/gpu.product")
    if product:
        return product.replace("-", " ")
    name = (labels.get("karpenter.k8s.aws/instance-gpu-name") or "").lower()
    if not name:
        family = (labels.get("node.kubernetes.io/instance-type") or "").split(".", 1)[0]
        name = _FAMILY_GPU.get(family, "")
    return _MODELS.get(name, f"NVIDIA {name.upper()}" if name else "NVIDIA GPU")


def plan_from_objects(objects: Iterable[Mapping[str, Any]]) -> DemoPlan:
    objs = [o for o in objects if isinstance(o, Mapping)]
    pods_by_node: dict[str, list[tuple[str, str, int]]] = {}
    for p in objs:
        if p.get("kind") != "Pod":
            continue
        spec, status = p.get("spec") or {}, p.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            continue
        want = sum(_accel((c.get("resources") or {}).get("limits") or (c.get("resources") or {}).get("requests"))
                   for c in spec.get("containers") or [])
        if want > 0:
            meta = p.get("metadata") or {}
            pods_by_node.setdefault(spec["nodeName"], []).append(
                (str(meta.get("namespace") or "default"), str(meta.get("name")), int(want)))
    plan = DemoPlan()
    pool_usage: dict[str, float] = {}
    for n in objs:
        if n.get("kind") != "Node":
            continue
        gpus = _gpu_count(n)
        if gpus <= 0:
            continue
        meta, status = n.get("metadata") or {}, n.get("status") or {}
        labels = meta.get("labels") or {}
        name = str(meta.get("name"))
        ip = next((a.get("address", "") for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), "")
        ready = next((c.get("status") == "True" for c in status.get("conditions") or [] if c.get("type") == "Ready"),
                     True)
        node = DemoGpuNode(name, gpus, _model(labels), ip, ready=ready)
        for ns, pod, want in pods_by_node.get(name, []):
            node.pods.extend([(ns, pod)] * want)
        node.pods = node.pods[:gpus]
        allocatable = _accel(status.get("allocatable"))
        if 0 < allocatable < gpus:  # the device plugin dropped a GPU: show why
            node.xid79_gpu = gpus - 1
        elif not node.pods:
            node.idle = True
        plan.nodes.append(node)
        pool = labels.get("karpenter.sh/nodepool")
        if pool:
            pool_usage[pool] = pool_usage.get(pool, 0.0) + gpus
    spot_only: list[str] = []
    for p in objs:
        if p.get("kind") != "NodePool":
            continue
        name = str((p.get("metadata") or {}).get("name"))
        spec = p.get("spec") or {}
        used = pool_usage.get(name, _accel((p.get("status") or {}).get("resources")))
        limit = _accel(spec.get("limits")) if any(is_accelerator(k) for k in spec.get("limits") or {}) else None
        plan.pools[name] = (used, limit)
        reqs = ((spec.get("template") or {}).get("spec") or {}).get("requirements") or []
        cap = [r for r in reqs if r.get("key") == "karpenter.sh/capacity-type" and r.get("operator") == "In"]
        if cap and set(cap[0].get("values") or []) == {"spot"}:
            spot_only.append(name)
    unmatched = 0
    for e in objs:
        if e.get("kind") != "Event" or e.get("reason") != "InsufficientCapacityError":
            continue
        claim = str((e.get("involvedObject") or {}).get("name") or "")
        pool = max((p for p in plan.pools if claim.startswith(f"{p}-")), key=len, default="")
        count = int(e.get("count") or 1)
        if pool:
            plan.ice[pool] = plan.ice.get(pool, 0) + count
        else:
            unmatched += count
    for pool in spot_only if unmatched else ():
        plan.ice[pool] = plan.ice.get(pool, 0) + unmatched
    return plan


def _jitter(*parts: object) -> float:
    """Deterministic 0..1 noise: the same demo always draws the same curves (seeded by the time from
    start-up, not the wall clock, so screenshots taken on another day show the same values)."""
    h = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return h[0] / 255.0


def _week_before(t0: float, now: float) -> list[tuple[float, float]]:
    """The Xid gauge of a GPU that keeps failing, every 5 minutes before the main history: 79 from five
    days and from two days ago until a reboot two hours later (the exporter restarts at 0)."""
    day, start = 86400.0, now - 7 * 86400
    episodes = ((now - 5 * day, now - 5 * day + 7200), (now - 2 * day, now - 2 * day + 7200))
    return [(t, 79.0 if any(a <= t < b for a, b in episodes) else 0.0)
            for t in (start + i * 300 for i in range(int((t0 - start) // 300))) if t < t0]


def _xid_series(om: OpenMetrics, labels: Mapping[str, str], alive: list[float], now: float,
                week: list[tuple[float, float]]) -> None:
    """The fallen GPU's Xid gauge: 79 since 20 minutes before start-up; after start-up, 0 for one
    sample every XID_RETRY seconds (a reset), then 79 again (it fell off again)."""
    def value(t: float) -> int:
        if t < now - 1200:
            return 0
        since = t - now
        return 0 if since >= XID_RETRY and since % XID_RETRY < FUTURE_STEP else 79

    om.add("DCGM_FI_DEV_XID_ERRORS", labels, week + [(t, value(t)) for t in alive])


def openmetrics_for(plan: DemoPlan, now: float, future: float = FUTURE) -> str:
    """The backfill file: history from now-2h10m up to `now` (a sample a minute), then on to
    `now` + `future` (a sample every FUTURE_STEP seconds)."""
    om = OpenMetrics()
    t0 = now - _HISTORY
    times = [t0 + i * _STEP for i in range(int(_HISTORY / _STEP) + 1)]
    times += [now + i * FUTURE_STEP for i in range(1, int(future / FUTURE_STEP) + 1)]
    for node in plan.nodes:
        alive = times if node.ready else [t for t in times if t <= now - 600]
        for i in range(node.gpus):
            pod = node.pods[i] if i < len(node.pods) else ("", "")
            uuid = "GPU-" + hashlib.sha256(f"{node.name}/{i}".encode()).hexdigest()[:8] + "-demo"
            labels = {"gpu": str(i), "UUID": uuid, "pci_bus_id": f"00000000:{0x10 + i:02X}:00.0",
                      "device": f"nvidia{i}", "modelName": node.model, "Hostname": node.name,
                      "DCGM_FI_DRIVER_VERSION": "570.133.20", "container": "main" if pod[1] else "",
                      "namespace": pod[0], "pod": pod[1]}
            fell_off = node.xid79_gpu == i
            if node.idle:
                util = [round(2 * _jitter(node.name, i, round(t - now))) for t in alive]
            else:
                util = [55 + round(40 * _jitter(node.name, i, round(t - now))) for t in alive]
            sampled = alive
            if fell_off:
                util = [u if t < now - 1200 else 0 for u, t in zip(util, alive, strict=True)]
                # Fallen off the bus: DCGM cannot read it any more, its utilisation and temperature stop
                # (a flat 0 for an hour would turn it into an idle GPU and change the demo's story).
                sampled = [t for t in alive if t <= now]
                util = util[:len(sampled)]
            om.add("DCGM_FI_DEV_GPU_UTIL", labels, zip(sampled, util, strict=True))
            temps = ((t, (34 if u < 5 else 60) + round(6 * _jitter("t", node.name, i, round(t - now))))
                     for t, u in zip(sampled, util, strict=True))
            om.add("DCGM_FI_DEV_GPU_TEMP", labels, temps)
            if fell_off:
                _xid_series(om, labels, alive, now, _week_before(t0, now))
            else:
                om.add("DCGM_FI_DEV_XID_ERRORS", labels, ((t, 0) for t in alive))
            om.add("DCGM_FI_DEV_ROW_REMAP_FAILURE", labels, ((t, 0) for t in alive))
            om.add("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", labels, ((t, 0) for t in alive))
            om.add("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", labels, ((t, 0) for t in alive), kind="counter")
    om.add("karpenter_build_info", {"version": "1.6.0", "commit": "demo"}, ((t, 1) for t in times))
    for pool, (used, limit) in sorted(plan.pools.items()):
        lab = {"nodepool": pool, "resource_type": "nvidia.com/gpu"}
        om.add("karpenter_nodepools_usage", lab, ((t, used) for t in times))
        if limit is not None:
            om.add("karpenter_nodepools_limit", lab, ((t, limit) for t in times))
    # The failures started 15 minutes before start-up and go on at the same rate: any 15-minute
    # window, at start-up or hours later, holds the scenario's count.
    # A sample a minute here too (a few series): increase() over 15 minutes of 5-minute samples reads
    # the count short.
    start = now - ICE_WINDOW
    recent = [start + i * _STEP for i in range(int((ICE_WINDOW + future) / _STEP) + 1)]
    launch_failures = 0
    for pool, failed in sorted(plan.ice.items()):
        counts = [failed * (t - start + _STEP) / ICE_WINDOW for t in recent]  # steady: no rounding steps
        om.add("karpenter_nodeclaims_disrupted_total",
               {"nodepool": pool, "reason": "insufficient_capacity", "capacity_type": "spot",
                "consolidation_policy": "WhenEmptyOrUnderutilized", "termination_mode": "forceful"},
               zip(recent, counts, strict=True), kind="counter")
        launch_failures += failed
    if launch_failures:
        counts = [launch_failures * (t - start + _STEP) / ICE_WINDOW for t in recent]
        om.add("karpenter_cloudprovider_instance_launch_failures_total",
               {"capacity_type": "spot", "zone": "us-east-1a", "zone_id": "use1-az1", "reason": "LaunchFailed"},
               zip(recent, counts, strict=True), kind="counter")
    return om.text()


def start_demo_prometheus(objects: Iterable[Mapping[str, Any]], *, now: datetime | float | None = None,
                          workdir: str | Path | None = None) -> tuple[str, Callable[[], None]] | None:
    """Backfill a demo history for the scenario's objects and serve it; (url, stop) or None without Prometheus.

    `now` defaults to the wall clock: Prometheus evaluates instant queries at real time, so the
    history must end now (the simulator shifts the scenario's times the same way). The stop
    function terminates Prometheus and removes its temporary directory.
    """
    if find_binaries() is None:
        return None
    ts = now.timestamp() if isinstance(now, datetime) else float(now) if now is not None else time.time()
    own = workdir is None
    path = Path(tempfile.mkdtemp(prefix="gputui-prometheus-")) if workdir is None else Path(workdir)
    try:
        running = start(openmetrics_for(plan_from_objects(objects), ts), path)
    except LocalPrometheusError:
        if own:
            shutil.rmtree(path, ignore_errors=True)
        raise

    def stop() -> None:
        running.stop()
        if own:
            shutil.rmtree(path, ignore_errors=True)

    return running.url, stop
