"""A NodeClaim's instance is running but never joined the cluster as a Node."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.facts.provider import facts
from diagnostics.facts.node_health import claim_age_from, clip, instance_id, nominations, stamp, waiting_pods
from diagnostics.records import Condition, Node, NodeClaim, NodeClass, Pod, accelerator_total
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import human_age

REGISTRATION_TIMEOUT_SECONDS = 900.0
"""Karpenter deletes a NodeClaim not Registered 15 min after the condition was set (liveness.go)."""
REGISTRATION_GRACE_SECONDS = 120.0
"""A GPU instance needs a couple of minutes to boot and join; younger claims are not reported."""
REGISTRATION_WARN_SECONDS = 300.0
"""Until 5 min after launch it is a warning: GPU AMIs (driver load) can be slow to join."""


@check(code="GT302", slug="nodeclaim-not-registered", title="Launched instances join the cluster",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("nodeclaims",),
       optional=("nodes", "events", "pods", "ec2nodeclasses", "nodepools"))
def nodeclaim_not_registered(snap: Snapshot) -> Iterator[Finding | int]:
    """A NodeClaim is `Launched=True` but `Registered` is not True: its Node never appeared.

    Why it matters:
    You pay for the GPU instance while no pod can use it. After 15 minutes Karpenter deletes it
    (`registration_timeout`) and launches another one that fails the same way, so pending GPU
    pods wait forever and the NodePool reports `NodeRegistrationHealthy=False`.

    Fix:
    Read the instance console log for the bootstrap error. The usual causes: the node IAM role
    is not allowed into the cluster (EKS access entry or aws-auth), security groups block the
    kubelet from the API server, broken user data, or a GPU AMI (AL2023 NVIDIA, Bottlerocket
    NVIDIA) that fails to bootstrap on this instance type.
    """
    nominated = nominations(snap) if snap.status("events").state.usable else {}
    nodes_by_provider = _nodes_by_provider(snap)
    launched_claims, unregistered = _unregistered(snap)
    yield launched_claims
    for claim, registered in unregistered:
        booting, launched_at = claim_age_from(snap, claim, "Launched")
        if booting is not None and booting < REGISTRATION_GRACE_SECONDS:
            continue
        clock, _ = claim_age_from(snap, claim, "Registered", "Launched")
        node = nodes_by_provider.get(claim.provider_id) if claim.provider_id else None
        nodeclass = snap.index.nodeclass.get(claim.node_class)
        ev: list[Evidence] = []
        if registered is not None:
            ev.append(Evidence.condition(claim.ref, {**registered.as_dict(), "message": clip(registered.message)},
                                         clock, note=f"launched {human_age(booting)} ago ({stamp(launched_at)})"))
        else:
            ev.append(Evidence.absence(claim.ref, "status.conditions[Registered]",
                                       note=f"launched {human_age(booting)} ago ({stamp(launched_at)})"))
        if clock is not None:
            left = REGISTRATION_TIMEOUT_SECONDS - clock
            ev.append(Evidence.field(
                claim.ref, "registration timeout", f"{human_age(clock)} of {human_age(REGISTRATION_TIMEOUT_SECONDS)}",
                note=(f"Karpenter deletes it in {human_age(left)} (registration_timeout) and launches another"
                      if left > 0 else f"{human_age(-left)} past the timeout: the claim is being replaced"
                      if claim.meta.deleting else f"{human_age(-left)} past the timeout and not deleted: "
                      "is the Karpenter controller running?")))
        ev.append(Evidence.field(claim.ref, "status.providerID", claim.provider_id or "(none)",
                                 note=" ".join(x for x in (claim.instance_type, claim.zone, claim.capacity_type) if x)))
        if node is not None:
            ev.append(Evidence.field(node.ref, "spec.providerID", node.provider_id,
                                     note="a Node with this instance exists, but Karpenter has not registered it"))
            for e in snap.index.events("Node", node.name):
                if e.reason == "UnregisteredTaintMissing":
                    ev.append(Evidence.event(node.ref, e.reason, clip(e.message), e.count, snap.age(e.last_seen),
                                             type_=e.type))
        elif snap.status("nodes").state.usable:
            ev.append(Evidence.absence(None, f"Node with spec.providerID {claim.provider_id or '?'}",
                                       note="the kubelet never registered with the API server"))
        family, ami = _ami(nodeclass)
        if nodeclass is not None:
            ev.append(Evidence.field(nodeclass.ref, "spec", {"role": nodeclass.role or "?", "ami": ami or "?"},
                                     note="the node role must be allowed into the cluster; the AMI must bootstrap"))
        pool = snap.index.nodepool.get(claim.nodepool)
        if pool is not None:
            health = pool.condition("NodeRegistrationHealthy")
            if health is not None and health.status == "False":
                ev.append(Evidence.condition(pool.ref, {**health.as_dict(), "message": clip(health.message)},
                                             snap.age(health.last_transition),
                                             note="at least half of the pool's recent nodes failed to register"))
        waiting = waiting_pods(snap, claim, nominated)
        if waiting:
            ev.append(Evidence.field(claim.ref, "pods waiting for it", [f"{p.namespace}/{p.name}" for p in waiting[:8]],
                                     note=f"{len(waiting)} pending pod(s) nominated to this NodeClaim"))
        gpu = (accelerator_total(claim.requests) > 0 or accelerator_total(claim.capacity) > 0
               or bool(claim.meta.labels.get("karpenter.k8s.aws/instance-gpu-count")))
        severity = Severity.WARNING if booting is not None and booting < REGISTRATION_WARN_SECONDS else None
        reason = registered.reason if registered is not None and registered.reason else "Registered missing"
        what = ("its Node exists but is not registered by Karpenter" if node is not None
                else "no Node joined the cluster")
        ami_kind = " ".join(x for x in (family, "GPU" if gpu else "") if x)
        hint = ("registration hook or missing karpenter.sh/unregistered taint?" if node is not None
                else f"{ami_kind + ' ' if ami_kind else ''}AMI bootstrap, node role or security groups?")
        title = (f"NodeClaim {claim.name}" + (f" ({claim.instance_type})" if claim.instance_type else "")
                 + f" launched {human_age(booting)} ago but {what} ({reason}): {hint}")
        yield Finding(subject=claim.ref, title=title, evidence=tuple(ev),
                      remediation=_remediation(claim, nodeclass, family, node is not None, waiting),
                      severity=severity,
                      related=tuple(r for r in (pool.ref if pool else None, nodeclass.ref if nodeclass else None,
                                                node.ref if node else None) if r is not None)
                      + tuple(p.ref for p in waiting))


@facts(reads=("nodes",))
def _nodes_by_provider(snap: Snapshot) -> dict[str, Node]:
    return {n.provider_id: n for n in snap.nodes if n.provider_id}


@facts(reads=("nodeclaims",))
def _unregistered(snap: Snapshot) -> tuple[int, list[tuple[NodeClaim, Condition | None]]]:
    """How many claims are Launched=True, and those of them not Registered=True (with that condition).

    Ages are looked at per snapshot by the caller.
    """
    launched_claims = 0
    out: list[tuple[NodeClaim, Condition | None]] = []
    for claim in snap.nodeclaims:
        launched = claim.condition("Launched")
        if launched is None or launched.status != "True":
            continue
        launched_claims += 1
        registered = claim.condition("Registered")
        if registered is None or registered.status != "True":
            out.append((claim, registered))
    return launched_claims, out


def _ami(nodeclass: NodeClass | None) -> tuple[str, str]:
    """(family, what the AMI is) from amiSelectorTerms aliases and resolved AMI names."""
    if nodeclass is None:
        return "", ""
    alias = next((str(t.get("alias")) for t in nodeclass.ami_terms if t.get("alias")), "")
    names = [str(a.get("name", "")) for a in nodeclass.amis]
    shown = alias or (names[0] if names else "") or (str(nodeclass.ami_terms[0]) if nodeclass.ami_terms else "")
    text = (alias + " " + " ".join(names)).lower()
    family = ("Bottlerocket" if "bottlerocket" in text else "AL2023" if "al2023" in text
              else "AL2" if "al2" in text else "")
    return family, shown


def _remediation(claim: NodeClaim, nodeclass: NodeClass | None, family: str, node_exists: bool,
                 waiting: list[Pod]) -> Remediation:
    iid = instance_id(claim.provider_id)
    role = nodeclass.role if nodeclass and nodeclass.role else "<node-role>"
    commands: list[str] = []
    if iid:
        commands += [f"aws ec2 get-console-output --instance-id {iid} --latest --output text | tail -60",
                     f"aws ec2 describe-instances --instance-ids {iid} --query 'Reservations[].Instances[]."
                     f"{{State:State.Name,Image:ImageId,Profile:IamInstanceProfile.Arn,SGs:SecurityGroups}}'"]
    commands += [f"aws eks list-access-entries --cluster-name <cluster> --output text | grep {role}",
                 "kubectl -n kube-system get configmap aws-auth -o yaml",
                 f"kubectl describe nodeclaim {claim.name}"]
    if nodeclass is not None:
        commands.append(f"kubectl get ec2nodeclass {nodeclass.name} -o yaml")
    if node_exists:
        text = ("A Node for this instance exists but Karpenter did not register it: check the NodeClaim's "
                "Registered message (registration hooks, duplicate nodes) and whether the Node lacks the "
                "karpenter.sh/unregistered taint (custom bootstrap that overrides kubelet taints).")
    else:
        gpu = {"AL2023": "AL2023: look for nodeadm errors (NodeConfig in userData, cluster endpoint/CA) and NVIDIA "
                         "driver load errors for this instance type; ",
               "Bottlerocket": "Bottlerocket: the NVIDIA variant (aws-k8s-*-nvidia) must support this instance type "
                               "and the settings TOML in userData must be valid; "}.get(family, "")
        text = ("The instance runs but its kubelet never joined. Read the console log first. Then: " + gpu
                + f"the node role {role} needs an EKS access entry of type EC2_LINUX (or an aws-auth mapRoles "
                  "entry); the node security group must reach the API server on 443 and accept the control plane "
                  "on 10250; custom userData must not break the bootstrap.")
    if waiting:
        text += f" {len(waiting)} pending pod(s) wait for this NodeClaim."
    return Remediation(text, tuple(commands))

