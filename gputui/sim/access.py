"""Which resources answer 403 (RBAC denial) and which are absent (CRD not installed)."""

from __future__ import annotations

import threading

from gputui.sim.kinds import KINDS, KindInfo

READ_VERBS = frozenset({"get", "list", "watch"})
DEFAULT_USER = "system:serviceaccount:default:gputui"


def _split(resource: str) -> tuple[KindInfo, str]:
    """`pods/log` -> (Pod, "log"); `nodeclaims.karpenter.sh` -> (NodeClaim, "")."""
    base, _, sub = resource.partition("/")
    return KINDS.resolve(base), sub


class AccessPolicy:
    """Thread-safe sets consulted on every request; mutated by scenarios and tests."""

    def __init__(self, user: str = DEFAULT_USER) -> None:
        self.user = user
        self._lock = threading.Lock()
        self._forbidden: dict[tuple[str, str], frozenset[str]] = {}  # (kind, subresource) -> verbs
        self._absent: set[str] = set()
        self._only_namespace: str | None = None
        """A namespace-limited user (a RoleBinding, no ClusterRoleBinding): namespaced kinds readable
        only in this namespace; cluster-wide lists of them are forbidden."""

    def forbid(self, resource: str, verbs: frozenset[str] | set[str] | None = None) -> None:
        """Deny `verbs` (default get/list/watch) on a resource like `nodeclaims.karpenter.sh` or `pods/log`."""
        info, sub = _split(resource)
        with self._lock:
            self._forbidden[(info.kind, sub)] = frozenset(verbs) if verbs else READ_VERBS

    def allow(self, resource: str) -> None:
        info, sub = _split(resource)
        with self._lock:
            self._forbidden.pop((info.kind, sub), None)

    def limit_to_namespace(self, namespace: str | None) -> None:
        """Namespaced kinds only in `namespace` (None: everywhere again), as a Role would grant."""
        with self._lock:
            self._only_namespace = namespace

    def is_forbidden(self, info: KindInfo, verb: str, subresource: str = "", namespace: str | None = None) -> bool:
        with self._lock:
            verbs = self._forbidden.get((info.kind, subresource))
            only = self._only_namespace
        if only is not None and info.namespaced and namespace != only and verb in READ_VERBS:
            return True
        return verbs is not None and verb in verbs

    def set_absent(self, resource: str, absent: bool = True) -> None:
        info, _ = _split(resource)
        with self._lock:
            if absent:
                self._absent.add(info.kind)
            else:
                self._absent.discard(info.kind)

    def is_absent(self, info: KindInfo) -> bool:
        with self._lock:
            return info.kind in self._absent

    def forbidden_resources(self) -> list[str]:
        with self._lock:
            return sorted(KINDS.resolve(k).resource + (f"/{s}" if s else "") for k, s in self._forbidden)
