"""An EC2NodeClass that is not Ready for a reason other than its subnet/security-group selectors."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.facts.nodeclass_health import (
    dependent_pods,
    nothing_happens_evidence,
    other_failures,
    pool_evidence,
    pools_using,
    short,
    transition_event,
)
from diagnostics.records import Condition, NodeClass
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import human_age

_CONTROLLER_ROLE = ("kubectl get sa -A -l app.kubernetes.io/name=karpenter "
                    "-o jsonpath='{..metadata.annotations.eks\\.amazonaws\\.com/role-arn}'")


@check(code="GT103", slug="nodeclass-not-ready", title="EC2NodeClasses are Ready",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("ec2nodeclasses",), optional=("nodepools", "nodeclaims", "pods", "events"))
def nodeclass_not_ready(snap: Snapshot) -> Iterator[Finding | int]:
    """An EC2NodeClass is not Ready: AMIs, instance profile, validation, placement group or reservations.

    Why it matters:
    A NodeClass that is not Ready makes every NodePool using it not Ready, and Karpenter v1
    skips those pools: no NodeClaim, no launch error, pending pods only show kube-scheduler's
    event. `ValidationSucceeded=False` with `DependenciesNotReady` is only an echo of another
    condition; the real cause is the other False condition named here.

    Fix:
    Depends on the condition: an AMI selector that matches an existing AMI (or a valid alias
    such as `al2023@latest`), a node role that exists, IAM permissions for the Karpenter
    controller (`ec2:CreateFleet`, `ec2:CreateLaunchTemplate`, `ec2:RunInstances`), an
    existing placement group or capacity reservation.
    """
    for nc in snap.ec2nodeclasses:
        yield 1
        failures = other_failures(snap, nc)
        if not failures:
            continue
        pools = pools_using(snap, nc)
        pods = dependent_pods(snap, pools) if snap.status("pods").state.usable else []
        ev: list[Evidence] = []
        commands: list[str] = []
        texts: list[str] = []
        for c in failures:
            ev.append(Evidence.condition(nc.ref, c.as_dict() | {"message": short(c.message)},
                                         snap.age(c.last_transition),
                                         note=f"for {human_age(snap.age(c.last_transition))}"
                                         if c.last_transition else ""))
            ev.extend(transition_event(snap, nc, c.type))
            text, cmds, more = _advice(nc, c)
            texts.append(text)
            commands.extend(cmds)
            ev.extend(more)
        ready = nc.condition("Ready")
        if ready is not None and ready.status == "False" and ready not in failures:
            ev.append(Evidence.condition(nc.ref, ready.as_dict(), snap.age(ready.last_transition)))
        ev.extend(pool_evidence(snap, pools))
        ev.extend(nothing_happens_evidence(snap, pools, pods))
        first = failures[0]
        cause = f"{first.type}={first.status} ({first.reason}" + (f": {short(first.message, 120)})" if first.message
                                                                  else ")")
        more_n = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        impact = f": NodePool {', '.join(p.name for p in pools)} cannot launch nodes" if pools else ""
        commands.append(f"kubectl describe ec2nodeclass {nc.name}")
        yield Finding(
            subject=nc.ref,
            title=f"EC2NodeClass {nc.name} not ready: {cause}{more_n}{impact}",
            evidence=tuple(ev),
            remediation=Remediation(" ".join(dict.fromkeys(texts)), tuple(dict.fromkeys(commands))),
            related=tuple(p.ref for p in pools) + tuple(p.ref for p in pods),
        )


def _advice(nc: NodeClass, c: Condition) -> tuple[str, list[str], list[Evidence]]:
    """(fix sentence, commands, extra evidence) for one failing condition."""
    if c.type == "AMIsReady":
        terms = [dict(t) for t in nc.ami_terms]
        ev = [Evidence.field(nc.ref, "spec.amiSelectorTerms", terms or "none")]
        if c.reason == "UnsupportedAlias":
            return ("Use a supported alias `family@version` (al2, al2023, bottlerocket, windows2019, windows2022; "
                    "version `latest` or a release such as `v20250801`); GPU instances get the NVIDIA variant "
                    "of the alias automatically.",
                    [f"kubectl patch ec2nodeclass {nc.name} --type merge "
                     "-p '{\"spec\":{\"amiSelectorTerms\":[{\"alias\":\"al2023@latest\"}]}}'"], ev)
        return ("Make spec.amiSelectorTerms match an AMI this account can use (check id, name pattern, owner, "
                "tags); for GPU nodes it must be an accelerated (NVIDIA) AMI.", _ami_commands(terms), ev)
    if c.type == "InstanceProfileReady":
        cmds: list[str] = []
        ev = []
        if nc.role:
            ev.append(Evidence.field(nc.ref, "spec.role", nc.role))
            cmds += [f"aws iam get-role --role-name {shlex.quote(nc.role)}",
                     f"aws iam list-instance-profiles-for-role --role-name {shlex.quote(nc.role)}"]
        if nc.spec_instance_profile:
            ev.append(Evidence.field(nc.ref, "spec.instanceProfile", nc.spec_instance_profile))
            profile = shlex.quote(nc.spec_instance_profile)
            cmds.append(f"aws iam get-instance-profile --instance-profile-name {profile}")
        return ("Make sure the node role / instance profile exists and the Karpenter controller may manage "
                "instance profiles (iam:CreateInstanceProfile, iam:AddRoleToInstanceProfile, iam:TagInstanceProfile, "
                "iam:GetInstanceProfile, iam:PassRole on the node role).", cmds, ev)
    if c.type == "ValidationSucceeded":
        if c.reason.endswith("AuthCheckFailed"):
            action = {"CreateFleetAuthCheckFailed": "ec2:CreateFleet",
                      "CreateLaunchTemplateAuthCheckFailed": "ec2:CreateLaunchTemplate",
                      "RunInstancesAuthCheckFailed": "ec2:RunInstances"}.get(c.reason, "ec2:CreateFleet")
            return (f"The Karpenter controller's IAM role is not allowed to call {action} (dry-run check failed): "
                    "add the permission (and the request-tag conditions the Karpenter policy uses) to the "
                    "controller role, or remove the SCP / permission boundary that denies it.",
                    [_CONTROLLER_ROLE,
                     "aws iam simulate-principal-policy --policy-source-arn <controller-role-arn> "
                     "--action-names ec2:CreateFleet ec2:CreateLaunchTemplate ec2:RunInstances"], [])
        if c.reason == "ClusterCIDRResolutionFailed":
            return ("Karpenter could not read the cluster's service CIDR (AL2023 needs it): allow "
                    "eks:DescribeCluster for the controller role.",
                    ["aws eks describe-cluster --name <cluster> --query cluster.kubernetesNetworkConfig",
                     _CONTROLLER_ROLE], [])
        if c.reason == "TagValidationFailed":
            return ("spec.tags uses a key Karpenter reserves (kubernetes.io/cluster/*, karpenter.sh/nodepool, "
                    "karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass, eks:eks-cluster-name): remove it.",
                    [f"kubectl edit ec2nodeclass {nc.name}"],
                    [Evidence.field(nc.ref, "spec.tags", dict(nc.tags))])
        return (f"Fix the EC2NodeClass spec the validation rejects ({c.reason}).",
                [f"kubectl edit ec2nodeclass {nc.name}"], [])
    if c.type == "PlacementGroupReady":
        sel = nc.placement_group_selector
        cmd = ("aws ec2 describe-placement-groups " + (f"--group-ids {shlex.quote(str(sel['id']))}" if sel.get("id")
               else f"--group-names {shlex.quote(str(sel.get('name', '<name>')))}"))
        return ("Create the placement group or fix spec.placementGroupSelector.", [cmd],
                [Evidence.field(nc.ref, "spec.placementGroupSelector", dict(sel))])
    if c.type == "CapacityReservationsReady":
        terms = [dict(t) for t in nc.capacity_reservation_terms]
        ids = [str(t["id"]) for t in terms if t.get("id")]
        cmd = ("aws ec2 describe-capacity-reservations"
               + (f" --capacity-reservation-ids {' '.join(shlex.quote(i) for i in ids)}" if ids else "")
               + " --query 'CapacityReservations[].{id:CapacityReservationId,type:InstanceType,az:AvailabilityZone,"
                 "state:State,available:AvailableInstanceCount}'")
        return ("Point capacityReservationSelectorTerms at active reservations this account owns or is shared.",
                [cmd], [Evidence.field(nc.ref, "spec.capacityReservationSelectorTerms", terms or "none")])
    return ("Read the Ready message and the Karpenter controller log for this EC2NodeClass.",
            [f"kubectl get ec2nodeclass {nc.name} -o yaml"], [])


def _ami_commands(terms: list[dict[str, Any]]) -> list[str]:
    out = []
    for t in terms:
        if t.get("id"):
            out.append(f"aws ec2 describe-images --image-ids {shlex.quote(str(t['id']))}")
        elif t.get("ssmParameter"):
            out.append(f"aws ssm get-parameter --name {shlex.quote(str(t['ssmParameter']))} --query Parameter.Value")
        elif t.get("alias"):
            out.append("aws ssm get-parameters-by-path --path /aws/service/eks/optimized-ami/ --recursive "
                       "--query 'Parameters[?contains(Name, `nvidia`)].Name'")
        else:
            filters = []
            if t.get("name"):
                filters.append(f"Name=name,Values={t['name']}")
            for k, v in (t.get("tags") or {}).items():
                filters.append(f"Name=tag-key,Values={k}" if str(v) == "*" else f"Name=tag:{k},Values={v}")
            owner = f" --owners {shlex.quote(str(t['owner']))}" if t.get("owner") else ""
            out.append(f"aws ec2 describe-images{owner} --filters {' '.join(shlex.quote(f) for f in filters)} "
                       "--query 'Images[].{id:ImageId,name:Name,created:CreationDate}'")
    return out
