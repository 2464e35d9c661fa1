"""A week of dcgm-exporter history for gpu-rma-candidate (GT709): GPUs that keep failing, and GPUs that failed once.

Scraped every 5 minutes (on the minute, as the check's 5-minute subquery steps) for 7 days and 2 hours (the check looks back 7 days, day by day). The Xid gauge
behaves as dcgm-exporter's does: it holds the last Xid until the exporter restarts with the node (back to
0), so an Xid that comes back after each reboot is a new rising edge each time.
"""

from __future__ import annotations

from collections.abc import Callable

from gputui.sim.prometheus_local import OpenMetrics

DAY = 86400
STEP = 300
SPAN = 7 * DAY + 2 * 3600

REPEAT = "ip-10-0-2-20.ec2.internal"    # 8x H100: GPU 2 falls off the bus (Xid 79) on three days, rebooted each time
OLD_HOST = "ip-10-0-2-21.ec2.internal"  # replaced 4 days ago by NEW_HOST; its GPU 5 came back there (same UUID)
NEW_HOST = "ip-10-0-2-22.ec2.internal"
ONCE = "ip-10-0-2-23.ec2.internal"      # one Xid 79, two days ago: not a pattern
APP = "ip-10-0-2-24.ec2.internal"       # Xid 13 every day: the job's own bug, not the GPU
REMAP = "ip-10-0-2-25.ec2.internal"     # row remapping failed three days ago
ROWS = "ip-10-0-2-26.ec2.internal"      # uncorrectable remapped rows grew on two days
CHURN = "ip-10-0-2-27.ec2.internal"     # one Xid 94, held by the gauge while a new job pod lands each day
GAP = "ip-10-0-2-28.ec2.internal"       # one Xid 48, held across a 40-minute scrape gap (Prometheus restart)
MIG = "ip-10-0-2-29.ec2.internal"       # MIG GPU 0 (three GPU instances): Xid 79 five days and one day ago
ROWS_JOBS = "ip-10-0-2-30.ec2.internal"  # uncorrectable remapped rows grew on two days, each time under a new job
NVLINK5 = "ip-10-0-2-31.ec2.internal"    # GPU 3: NVLink5 Xid 145 (Blackwell's Xid 74) four days and a day ago
PAGES = "ip-10-0-2-32.ec2.internal"      # T4 (page retirement, no row remapping): DBE pages retired on two days
RESET_JOB = "ip-10-0-2-33.ec2.internal"  # Xid 79 three days ago; reset two days ago, 79 again 30 min later, new pod
H100 = "NVIDIA H100 80GB HBM3"
SHARED_UUID = "GPU-5f0e2a11-93c4-4d0b-8b7e-000000000005"

CLUSTER = f"""
apiVersion: v1
kind: Node
metadata:
  name: {REPEAT}
  labels: {{karpenter.sh/nodepool: gpu-ondemand, node.kubernetes.io/instance-type: p5.48xlarge}}
spec: {{providerID: "aws:///us-east-1a/i-0bbb000000000020"}}
status: {{capacity: {{nvidia.com/gpu: "8"}}, allocatable: {{nvidia.com/gpu: "8"}}}}
---
apiVersion: v1
kind: Node
metadata:
  name: {NEW_HOST}
  labels: {{karpenter.sh/nodepool: gpu-ondemand, node.kubernetes.io/instance-type: p5.48xlarge}}
spec: {{providerID: "aws:///us-east-1a/i-0bbb000000000022"}}
status: {{capacity: {{nvidia.com/gpu: "8"}}, allocatable: {{nvidia.com/gpu: "8"}}}}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {{name: gpu-ondemand-r2d2x, labels: {{karpenter.sh/nodepool: gpu-ondemand}}}}
spec: {{resources: {{requests: {{nvidia.com/gpu: "8"}}}}}}
status: {{nodeName: {REPEAT}, providerID: "aws:///us-east-1a/i-0bbb000000000020"}}
"""


def _labels(host: str, index: int, uuid: str = "") -> dict[str, str]:
    return {"gpu": str(index), "UUID": uuid or f"GPU-{host[3:12].replace('-', '')}-{index:04d}",
            "pci_bus_id": f"00000000:{0x53 + 0x11 * index:02X}:00.0", "device": f"nvidia{index}",
            "modelName": H100, "Hostname": host, "DCGM_FI_DRIVER_VERSION": "570.133.20"}


def _episodes(*spans: tuple[float, float, float]) -> Callable[[float], float]:
    """(code, from age, to age) episodes, in seconds ago: the gauge reads the code during each, else 0."""
    def value(age: float) -> float:
        return next((code for code, start, end in spans if end <= age <= start), 0.0)
    return value


def week(now: float) -> str:
    om = OpenMetrics()
    end = now // STEP * STEP
    times = [end - SPAN + i * STEP for i in range(SPAN // STEP + 1)]

    def series(name: str, labels: dict[str, str], value: Callable[[float], float],
               alive: tuple[float, float] = (SPAN, 0)) -> None:
        om.add(name, labels, [(t, value(now - t)) for t in times if alive[1] <= now - t <= alive[0]])

    def gpu(host: str, index: int, xid: Callable[[float], float] = lambda _a: 0.0, uuid: str = "",
            alive: tuple[float, float] = (SPAN, 0), remap_failure: Callable[[float], float] = lambda _a: 0.0,
            rows: Callable[[float], float] = lambda _a: 0.0) -> None:
        labels = _labels(host, index, uuid)
        series("DCGM_FI_DEV_GPU_TEMP", labels, lambda _a: 60, alive)
        series("DCGM_FI_DEV_XID_ERRORS", labels, xid, alive)
        series("DCGM_FI_DEV_ROW_REMAP_FAILURE", labels, remap_failure, alive)
        series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", labels, rows, alive)

    h = 3600
    for i in (0, 2):
        # GPU 2: Xid 79 six days, three days and twelve hours ago; each time the node was rebooted two
        # hours later and the exporter came back reading 0.
        gpu(REPEAT, i, _episodes((79, 6 * DAY, 6 * DAY - 2 * h), (79, 3 * DAY, 3 * DAY - 2 * h), (79, 12 * h, 0))
            if i == 2 else (lambda _a: 0.0))
    # The same physical GPU (UUID) under two node names: Xid 48 five days ago on the old node, which was
    # replaced four days ago; and again a day ago on the node that took its place.
    gpu(OLD_HOST, 5, _episodes((48, 5 * DAY, 4 * DAY)), uuid=SHARED_UUID, alive=(SPAN, 4 * DAY))
    gpu(NEW_HOST, 5, _episodes((48, DAY, 0)), uuid=SHARED_UUID, alive=(4 * DAY - h, 0))
    gpu(ONCE, 0, _episodes((79, 2 * DAY, 0)))
    # An application Xid on each of the last six days: RMA is for hardware.
    gpu(APP, 0, _episodes(*((13, d * DAY + h, d * DAY) for d in range(6))))
    gpu(REMAP, 0, remap_failure=lambda a: 1 if a <= 3 * DAY else 0)
    gpu(ROWS, 0, rows=lambda a: 0 if a > 5 * DAY else 2 if a > DAY else 5)
    # dcgm-exporter's pod mapper puts pod/namespace/container of the pod holding the GPU on every metric
    # of it, the Xid gauge too (internal/pkg/transformation/kubernetes.go, `for counter := range metrics`):
    # each new job starts a new series that already reads the Xid seen five days ago. One Xid, not five.
    jobs = [(f"train-{d}", (d + 1) * DAY, d * DAY) for d in range(5)]
    for pod, start, stop in [("", SPAN, 5 * DAY)] + jobs:
        labels = _labels(CHURN, 0) | ({"pod": pod, "namespace": "ml", "container": "main"} if pod else {})
        series("DCGM_FI_DEV_XID_ERRORS", labels, _episodes((94, 5 * DAY - h, 0)), (start, stop))
        series("DCGM_FI_DEV_GPU_TEMP", labels, lambda _a: 60, (start, stop))
    # The same series before and after 40 minutes without scrapes two days ago: the gauge still reads 48.
    for alive in ((SPAN, 2 * DAY), (2 * DAY - 40 * 60, 0)):
        series("DCGM_FI_DEV_XID_ERRORS", _labels(GAP, 0), _episodes((48, 4 * DAY, 0)), alive)
    # MIG: every metric of GPU 0 is one series per GPU instance (GPU_I_PROFILE/GPU_I_ID), parent UUID,
    # as a real dcgm-exporter prints it; the Xid shows on each. One physical GPU, failing twice.
    for gi in ("3", "5", "6"):
        labels = _labels(MIG, 0) | {"GPU_I_PROFILE": "2g.20gb", "GPU_I_ID": gi}
        series("DCGM_FI_DEV_XID_ERRORS", labels, _episodes((79, 5 * DAY, 5 * DAY - 2 * h), (79, DAY, 0)))
        series("DCGM_FI_DEV_GPU_TEMP", labels, lambda _a: 60)
    # Each uncorrectable error kills the job and the next one lands on the GPU: the counter grows as the
    # series changes its pod label, so no single series sees it change.
    for pod, start, stop in (("eval-0", SPAN, 4 * DAY), ("eval-1", 4 * DAY, 2 * DAY), ("eval-2", 2 * DAY, 0)):
        labels = _labels(ROWS_JOBS, 0) | {"pod": pod, "namespace": "ml", "container": "main"}
        series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", labels,
               lambda a: 0 if a > 4 * DAY else 3 if a > 2 * DAY else 6, (start, stop))
    gpu(NVLINK5, 3, _episodes((145, 4 * DAY, 4 * DAY - 2 * h), (145, DAY, 0)))
    # DCGM_FI_DEV_RETIRED_DBE (off in dcgm-exporter's default counters, here turned on): a Turing GPU retires
    # a page per double-bit error, and exports no row remapping at all.
    series("DCGM_FI_DEV_RETIRED_DBE", _labels(PAGES, 0) | {"modelName": "Tesla T4"},
           lambda a: 0 if a > 5 * DAY else 1 if a > 2 * DAY else 3)
    # A reset (the next job's series reads 0) and the same Xid again half an hour later: a new failure, though
    # the previous job's series read 79 within the hour before it.
    for pod, start, stop, value in (("train-a", SPAN, 2 * DAY, lambda a: 79 if a <= 3 * DAY else 0),
                                    ("train-b", 2 * DAY - 5 * 60, 0, lambda a: 79 if a <= 2 * DAY - 30 * 60 else 0)):
        labels = _labels(RESET_JOB, 0) | {"pod": pod, "namespace": "ml", "container": "main"}
        series("DCGM_FI_DEV_XID_ERRORS", labels, value, (start, stop))
        series("DCGM_FI_DEV_GPU_TEMP", labels, lambda _a: 60, (start, stop))
    return om.text()
