"""Where the Karpenter controller runs, for the `kubectl logs` a finding suggests.

Karpenter's docs install it in kube-system (since v0.33), many clusters still have it in
`karpenter`: the namespace is read off the controller's pod, kube-system when it is not visible.
"""

from __future__ import annotations

from diagnostics.records import Pod
from diagnostics.snapshot import Snapshot


def _is_karpenter(pod: Pod) -> bool:
    return pod.meta.labels.get("app.kubernetes.io/name") == "karpenter"


def controller_namespace(snap: Snapshot) -> str:
    """The namespace the Karpenter controller actually runs in."""
    pod = snap.index.first_pod("karpenter", _is_karpenter)
    return "kube-system" if pod is None or not pod.namespace else pod.namespace


def logs_command(ns: str, grep: str) -> str:
    """`kubectl logs` of the Karpenter controller in namespace `ns`, filtered to `grep`."""
    return f"kubectl logs -n {ns} -l app.kubernetes.io/name=karpenter --tail=500 | grep {grep}"
