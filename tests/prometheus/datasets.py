"""Metric histories for the Prometheus tests, and the cluster objects they describe.

Every history ends at the `now` it is given (instant queries look back only 5 minutes) and covers
more than two hours (the "offset 1h" and 50-minute rules need it). Each dataset exercises one
exporter generation:
- `fleet`: current names (`hostname`, `karpenter_nodepools_*`), ECC counters enabled, one failure per check;
- `quiet`: older names (`Hostname`, `karpenter_nodepool_*`), ECC counters enabled, nothing wrong;
- `legacy`: older names with failures, dcgm-exporter's default counters (ECC off), plus a GPU known
  only by the scrape target's IP;
- `empty`: a Prometheus with neither dcgm-exporter nor Karpenter metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gputui.sim.prometheus_local import OpenMetrics
from tests.prometheus.hour import fresh, hour
from tests.prometheus.week import week

STEP = 60
SPAN = 2 * 3600 + 600

BUSY = "ip-10-0-1-10.ec2.internal"   # 8x H100, training, healthy (one warm GPU)
BROKEN = "ip-10-0-1-11.ec2.internal"  # 8x H100, GPU 7 fell off the bus (Xid 79)
IDLE = "ip-10-0-1-12.ec2.internal"    # 4x A10G: two GPUs held by a notebook doing nothing, two unallocated
SICK = "ip-10-0-1-13.ec2.internal"    # 1x A10G: hot, PCIe replays, ECC DBE, row remap failure
H100, A10G = "NVIDIA H100 80GB HBM3", "NVIDIA A10G"

CLUSTER = f"""
apiVersion: v1
kind: Node
metadata:
  name: {BUSY}
  labels: {{karpenter.sh/nodepool: gpu-ondemand, node.kubernetes.io/instance-type: p5.48xlarge}}
spec: {{providerID: "aws:///us-east-1a/i-0aaa000000000010"}}
status:
  addresses: [{{type: InternalIP, address: 10.0.1.10}}]
  capacity: {{nvidia.com/gpu: "8"}}
  allocatable: {{nvidia.com/gpu: "8"}}
  conditions: [{{type: Ready, status: "True"}}]
---
apiVersion: v1
kind: Node
metadata:
  name: {BROKEN}
  labels: {{karpenter.sh/nodepool: gpu-ondemand, node.kubernetes.io/instance-type: p5.48xlarge}}
spec: {{providerID: "aws:///us-east-1a/i-0aaa000000000011"}}
status:
  addresses: [{{type: InternalIP, address: 10.0.1.11}}]
  capacity: {{nvidia.com/gpu: "8"}}
  allocatable: {{nvidia.com/gpu: "7"}}
  conditions: [{{type: Ready, status: "True"}}]
---
apiVersion: v1
kind: Node
metadata:
  name: {IDLE}
  labels: {{karpenter.sh/nodepool: gpu-spot, node.kubernetes.io/instance-type: g5.12xlarge}}
spec: {{providerID: "aws:///us-east-1b/i-0aaa000000000012"}}
status:
  addresses: [{{type: InternalIP, address: 10.0.1.12}}, {{type: Hostname, address: {IDLE}}}]
  capacity: {{nvidia.com/gpu: "4"}}
  allocatable: {{nvidia.com/gpu: "4"}}
  conditions: [{{type: Ready, status: "True"}}]
---
apiVersion: v1
kind: Node
metadata:
  name: {SICK}
  labels: {{karpenter.sh/nodepool: gpu-spot, node.kubernetes.io/instance-type: g5.xlarge}}
spec: {{providerID: "aws:///us-east-1b/i-0aaa000000000013"}}
status:
  addresses: [{{type: InternalIP, address: 10.0.1.13}}]
  capacity: {{nvidia.com/gpu: "1"}}
  allocatable: {{nvidia.com/gpu: "1"}}
  conditions: [{{type: Ready, status: "True"}}]
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {{name: gpu-ondemand-x7k2q, labels: {{karpenter.sh/nodepool: gpu-ondemand}}}}
spec: {{resources: {{requests: {{nvidia.com/gpu: "8"}}}}}}
status: {{nodeName: {BROKEN}, providerID: "aws:///us-east-1a/i-0aaa000000000011"}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: gpu-ondemand}}
spec:
  limits: {{nvidia.com/gpu: "21"}}
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}}
      requirements: [{{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: gpu-spot}}
spec:
  limits: {{nvidia.com/gpu: "32"}}
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}}
      requirements: [{{key: karpenter.sh/capacity-type, operator: In, values: [spot]}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: trainer-0, namespace: ml}}
spec:
  nodeName: {BUSY}
  containers: [{{name: main, image: x, resources: {{limits: {{nvidia.com/gpu: "8"}}}}}}]
status: {{phase: Running}}
---
apiVersion: v1
kind: Pod
metadata: {{name: notebook-0, namespace: ml}}
spec:
  nodeName: {IDLE}
  containers: [{{name: main, image: x, resources: {{limits: {{nvidia.com/gpu: "2"}}}}}}]
status: {{phase: Running}}
---
apiVersion: v1
kind: Pod
metadata: {{name: nvidia-dcgm-exporter-m4n5p, namespace: gpu-operator}}
spec:
  nodeName: {SICK}
  containers: [{{name: nvidia-dcgm-exporter, image: nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04}}]
status: {{phase: Running, podIP: 10.0.1.77}}
---
apiVersion: v1
kind: Pod
metadata: {{name: finetune-big-0, namespace: ml}}
spec:
  containers: [{{name: main, image: x, resources: {{limits: {{nvidia.com/gpu: "8"}}}}}}]
status: {{phase: Pending}}
"""


class History:
    """Builds one dataset's OpenMetrics text over [now - SPAN, now]."""

    def __init__(self, now: float, host_label: str | None = "hostname") -> None:
        self.now = now
        self.host_label = host_label
        self.times = [now - SPAN + i * STEP for i in range(SPAN // STEP + 1)]
        self.om = OpenMetrics()

    def gpu(self, node: str, index: int, model: str, pod: str = "", namespace: str = "", *,
            host_label: bool = True, **extra: str) -> dict[str, str]:
        labels = {"gpu": str(index), "UUID": f"GPU-{node[3:12].replace('-', '')}-{index:04d}",
                  "pci_bus_id": f"00000000:{0x10 + index:02X}:00.0", "device": f"nvidia{index}", "modelName": model,
                  "DCGM_FI_DRIVER_VERSION": "570.133.20", "pod": pod, "namespace": namespace,
                  "container": "main" if pod else ""}
        if self.host_label and host_label:
            labels[self.host_label] = node
        labels.update(extra)
        return {k: v for k, v in labels.items() if v}  # Prometheus drops empty labels

    def series(self, name: str, labels: dict[str, str], value: Callable[[float], float | None],
               kind: str = "gauge", since: float | None = None) -> None:
        """value(age_seconds) -> sample, None for no sample; `since`: first sample `since` seconds ago."""
        pts = []
        for t in self.times:
            age = self.now - t
            if since is not None and age > since:
                continue
            v = value(age)
            if v is not None:
                pts.append((t, v))
        self.om.add(name, labels, pts, kind=kind)

    def healthy_gpu(self, labels: dict[str, str], util: float = 80, temp: float = 62, ecc: bool = False,
                    xid: Callable[[float], float] = lambda _age: 0) -> None:
        self.series("DCGM_FI_DEV_GPU_UTIL", labels, lambda _a: util)
        self.series("DCGM_FI_DEV_GPU_TEMP", labels, lambda _a: temp)
        self.series("DCGM_FI_DEV_XID_ERRORS", labels, xid)
        self.series("DCGM_FI_DEV_ROW_REMAP_FAILURE", labels, lambda _a: 0)
        self.series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", labels, lambda _a: 0)
        self.series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", labels, lambda _a: 3, kind="counter")
        if ecc:
            self.series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", labels, lambda _a: 0, kind="counter")

    def text(self) -> str:
        return self.om.text()


def _karpenter(h: History, generation: str, pools: Iterable[tuple[str, float, float]]) -> None:
    h.series("karpenter_build_info", {"version": "1.6.0" if generation == "new" else "0.37.0"}, lambda _a: 1)
    name = "karpenter_nodepools" if generation == "new" else "karpenter_nodepool"
    for pool, used, limit in pools:
        for rt, u, lim in (("nvidia.com/gpu", used, limit), ("cpu", 990.0, 1000.0)):
            h.series(f"{name}_usage", {"nodepool": pool, "resource_type": rt}, lambda _a, u=u: u)
            h.series(f"{name}_limit", {"nodepool": pool, "resource_type": rt}, lambda _a, lim=lim: lim)


def fleet(now: float) -> str:
    h = History(now, "hostname")
    for i in range(8):
        # GPU 5 carries an Xid 13 from long ago: the gauge still says 13, but it is not recent.
        h.healthy_gpu(h.gpu(BUSY, i, H100, "trainer-0", "ml"), util=85, temp=87 if i == 3 else 63, ecc=True,
                      xid=(lambda _a: 13) if i == 5 else (lambda _a: 0))
    for i in range(8):
        # GPU 7: Xid 79 twenty minutes ago; it still averaged >10 % over the hour, so it is not "idle".
        h.healthy_gpu(h.gpu(BROKEN, i, H100), util=70, ecc=True,
                      xid=(lambda a: 79 if a <= 1200 else 0) if i == 7 else (lambda _a: 0))
    # A newer exporter's per-Xid series (err_code label), born 10 minutes ago on GPU 3: only
    # the "born in the window" rule sees it, changes() cannot.
    h.series("DCGM_FI_DEV_XID_ERRORS", h.gpu(BROKEN, 3, H100, err_code="119", err_msg="GSP RPC timeout"),
             lambda _a: 119, since=600)
    for i in range(4):
        pod = ("notebook-0", "ml") if i < 2 else ("", "")
        # GPU 0: an application Xid (13) ten minutes ago; the notebook holds GPUs 0-1 at ~1 %.
        h.healthy_gpu(h.gpu(IDLE, i, A10G, *pod), util=1 if i < 2 else 0, temp=35, ecc=True,
                      xid=(lambda a: 13 if a <= 600 else 0) if i == 0 else (lambda _a: 0))
    # A GPU of a pod that started 10 minutes ago: 0 % so far, but too young to call idle.
    h.series("DCGM_FI_DEV_GPU_UTIL", h.gpu(BUSY, 9, H100, "warmup-0", "ml"), lambda _a: 0, since=600)
    sick = h.gpu(SICK, 0, A10G, "inference-0", "serving")
    h.series("DCGM_FI_DEV_GPU_UTIL", sick, lambda _a: 50)
    h.series("DCGM_FI_DEV_GPU_TEMP", sick, lambda _a: 94)
    h.series("DCGM_FI_DEV_XID_ERRORS", sick, lambda _a: 0)
    h.series("DCGM_FI_DEV_ROW_REMAP_FAILURE", sick, lambda a: 1 if a <= 3000 else 0)
    h.series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", sick, lambda a: 3 if a <= 3000 else 1)
    # 30 replays a minute, steadily.
    h.series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", sick, lambda a: 30 * (SPAN - a) / 60, kind="counter")
    # Two DBEs since the driver loaded, the second in the last hour.
    h.series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", sick, lambda a: 2 if a <= 1800 else 1, kind="counter")
    _karpenter(h, "new", [("gpu-ondemand", 20, 21), ("gpu-spot", 5, 32)])
    # ICE on the spot pool: a counter born 12 minutes ago, rising every minute.
    h.series("karpenter_nodeclaims_disrupted_total",
             {"nodepool": "gpu-spot", "reason": "insufficient_capacity", "capacity_type": "spot"},
             lambda a: 1 + (720 - a) // 60, kind="counter", since=720)
    # Node repair replaced gpu-ondemand claims in the last ~100 minutes (Karpenter < v1.8 leaves no
    # event): both counters say so, and they must not be added up. The series is born at 1 and
    # reaches 5; this Prometheus has scraped Karpenter for less than the 6h window, so the first
    # one cannot be told from an older one and 4 are counted.
    for name, labels in (("karpenter_nodeclaims_unhealthy_disrupted_total",
                          {"nodepool": "gpu-ondemand", "condition": "AcceleratedHardwareReady",
                           "capacity_type": "on-demand", "image_id": "ami-0f1e2d3c4b5a69788"}),
                         ("karpenter_nodeclaims_disrupted_total",
                          {"nodepool": "gpu-ondemand", "reason": "unhealthy", "capacity_type": "on-demand"})):
        h.series(name, labels, lambda a: 1 + min(4, (6000 - a) // 1200), kind="counter", since=6000)
    # One registration timeout, a single sample 2 minutes ago: increase() cannot see it.
    h.series("karpenter_nodeclaims_disrupted_total",
             {"nodepool": "gpu-ondemand", "reason": "registration_timeout", "capacity_type": "on-demand"},
             lambda _a: 1, kind="counter", since=120)
    # Old failures and routine disruptions: must not count.
    h.series("karpenter_nodeclaims_disrupted_total",
             {"nodepool": "gpu-ondemand", "reason": "insufficient_capacity", "capacity_type": "on-demand"},
             lambda _a: 2, kind="counter")
    h.series("karpenter_nodeclaims_disrupted_total",
             {"nodepool": "gpu-spot", "reason": "underutilized", "capacity_type": "spot"},
             lambda a: (SPAN - a) // 600, kind="counter")
    h.series("karpenter_cloudprovider_instance_launch_failures_total",
             {"capacity_type": "spot", "zone": "us-east-1b", "zone_id": "use1-az2", "reason": "LaunchFailed"},
             lambda a: 1 + (720 - a) // 60, kind="counter", since=720)
    return h.text()


def quiet(now: float) -> str:
    h = History(now, "Hostname")
    for node, n, model in ((BUSY, 8, H100), (BROKEN, 8, H100), (IDLE, 4, A10G)):
        for i in range(n):
            h.healthy_gpu(h.gpu(node, i, model, "job-0", "ml"), util=75, ecc=True)
    _karpenter(h, "old", [("gpu-ondemand", 16, 64), ("gpu-spot", 4, 32)])
    # Karpenter before v1 names it without `_total` (so it is written as a gauge: OpenMetrics would add one).
    h.series("karpenter_nodeclaims_terminated", {"nodepool": "gpu-spot", "reason": "liveness"}, lambda _a: 3)
    return h.text()


def legacy(now: float) -> str:
    h = History(now, "Hostname")
    # Scraped without honorLabels (a common ServiceMonitor setup): the workload's pod label became
    # exported_pod, and `pod` names the exporter.
    exporter = {"pod": "nvidia-dcgm-exporter-x7k2p", "namespace": "gpu-operator", "container": "nvidia-dcgm-exporter"}
    for i in range(8):
        h.healthy_gpu(h.gpu(BROKEN, i, H100, exported_pod="job-0", exported_namespace="ml", **exporter),
                      xid=(lambda a: 48 if a <= 900 else 0) if i == 2 else (lambda _a: 0))
    # The optional windowed counter (--xid-count-window-size, 5 min): a series per Xid that reads 1
    # for one window and then goes away. increase() of it is 0; it was an Xid all the same.
    h.series("DCGM_EXP_XID_ERRORS_COUNT",
             h.gpu(BROKEN, 5, H100, exported_pod="job-0", exported_namespace="ml", xid="94", **exporter),
             lambda a: 1 if a >= 900 else None, since=1200)
    h.series("DCGM_EXP_XID_ERRORS_COUNT", h.gpu(BROKEN, 5, H100, exported_pod="job-0", exported_namespace="ml",
                                                **exporter), lambda a: 0 if a < 900 else None)
    # dcgm-exporter before 4.5.2-4.8.1 counted DCGM's blank value (DCGM_INT64_BLANK) as an Xid of its own
    # (NVIDIA/dcgm-exporter 52ffa18 "Fix for parsing blank XIDs", xid_collector_test.go): no Xid at all.
    h.series("DCGM_EXP_XID_ERRORS_COUNT", h.gpu(BROKEN, 6, H100, exported_pod="job-0", exported_namespace="ml",
                                                xid="9223372036854775792", **exporter), lambda _a: 1, since=600)
    # No host label at all: only the scrape target's address, which is the node's InternalIP; no
    # pod holds these GPUs, so only the exporter's own pod label is there.
    for i in range(2):
        h.healthy_gpu(h.gpu(IDLE, i, A10G, host_label=False, instance="10.0.1.12:9400",
                            **exporter | {"pod": "nvidia-dcgm-exporter-q9z8w"}), util=0, temp=33)
    # dcgm-exporter without NODE_NAME: Hostname is the exporter pod's own name.
    h.healthy_gpu(h.gpu(SICK, 0, A10G, Hostname="nvidia-dcgm-exporter-m4n5p"), temp=93)
    _karpenter(h, "old", [("gpu-ondemand", 21, 21)])
    h.series("karpenter_nodeclaims_terminated", {"nodepool": "gpu-ondemand", "reason": "liveness"},
             lambda a: 1 + (600 - a) // 120, since=600)
    return h.text()


def empty(now: float) -> str:
    h = History(now)
    h.series("up", {"job": "node-exporter", "instance": "10.0.1.10:9100"}, lambda _a: 1)
    return h.text()


DATASETS: dict[str, Callable[[float], str]] = {"fleet": fleet, "quiet": quiet, "legacy": legacy, "empty": empty,
                                               "week": week, "hour": hour, "xid-fresh": fresh}
