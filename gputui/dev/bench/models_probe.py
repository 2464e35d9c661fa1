"""`python -m gputui.dev.bench.models_probe --kubeconfig F`: the kubernetes client used the default way.

One unpaged `list_*` call per kind with the generated (pydantic) models, GC on, as a script or
tool written against the official client does. Prints a JSON progress line after each kind, so a
run killed at its time cap still says how far it got.
"""

from __future__ import annotations

import time

T_START = time.time()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from typing import Any  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gputui.dev.bench.models_probe", description=__doc__.splitlines()[0])
    p.add_argument("--kubeconfig", required=True)
    args = p.parse_args(argv)
    from kubernetes import client, config

    config.load_kube_config(config_file=args.kubeconfig)
    core, apps, policy, node = client.CoreV1Api(), client.AppsV1Api(), client.PolicyV1Api(), client.NodeV1Api()
    custom = client.CustomObjectsApi()

    def crd(group: str, plural: str) -> Callable[[], Any]:
        return lambda: custom.list_cluster_custom_object(group, "v1", plural)

    # Small lists first and pods last, so a capped run shows which list it was stuck in.
    calls: list[tuple[str, Callable[[], Any]]] = [
        ("namespaces", core.list_namespace), ("runtimeclasses", node.list_runtime_class),
        ("ec2nodeclasses", crd("karpenter.k8s.aws", "ec2nodeclasses")), ("nodepools", crd("karpenter.sh", "nodepools")),
        ("nodeclaims", crd("karpenter.sh", "nodeclaims")), ("daemonsets", apps.list_daemon_set_for_all_namespaces),
        ("pdbs", policy.list_pod_disruption_budget_for_all_namespaces), ("nodes", core.list_node),
        ("events", core.list_event_for_all_namespaces), ("pods", core.list_pod_for_all_namespaces),
    ]
    counts: dict[str, int] = {}
    seconds: dict[str, float] = {}
    kept: list[Any] = []  # a tool keeps what it listed (and the GC keeps scanning it)
    for source, fn in calls:
        t0 = time.perf_counter()
        result = fn()
        items = result["items"] if isinstance(result, dict) else result.items
        counts[source] = len(items or ())
        seconds[source] = round(time.perf_counter() - t0, 3)
        kept.append(result)
        line = {"t_start": T_START, "t_now": time.time(), "counts": counts, "seconds": seconds, "partial": True}
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
    out = {"t_start": T_START, "t_done": time.time(), "counts": counts, "seconds": seconds, "partial": False}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
