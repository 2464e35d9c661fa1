"""What gputui asks the API server for, and whether the shipped Roles grant exactly that.

`required()` is derived from `gputui.kube.resources.RESOURCES` (what the informers, `diagnose` and bundles read)
plus the few fixed extras (Prometheus discovery, pod logs, debug pods). `access_policy_for()` turns a Role into
the simulator's RBAC, so tests can run gputui against a cluster that grants exactly the Role.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gputui.kube.resources import RESOURCES

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection", "escalate", "bind",
                         "impersonate", "approve", "sign"})
SENSITIVE_RESOURCES = frozenset({"secrets", "configmaps", "serviceaccounts/token", "pods/exec", "pods/attach",
                                 "pods/portforward", "nodes/proxy", "pods/eviction"})


@dataclass(frozen=True, order=True)
class Permission:
    group: str
    resource: str
    """Plural, with `/subresource` when there is one: `pods/log`."""
    verb: str

    def __str__(self) -> str:
        base, _, sub = self.resource.partition("/")
        qualified = f"{base}.{self.group}" if self.group else base
        return f"{self.verb} {qualified}{'/' + sub if sub else ''}"


def readonly_required() -> frozenset[Permission]:
    """Reads: every informer resource (list+watch, get for targets), services (+proxy), pods/log, DRA resourceclaims."""
    perms = {Permission(r.group, r.plural, v) for r in RESOURCES.values() for v in READ_VERBS}
    perms |= {Permission("", "services", "get"), Permission("", "services", "list"),
              Permission("", "services/proxy", "get"), Permission("", "pods/log", "get"),
              Permission("resource.k8s.io", "resourceclaims", "get")}
    return frozenset(perms)


def debug_pod_required() -> frozenset[Permission]:
    """`gputui debug`: create, follow, read and delete its pod (and `--cleanup` lists them)."""
    perms = {Permission("", "pods", v) for v in ("create", "delete", "get", "list", "watch")}
    perms.add(Permission("", "pods/log", "get"))
    return frozenset(perms)


class WildcardError(ValueError):
    """A rule uses `*`: never acceptable for a least-privilege role."""


def granted(role: dict[str, Any]) -> frozenset[Permission]:
    """Every (group, resource, verb) a Role/ClusterRole's rules grant (wildcards are refused)."""
    out: set[Permission] = set()
    for rule in role.get("rules") or []:
        groups, res, verbs = (rule.get(k) or [] for k in ("apiGroups", "resources", "verbs"))
        if rule.get("nonResourceURLs"):
            raise WildcardError(f"non-resource URLs granted: {rule['nonResourceURLs']}")
        for values in (groups, res, verbs):
            if "*" in values:
                raise WildcardError(f"wildcard in rule {rule}")
        if rule.get("resourceNames"):
            raise ValueError(f"resourceNames narrow a rule gputui needs unnarrowed: {rule}")
        out |= {Permission(g, r, v) for g in groups for r in res for v in verbs}
    return frozenset(out)


def describe(perms: Iterable[Permission]) -> list[str]:
    return [str(p) for p in sorted(perms)]


def access_policy_for(sim: Any, grants: frozenset[Permission]) -> None:
    """Make the simulator deny every request the grants do not allow (as RBAC would): per kind and
    subresource, forbid the verbs not granted. Only resources the simulator serves are affected."""
    from gputui.sim.kinds import CRUD_VERBS, KINDS

    for info in KINDS.kinds:
        if info.kind == "SelfSubjectAccessReview":
            continue  # every authenticated user may create these
        for sub in ("", *info.subresources):
            resource = f"{info.plural}/{sub}" if sub else info.plural
            allowed = {p.verb for p in grants if p.group == info.group and p.resource == resource}
            verbs = set(CRUD_VERBS) | {"get"}
            denied = verbs - allowed
            if denied:
                name = f"{info.plural}.{info.group}" if info.group else info.plural
                sim.forbid(f"{name}/{sub}" if sub else name, denied)


@dataclass
class RbacReport:
    readonly_missing: list[str]
    readonly_extra: list[str]
    readonly_write_verbs: list[str]
    readonly_sensitive: list[str]
    debug_missing: list[str]
    debug_extra: list[str]
    e2e: dict[str, Any]

    @property
    def ok(self) -> bool:
        return not (self.readonly_missing or self.readonly_extra or self.readonly_write_verbs
                    or self.readonly_sensitive or self.debug_missing or self.debug_extra) and all(
            v.get("ok") for v in self.e2e.values())

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "ok": self.ok}


def check_manifests() -> RbacReport:
    """Static: the roles grant exactly what gputui requests. Dynamic: gputui runs on a cluster granting only that."""
    from gputui import rbac

    ro, dbg = granted(rbac.load(rbac.READONLY)), granted(rbac.load(rbac.DEBUG_POD))
    need_ro, need_dbg = readonly_required(), debug_pod_required()
    return RbacReport(
        readonly_missing=describe(need_ro - ro), readonly_extra=describe(ro - need_ro),
        readonly_write_verbs=describe(p for p in ro if p.verb in WRITE_VERBS),
        readonly_sensitive=describe(p for p in ro if p.resource in SENSITIVE_RESOURCES),
        debug_missing=describe(need_dbg - dbg), debug_extra=describe(dbg - need_dbg),
        e2e=run_with_grants(ro, dbg))


def run_with_grants(readonly: frozenset[Permission], debug: frozenset[Permission],
                    scenario: str = "incident") -> dict[str, Any]:
    """gputui against a simulator that enforces exactly the roles: diagnose, the live session, a debug pod."""
    import contextlib
    import io
    import tempfile
    from pathlib import Path

    import orjson

    from diagnostics.snapshot import KUBE_SOURCES
    from gputui.cli.program import main
    from gputui.kube.api import Api, load
    from gputui.collect.live import LiveSession
    from gputui.sim.cluster import SimCluster

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="gputui-rbac-") as tmp:
        for label, grants in (("readonly", readonly), ("readonly+debug", readonly | debug)):
            with SimCluster(scenario, shift_to_now=True, debug_pod_delay=0.05) as sim:
                access_policy_for(sim, grants)
                kc = sim.write_kubeconfig(Path(tmp) / f"kubeconfig-{label}")
                if label == "readonly":
                    buf, err = io.StringIO(), io.StringIO()
                    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
                        code = main(["diagnose", "-o", "json", "--kubeconfig", str(kc)])
                    body = orjson.loads(buf.getvalue())
                    bad = {s: st for s, st in body["sources"].items() if s in KUBE_SOURCES and st["state"] != "ok"}
                    out["diagnose"] = {"ok": code in (0, 3, 4) and not bad, "exit_code": code, "not_ok": bad}
                    client, info = load(str(kc))
                    session = LiveSession(Api(client), info)
                    session.start()
                    try:
                        synced = session.wait_synced(15)
                        st = {s: v.state.value for s, v in session.store.status().items() if s in KUBE_SOURCES}
                    finally:
                        session.stop()
                    bad_live = {s: v for s, v in st.items() if v != "ok"}
                    out["live"] = {"ok": synced and not bad_live, "not_ok": bad_live}
                out[f"debug ({label})"] = _debug_with(kc, sim, expect_ok=label != "readonly")
    return out


def _debug_with(kubeconfig: Any, sim: Any, *, expect_ok: bool) -> dict[str, Any]:
    from gputui.debugpod.run import run_debug
    from gputui.kube.api import Api, KubeError, load

    node = next(n["metadata"]["name"] for n in sim.objects("Node")
                if ((n.get("status") or {}).get("capacity") or {}).get("nvidia.com/gpu"))
    client, _ = load(str(kubeconfig))
    try:
        result = run_debug(Api(client), node, timeout=20)
    except KubeError as exc:  # a refused read before the pod exists
        return {"ok": not expect_ok, "error": f"HTTP {exc.status}: {exc.message}"[:200]}
    left = [p["metadata"]["name"] for p in sim.objects("Pod")
            if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "gputui"]
    ran = result.report is not None
    failure = result.failure.title if result.failure is not None else ""
    return {"ok": ran == expect_ok and not left, "nvidia_smi_ran": ran, "pods_left": len(left),
            "failure": failure[:200]}
