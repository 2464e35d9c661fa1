"""A week of dcgm-exporter history for gpu-rma-candidate (GT709): GPUs that keep failing, and GPUs that failed once.

Scraped every 5 minutes (on the minute, as the check's 5-minute subquery steps) for 7 days and 2 hours (the check looks back 7 days, day by day). The Xid gauge
behaves as dcgm-exporter's does: it holds the last Xid until the exporter restarts with the node (back to
0), so an Xid that comes back after each reboot is a new rising edge each time.
"""

from __future__ import annotations

from collections.abc import Callable

from gputui.sources.prometheus_local import OpenMetrics

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
    return om.text()
