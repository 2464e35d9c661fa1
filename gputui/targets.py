"""Parse `pod/NAME`, `pod/NS/NAME`, `node/NAME`, `nodeclaim/NAME`, `nodepool/NAME` targets."""

from __future__ import annotations

from dataclasses import dataclass

from diagnostics.model import ObjectRef

KINDS = {"pod": "Pod", "po": "Pod", "pods": "Pod", "node": "Node", "no": "Node", "nodes": "Node",
         "nodeclaim": "NodeClaim", "nodeclaims": "NodeClaim", "nodepool": "NodePool", "nodepools": "NodePool",
         "ec2nodeclass": "EC2NodeClass", "ec2nodeclasses": "EC2NodeClass", "ec2nc": "EC2NodeClass"}


class TargetError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Target:
    ref: ObjectRef | None
    """None means the whole cluster."""

    def __str__(self) -> str:
        return str(self.ref) if self.ref else "cluster"


def in_namespace(target: Target, text: str | None, namespace: str | None, context_namespace: str) -> Target:
    """`pod/NAME` without -n means the kubeconfig context's namespace (as kubectl does), known only once
    connected; `parse_target` said `default` before then."""
    ref = target.ref
    if ref is None or ref.kind != "Pod" or namespace or (text or "").count("/") != 1:
        return target
    return Target(ObjectRef("Pod", ref.name, context_namespace or "default"))


def parse_target(text: str | None, namespace: str | None = None) -> Target:
    if not text or text in ("cluster", "all"):
        return Target(None)
    parts = text.split("/")
    kind = KINDS.get(parts[0].lower())
    if any(p in (".", "..") for p in parts[1:]):  # the URL path would resolve them to another resource
        raise TargetError(f"bad target {text!r}: '.' and '..' are not object names")
    if kind is None or len(parts) < 2 or not all(parts[1:]):
        raise TargetError(f"bad target {text!r}: use pod/NAME, pod/NAMESPACE/NAME, node/NAME, "
                          "nodeclaim/NAME, nodepool/NAME or ec2nodeclass/NAME")
    if kind == "Pod":
        if len(parts) == 3:
            return Target(ObjectRef("Pod", parts[2], parts[1]))
        if len(parts) == 2:
            return Target(ObjectRef("Pod", parts[1], namespace or "default"))
    elif len(parts) == 2:
        return Target(ObjectRef(kind, parts[1]))
    raise TargetError(f"bad target {text!r}: too many '/' parts")
