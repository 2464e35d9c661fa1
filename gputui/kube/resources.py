"""The API resources gputui reads, by source name: where they live and how to name them to a user."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resource:
    source: str
    kind: str
    plural: str
    group: str
    version: str
    namespaced: bool
    crd: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """`nodeclaims.karpenter.sh` - how RBAC errors and `kubectl auth can-i` name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def karpenter_v1(self) -> bool:
        """A Karpenter v1 API: a 404 may mean a Karpenter older than v1.0 (v1beta1 only), not none at all."""
        return self.group.startswith("karpenter.") and self.version == "v1"

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace and self.namespaced:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        return base


RESOURCES: dict[str, Resource] = {r.source: r for r in (
    Resource("nodes", "Node", "nodes", "", "v1", False),
    Resource("pods", "Pod", "pods", "", "v1", True),
    Resource("events", "Event", "events", "", "v1", True),
    Resource("namespaces", "Namespace", "namespaces", "", "v1", False),
    Resource("daemonsets", "DaemonSet", "daemonsets", "apps", "v1", True),
    Resource("pdbs", "PodDisruptionBudget", "poddisruptionbudgets", "policy", "v1", True),
    Resource("runtimeclasses", "RuntimeClass", "runtimeclasses", "node.k8s.io", "v1", False),
    Resource("nodeclaims", "NodeClaim", "nodeclaims", "karpenter.sh", "v1", False, crd=True),
    Resource("nodepools", "NodePool", "nodepools", "karpenter.sh", "v1", False, crd=True),
    Resource("ec2nodeclasses", "EC2NodeClass", "ec2nodeclasses", "karpenter.k8s.aws", "v1", False, crd=True),
)}

BY_KIND: dict[str, Resource] = {r.kind.lower(): r for r in RESOURCES.values()}
