"""Two hours of dcgm-exporter Xid history for gpu-xid-errors (GT704): what is a new Xid in the last hour.

The gauge (DCGM_FI_DEV_XID_ERRORS) holds a GPU's *last* Xid, and dcgm-exporter puts the pod holding the GPU
on every metric of it (pod/namespace/container; internal/pkg/transformation/kubernetes.go, PodMapper.Process)
and err_code/err_msg on the Xid gauge (since 3.3.6-3.4.2): a job that lands on a GPU starts a new series
already reading the old Xid. In MIG mode every GPU instance (GPU_I_PROFILE/GPU_I_ID) carries its GPU's Xid.
Scraped every minute over the last 2 h 10 min; every GPU's Xid below was first read before the history
starts unless said otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

from gputui.sim.prometheus_local import OpenMetrics

STEP = 60
SPAN = 2 * 3600 + 600
H100 = "NVIDIA H100 80GB HBM3"

CHURN = "ip-10-0-3-10.ec2.internal"      # Xid 94 held for days; jobs land on the GPU 50 and 25 minutes ago
GAP = "ip-10-0-3-11.ec2.internal"        # Xid 48 held; no scrapes for 40 minutes, a new job's pod after the gap
MIG_HELD = "ip-10-0-3-12.ec2.internal"   # MIG GPU 0, 3 instances, Xid 79 held; a pod lands on one 20 minutes ago
MIG_NEW = "ip-10-0-3-13.ec2.internal"    # MIG GPU 0, 3 instances: Xid 79 twenty minutes ago (one GPU, one Xid)
AGAIN = "ip-10-0-3-14.ec2.internal"      # GPU 2: Xid 79 held, GPU reset 40 min ago (0), Xid 79 again 15 min ago
LATER = "ip-10-0-3-15.ec2.internal"      # GPU 1: Xid 13 held, then Xid 31 under a new pod 10 minutes ago

CLUSTER = "\n---\n".join(f"""
apiVersion: v1
kind: Node
metadata:
  name: {host}
  labels: {{karpenter.sh/nodepool: gpu-ondemand, node.kubernetes.io/instance-type: p5.48xlarge}}
spec: {{providerID: "aws:///us-east-1a/i-0ccc0000000000{host[10:12]}"}}
status: {{capacity: {{nvidia.com/gpu: "8"}}, allocatable: {{nvidia.com/gpu: "8"}}}}
""" for host in (CHURN, GAP, MIG_HELD, MIG_NEW, AGAIN, LATER))


def _labels(host: str, index: int, pod: str = "", **extra: str) -> dict[str, str]:
    labels = {"gpu": str(index), "UUID": f"GPU-{host[3:12].replace('-', '')}-{index:04d}",
              "pci_bus_id": f"00000000:{0x18 + 0x11 * index:02X}:00.0", "device": f"nvidia{index}",
              "modelName": H100, "Hostname": host, "DCGM_FI_DRIVER_VERSION": "570.133.20"}
    if pod:
        labels |= {"pod": pod, "namespace": "ml", "container": "main"}
    return labels | extra


def hour(now: float) -> str:
    om = OpenMetrics()
    times = [now - SPAN + i * STEP for i in range(SPAN // STEP + 1)]

    def series(labels: dict[str, str], value: Callable[[float], float], alive: tuple[float, float] = (SPAN, 0),
               temp: bool = True) -> None:
        """value(age in seconds); samples while alive[1] <= age <= alive[0]."""
        pts = [(t, value(now - t)) for t in times if alive[1] <= now - t <= alive[0]]
        om.add("DCGM_FI_DEV_XID_ERRORS", labels, pts)
        if temp:
            om.add("DCGM_FI_DEV_GPU_TEMP", labels, [(t, 60) for t, _v in pts])

    m = 60
    # Job churn: each job that lands on the GPU starts a series that already reads the Xid of days ago.
    for pod, alive in (("train-0", (SPAN, 50 * m + STEP)), ("train-1", (50 * m, 25 * m + STEP)), ("train-2", (25 * m, 0))):
        series(_labels(CHURN, 0, pod, err_code="94", err_msg="Contained ECC error"), lambda _a: 94, alive)
    # A scrape gap (Prometheus restarting) of 40 minutes, and the job replaced meanwhile: the gauge still reads 48.
    series(_labels(GAP, 0, "eval-0"), lambda _a: 48, (SPAN, 50 * m))
    series(_labels(GAP, 0, "eval-1"), lambda _a: 48, (10 * m, 0))
    # MIG: one series per GPU instance, each with the GPU's Xid; a pod lands on instance 5 twenty minutes ago.
    for gi in ("3", "5", "6"):
        mig = {"GPU_I_PROFILE": "2g.20gb", "GPU_I_ID": gi}
        if gi == "5":
            series(_labels(MIG_HELD, 0, **mig), lambda _a: 79, (SPAN, 20 * m + STEP))
            series(_labels(MIG_HELD, 0, "infer-0", **mig), lambda _a: 79, (20 * m, 0))
        else:
            series(_labels(MIG_HELD, 0, **mig), lambda _a: 79)
        series(_labels(MIG_NEW, 0, **mig), lambda a: 79 if a <= 20 * m else 0)
    # A real recurrence: the GPU was reset 40 minutes ago (the exporter reads 0 under the next job's pod)
    # and fell off the bus again 15 minutes ago.
    series(_labels(AGAIN, 2, "train-a"), lambda _a: 79, (SPAN, 40 * m + STEP))
    series(_labels(AGAIN, 2, "train-b"), lambda a: 79 if a <= 15 * m else 0, (40 * m, 0))
    for i in (0, 1):
        series(_labels(AGAIN, i, "train-b"), lambda _a: 0)
    # Another Xid under a new job: the gauge turns from 13 to 31 - new, though the GPU read an Xid before.
    series(_labels(LATER, 1, "notebook-0"), lambda _a: 13, (SPAN, 10 * m + STEP))
    series(_labels(LATER, 1, "notebook-1"), lambda _a: 31, (10 * m, 0))
    return om.text()


def fresh(now: float) -> str:
    """A Prometheus that started scraping 30 minutes ago: the held Xid 79 it reads is not new to the GPU."""
    om = OpenMetrics()
    om.add("DCGM_FI_DEV_XID_ERRORS", _labels(CHURN, 0, "train-0"), [(now - a, 79) for a in range(1800, -1, -STEP)])
    om.add("DCGM_FI_DEV_GPU_TEMP", _labels(CHURN, 0, "train-0"), [(now - a, 60) for a in range(1800, -1, -STEP)])
    return om.text()
