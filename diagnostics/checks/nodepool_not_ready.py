"""A NodePool that is not Ready for a reason of its own (validation, missing or deleting NodeClass)."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.facts.nodeclass_health import dependent_pods, nodeclass_failing, nothing_happens_evidence, short
from diagnostics.records import Condition, NodePool
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import human_age


@check(code="GT106", slug="nodepool-not-ready", title="NodePools are Ready",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("nodepools",),
       optional=("ec2nodeclasses", "nodeclaims", "pods", "events"))
def nodepool_not_ready(snap: Snapshot) -> Iterator[Finding | int]:
    """A NodePool is not Ready: its spec failed validation, or its NodeClass is missing or being deleted.

    Why it matters:
    Karpenter v1 only provisions from Ready NodePools (log `ignoring nodepool, not ready`), so
    pending pods that only this pool could serve wait forever with nothing but kube-scheduler's
    `FailedScheduling`. NodePools that are not Ready because their EC2NodeClass is broken are
    reported by the EC2NodeClass checks (GT101-GT103) instead.

    Fix:
    For `NodePoolValidationFailed`, correct the spec the message names. For `NodeClassNotFound`,
    create the EC2NodeClass `spec.template.spec.nodeClassRef` names or point the ref at an
    existing one. `NodeClassTerminating`: the class is being deleted; recreate it or move the
    pool to another class.
    """
    classes_known = snap.status("ec2nodeclasses").state.usable and not snap.status("ec2nodeclasses").partial
    for pool in snap.nodepools:
        yield 1
        if pool.meta.deleting:
            continue
        ev: list[Evidence] = []
        cause = ""
        commands: list[str] = []
        fix = ""
        validation = pool.condition("ValidationSucceeded")
        ncr = pool.condition("NodeClassReady")
        nc = snap.index.nodeclass.get(pool.node_class)
        missing = classes_known and pool.node_class_kind == "EC2NodeClass" and nc is None
        if validation is not None and validation.status == "False":
            ev.append(_cond(snap, pool, validation))
            cause = f"spec failed validation ({validation.reason}: {short(validation.message, 160)})"
            fix = "Correct the NodePool spec field the validation message names."
            commands.append(f"kubectl edit nodepool {pool.name}")
        if ncr is not None and ncr.status == "False" and ncr.reason in ("NodeClassNotFound", "NodeClassTerminating"):
            ev.append(_cond(snap, pool, ncr))
            cause = cause or (f"{pool.node_class_kind} {pool.node_class} "
                              + ("not found" if ncr.reason == "NodeClassNotFound" else "is being deleted"))
        elif ncr is not None and ncr.status == "False" and not missing:
            if nc is not None and nodeclass_failing(snap, nc):
                pass  # GT101-GT103 report the class with this pool as related
            elif nc is None and not classes_known:
                ev.append(_cond(snap, pool, ncr))
                ev.append(Evidence.absence(None, f"{pool.node_class_kind} {pool.node_class}",
                                           note=f"could not read it ({snap.status('ec2nodeclasses').reason()})"))
                cause = cause or f"its NodeClass {pool.node_class} is not ready ({short(ncr.message, 160)})"
            elif nc is not None:
                ev.append(_cond(snap, pool, ncr))
                ready = nc.condition("Ready")
                if ready is not None:
                    ev.append(Evidence.condition(nc.ref, ready.as_dict(), snap.age(ready.last_transition)))
                cause = cause or f"NodeClassReady=False ({ncr.reason}: {short(ncr.message, 160)})"
                commands.append(f"kubectl describe ec2nodeclass {nc.name}")
        if missing:
            ev.append(Evidence.field(pool.ref, "spec.template.spec.nodeClassRef",
                                     {"kind": pool.node_class_kind, "name": pool.node_class}))
            ev.append(Evidence.absence(None, f"EC2NodeClass {pool.node_class}",
                                       note="no such EC2NodeClass in the cluster"
                                            + (f" (existing: {', '.join(sorted(snap.index.nodeclass))})"
                                               if snap.index.nodeclass else "")))
            cause = cause or f"EC2NodeClass {pool.node_class or '(empty name)'} does not exist"
        if (ncr is not None and ncr.status == "False" and ncr.reason in ("NodeClassNotFound", "NodeClassTerminating")) \
                or missing:
            fix = (fix + " " if fix else "") + (
                f"Create EC2NodeClass {pool.node_class} or point spec.template.spec.nodeClassRef at an existing "
                "class; a NodePool without a Ready NodeClass launches nothing.")
            commands += ["kubectl get ec2nodeclasses",
                         f"kubectl patch nodepool {pool.name} --type merge -p "
                         "'{\"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\","
                         "\"kind\":\"EC2NodeClass\",\"name\":\"<existing-class>\"}}}}}'"]
        if not cause:
            ready = pool.condition("Ready")
            if ready is None or ready.status != "False" or (ncr is not None and ncr.status == "False"):
                continue
            # Ready=False with neither known dependent False: show what Karpenter says.
            ev.append(_cond(snap, pool, ready))
            cause = f"Ready=False ({ready.reason}: {short(ready.message, 160)})"
            commands.append(f"kubectl describe nodepool {pool.name}")
        pods = dependent_pods(snap, [pool]) if snap.status("pods").state.usable else []
        ev.extend(nothing_happens_evidence(snap, [pool], pods))
        yield Finding(
            subject=pool.ref,
            title=f"NodePool {pool.name} not ready: {cause}"
                  + (f" ({len(pods)} GPU pod(s) pending on it)" if pods else ""),
            evidence=tuple(ev),
            remediation=Remediation(fix or "Read the NodePool's conditions and fix what they name.",
                                    tuple(dict.fromkeys(commands))),
            related=tuple(p.ref for p in pods) + ((nc.ref,) if nc is not None else ()),
        )


def _cond(snap: Snapshot, pool: NodePool, c: Condition) -> Evidence:
    age = snap.age(c.last_transition)
    return Evidence.condition(pool.ref, c.as_dict() | {"message": short(c.message)}, age,
                              note=f"for {human_age(age)}" if age is not None else "")
