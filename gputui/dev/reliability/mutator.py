"""A seeded thread that keeps the simulated cluster changing: GPU nodes, pods, NodeClaims and events come,
change and go at a steady rate, as on a busy Karpenter cluster during an incident."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from datetime import datetime, timezone
from typing import Any

from gputui.sim.cluster import SimCluster
from gputui.sim.status import ApiError

NAMESPACE = "gputui-soak"
"""Namespaced objects the mutator owns live here; cluster-scoped ones are named `soak-*`."""

_INSTANCE_TYPES = (("g5.xlarge", 1), ("g5.12xlarge", 4), ("g6.2xlarge", 1), ("p4d.24xlarge", 8))
_ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
_SCHED_MSG = ("0/{n} nodes are available: {g} Insufficient nvidia.com/gpu, {t} node(s) had untolerated taint "
              "{{nvidia.com/gpu: }}. preemption: 0/{n} nodes are available: {n} Preemption is not helpful for "
              "scheduling.")


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def soak_namespace() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}


def node(name: str, rng: random.Random) -> dict[str, Any]:
    itype, gpus = rng.choice(_INSTANCE_TYPES)
    ready = rng.random() < 0.8
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "node.kubernetes.io/instance-type": itype, "karpenter.sh/nodepool": "soak-gpu",
            "karpenter.sh/capacity-type": rng.choice(("spot", "on-demand")),
            "topology.kubernetes.io/zone": rng.choice(_ZONES),
            "karpenter.k8s.aws/instance-gpu-count": str(gpus)}},
        "spec": {"providerID": f"aws:///us-west-2a/i-0{rng.getrandbits(60):015x}",
                 "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": str(rng.choice((0, gpus)))},
            "allocatable": {"cpu": "7910m", "memory": "30Gi", "nvidia.com/gpu": str(rng.choice((0, gpus)))},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                            "reason": "KubeletReady" if ready else "KubeletNotReady",
                            "message": "kubelet is posting ready status" if ready else
                            "container runtime network not ready", "lastTransitionTime": _now()}],
        },
    }


def pod(name: str, rng: random.Random, nodes: list[str]) -> dict[str, Any]:
    gpus = str(rng.choice((1, 2, 4, 8)))
    bound = nodes and rng.random() < 0.5
    status: dict[str, Any] = {"phase": "Running" if bound else "Pending"}
    if not bound:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": _SCHED_MSG.format(n=9, g=3, t=6), "lastTransitionTime": _now()}]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "soak-trainer"}},
        "spec": {**({"nodeName": rng.choice(nodes)} if bound else {}),
                 "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                 "containers": [{"name": "train", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                                 "resources": {"limits": {"nvidia.com/gpu": gpus},
                                               "requests": {"nvidia.com/gpu": gpus}}}]},
        "status": status,
    }


def nodeclaim(name: str, rng: random.Random) -> dict[str, Any]:
    launched = rng.random() < 0.6
    conds = [{"type": "Launched", "status": "True" if launched else "False",
              "reason": "Launched" if launched else "LaunchFailed",
              "message": "" if launched else "InsufficientCapacityError: insufficient capacity",
              "lastTransitionTime": _now()}]
    return {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "soak-gpu"}},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "soak"},
                 "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                   "values": [t for t, _ in _INSTANCE_TYPES]}],
                 "resources": {"requests": {"nvidia.com/gpu": "1"}}},
        "status": {"conditions": conds},
    }


def event(name: str, rng: random.Random, involved: str) -> dict[str, Any]:
    reason, message = rng.choice((
        ("FailedScheduling", _SCHED_MSG.format(n=9, g=3, t=6)),
        ("Nominated", f"Pod should schedule on: nodeclaim/soak-claim-{rng.randrange(8)}"),
        ("FailedLaunch", "InsufficientCapacityError: insufficient capacity"),
    ))
    now = _now()
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "involvedObject": {"kind": "Pod", "name": involved, "namespace": NAMESPACE, "apiVersion": "v1"},
        "reason": reason, "message": message, "type": "Warning",
        "source": {"component": "default-scheduler" if reason == "FailedScheduling" else "karpenter"},
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
    }


class Mutator(threading.Thread):
    """Applies, patches and deletes objects at `rate` operations a second until stopped.

    Every operation goes through the simulator like a controller's write would, so every informer sees
    ordinary watch events (ADDED / MODIFIED / DELETED) interleaved with the injected faults.
    """

    def __init__(self, sim: SimCluster, rng: random.Random, rate: float = 40.0, pool: int = 12) -> None:
        super().__init__(name="gputui-soak-mutator", daemon=True)
        self.sim = sim
        self.rng = rng
        self.rate = rate
        self.pool = pool
        self.ops: Counter[str] = Counter()
        self._halt = threading.Event()
        self._live: dict[str, set[str]] = {"Node": set(), "Pod": set(), "NodeClaim": set(), "Event": set()}
        self.error: BaseException | None = None

    def stop(self) -> None:
        self._halt.set()

    def setup(self) -> None:
        if self.sim.get("Namespace", NAMESPACE) is None:
            self.sim.apply(soak_namespace())

    def run(self) -> None:
        interval = 1.0 / self.rate
        next_at = time.monotonic()
        try:
            while not self._halt.is_set():
                self.step()
                next_at += interval
                self._halt.wait(max(0.0, next_at - time.monotonic()))
        except BaseException as exc:  # noqa: BLE001 - reported by the soak, which then fails
            self.error = exc

    def step(self) -> None:
        """One random write; weights favour what changes most on a real cluster (pods, events)."""
        rng = self.rng
        kind = rng.choices(("Pod", "Event", "Node", "NodeClaim", "other"), weights=(4, 3, 2, 2, 1))[0]
        if kind == "other":
            self._touch_other()
            return
        live = self._live[kind]
        name = f"soak-{kind.lower()}-{rng.randrange(self.pool)}"
        ns = NAMESPACE if kind in ("Pod", "Event") else None
        op = rng.random()
        try:
            if name in live and op < 0.25:
                self.sim.delete(kind, name, ns)
                live.discard(name)
                self.ops[f"delete {kind}"] += 1
            elif name in live and op < 0.7:
                self.sim.patch(kind, name, self._patch(kind), ns)
                self.ops[f"patch {kind}"] += 1
            else:
                self.sim.apply(self._object(kind, name))
                live.add(name)
                self.ops[f"apply {kind}"] += 1
        except ApiError as exc:
            if exc.code != 404:  # it was deleted meanwhile (a probe or a restart never deletes ours)
                raise
            live.discard(name)

    def _object(self, kind: str, name: str) -> dict[str, Any]:
        rng = self.rng
        if kind == "Node":
            return node(name, rng)
        if kind == "Pod":
            return pod(name, rng, sorted(self._live["Node"]))
        if kind == "NodeClaim":
            return nodeclaim(name, rng)
        return event(name, rng, f"soak-pod-{rng.randrange(self.pool)}")

    def _patch(self, kind: str) -> dict[str, Any]:
        rng = self.rng
        if kind == "Node":
            return {"status": {"allocatable": {"nvidia.com/gpu": str(rng.choice((0, 1, 4, 8)))}},
                    "metadata": {"labels": {"gputui.dev/soak": str(rng.getrandbits(16))}}}
        if kind == "Pod":
            return {"status": {"phase": rng.choice(("Pending", "Running", "Succeeded", "Failed"))}}
        if kind == "NodeClaim":
            return {"metadata": {"annotations": {"gputui.dev/soak": str(rng.getrandbits(16))}}}
        return {"count": rng.randrange(2, 500), "lastTimestamp": _now()}

    def _touch_other(self) -> None:
        """The slow-changing kinds change too (a NodePool edit, a DaemonSet rollout), now and then."""
        kind = self.rng.choice(("NodePool", "EC2NodeClass", "DaemonSet", "PodDisruptionBudget", "RuntimeClass"))
        objs = [o for o in self.sim.objects(kind) if "gputui.dev/probe" not in (o["metadata"].get("labels") or {})]
        if not objs:
            return
        md = self.rng.choice(objs)["metadata"]
        patch = {"metadata": {"annotations": {"gputui.dev/soak": str(self.rng.getrandbits(16))}}}
        try:
            self.sim.patch(kind, md["name"], patch, md.get("namespace"))
        except ApiError as exc:
            if exc.code != 404:
                raise
            return
        self.ops[f"patch {kind}"] += 1
