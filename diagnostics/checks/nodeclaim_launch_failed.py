"""A NodeClaim could not launch its instance: the cloud provider refused it for a reason other than capacity."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.facts.node_health import claim_age_from, clip, nominations, stamp, waiting_pods
from diagnostics.records import NodeClaim, Pod
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import human_age

LAUNCH_TIMEOUT_SECONDS = 300.0
"""Karpenter deletes a NodeClaim whose Launched condition is not True 5 min after it was set (liveness.go)."""
AWAITING_GRACE_SECONDS = 60.0
"""`Launched=Unknown AwaitingReconciliation` younger than this is a claim Karpenter has not reached yet."""

# Capacity-class failures belong to spot-capacity-shortage: the claim is deleted at once and retried elsewhere.
_ICE_MARKERS = ("insufficient capacity", "insufficientinstancecapacity", "insufficientcapacityerror",
                "unfulfillablecapacity", "all requested instance types were unavailable")


@dataclass(frozen=True, slots=True)
class LaunchFix:
    cause: str
    fix: str
    commands: tuple[str, ...] = ()
    """Templates: {claim} {nodeclass} {pool} {subnet_ids} {sg_ids} {ami_ids}."""


# Launched reasons (aws pkg/errors ToReasonMessage, core lifecycle/launch.go, aws cloudprovider.Create).
FIXES: dict[str, LaunchFix] = {
    "SecurityGroupSubnetVPCMismatch": LaunchFix(
        "the EC2NodeClass selects security groups and subnets in different VPCs",
        "Make securityGroupSelectorTerms and subnetSelectorTerms match resources of the cluster VPC.",
        ("kubectl get ec2nodeclass {nodeclass} -o jsonpath='{{.status.subnets}}{{\"\\n\"}}{{.status.securityGroups}}'",
         "aws ec2 describe-subnets --subnet-ids {subnet_ids} --query 'Subnets[].[SubnetId,VpcId]' --output text",
         "aws ec2 describe-security-groups --group-ids {sg_ids} --query 'SecurityGroups[].[GroupId,VpcId]' "
         "--output text")),
    "AMINotFound": LaunchFix(
        "the AMI does not exist or the account may not use it",
        "Fix amiSelectorTerms (or share/restore the AMI); for GPUs use an alias such as al2023@latest, which picks "
        "the NVIDIA variant for GPU instance types.",
        ("kubectl get ec2nodeclass {nodeclass} -o jsonpath='{{.spec.amiSelectorTerms}}{{\"\\n\"}}{{.status.amis}}'",
         "aws ec2 describe-images --image-ids {ami_ids}")),
    "AMIAuthorizationFailure": LaunchFix(
        "the Karpenter controller role is not authorized to use the AMI",
        "Grant the controller role ec2:RunInstances/CreateFleet on the image (or share the AMI with the account).",
        ("kubectl get ec2nodeclass {nodeclass} -o jsonpath='{{.status.amis}}'",)),
    "SCPDeny": LaunchFix(
        "an AWS Organizations service control policy denies the launch (an explicit deny no IAM policy of this "
        "account can override)",
        "Ask the organization's administrators (management account) to exempt the Karpenter controller role, or to "
        "allow the denied action, instance type or region in the SCP; editing the controller role changes nothing. "
        "Meanwhile restrict the NodePool to what the SCP allows (instance types, regions, tags it requires).",
        ("aws sts decode-authorization-message --encoded-message ENCODED_MESSAGE --query DecodedMessage --output text",
         "aws organizations list-policies-for-target --target-id ACCOUNT_ID --filter SERVICE_CONTROL_POLICY")),
    "BoundaryDeny": LaunchFix(
        "the Karpenter controller role's permissions boundary denies the launch",
        "Allow the denied action in the role's permissions boundary (adding it to the role's policies is not enough).",
        ("aws iam get-role --role-name KARPENTER_CONTROLLER_ROLE --query Role.PermissionsBoundary",)),
    "PassRoleDenied": LaunchFix(
        "the Karpenter controller may not pass the node role (iam:PassRole) to the instance profile",
        "Allow iam:PassRole on the node role (the EC2NodeClass spec.role) for the Karpenter controller role.",
        ("kubectl get ec2nodeclass {nodeclass} -o jsonpath='{{.spec.role}}{{\"\\n\"}}{{.status.instanceProfile}}'",)),
    "UnsupportedInZone": LaunchFix(
        "the instance type is not offered in the zone Karpenter picked",
        "Restrict the NodePool's topology.kubernetes.io/zone (or the EC2NodeClass subnets) to zones that offer the "
        "instance type.",
        ("aws ec2 describe-instance-type-offerings --location-type availability-zone "
         "--query 'InstanceTypeOfferings[].[InstanceType,Location]' --output text",)),
    "Unauthorized": LaunchFix(
        "the Karpenter controller's IAM role is not allowed to launch the instance (a permission its policies lack, "
        "or an explicit deny in them)",
        "Add the missing permission to the Karpenter controller role. Karpenter's condition does not name the "
        "denied action (ec2:CreateFleet, ec2:RunInstances, iam:PassRole ...): its log line 'failed launching "
        "nodeclaim' and CloudTrail do.",
        ("kubectl logs -n \"${{KARPENTER_NAMESPACE:-kube-system}}\" -l app.kubernetes.io/name=karpenter --tail=500 "
         "| grep -i 'not authorized'",
         "kubectl -n \"${{KARPENTER_NAMESPACE:-kube-system}}\" get serviceaccount karpenter -o yaml",
         "aws cloudtrail lookup-events --lookup-attributes AttributeKey=EventName,AttributeValue=CreateFleet "
         "--max-results 5")),
    "VCPULimitExceeded": LaunchFix(
        "the account's vCPU quota for this instance family is used up (G, P, Inf and Trn instances have their own "
        "quotas)",
        "Request a higher EC2 vCPU quota for the family's bucket, or allow other instance families in the NodePool.",
        ("aws service-quotas list-service-quotas --service-code ec2 --query "
         "\"Quotas[?contains(QuotaName, 'G and VT') || contains(QuotaName, 'P instances') || "
         "contains(QuotaName, 'Inf instances') || contains(QuotaName, 'Trn instances')].[QuotaName,Value]\" "
         "--output table",)),
    "SpotQuotaExceeded": LaunchFix(
        "the account's spot instance quota is used up",
        "Request a higher spot quota, or allow on-demand in the NodePool (karpenter.sh/capacity-type).",
        ("aws service-quotas list-service-quotas --service-code ec2 --query "
         "\"Quotas[?contains(QuotaName, 'Spot')].[QuotaName,Value]\" --output table",)),
    "FleetQuotaExceeded": LaunchFix(
        "the account's EC2 Fleet request quota is used up",
        "Wait for fleets to expire or request a higher quota.", ()),
    "SpotSLRCreationFailed": LaunchFix(
        "the Spot service-linked role does not exist and Karpenter may not create it",
        "Create the role once; Karpenter disables spot until it exists.",
        ("aws iam create-service-linked-role --aws-service-name spot.amazonaws.com",)),
    "InsufficientFreeAddressesInSubnet": LaunchFix(
        "the selected subnets have no free IP addresses",
        "Add subnets with free addresses to subnetSelectorTerms (or enable prefix delegation / larger subnets).",
        ("kubectl get ec2nodeclass {nodeclass} -o jsonpath='{{.status.subnets}}'",
         "aws ec2 describe-subnets --subnet-ids {subnet_ids} --query "
         "'Subnets[].[SubnetId,AvailabilityZone,AvailableIpAddressCount]' --output table")),
    "RequestLimitExceeded": LaunchFix(
        "EC2 throttled the API calls",
        "Usually transient; if it persists, find what else calls EC2 heavily in the account/region.", ()),
    "NodeClassReadinessUnknown": LaunchFix(
        "the EC2NodeClass has not been resolved yet (Ready=Unknown)",
        "Check the EC2NodeClass conditions and the Karpenter controller logs; it resolves subnets, security groups, "
        "AMIs and the instance profile before any launch.",
        ("kubectl describe ec2nodeclass {nodeclass}",
         "kubectl logs -n \"${{KARPENTER_NAMESPACE:-kube-system}}\" -l app.kubernetes.io/name=karpenter --tail=200 "
         "| grep -i {nodeclass}")),
    "SubnetResolutionFailed": LaunchFix(
        "Karpenter could not resolve the EC2NodeClass subnets",
        "Fix subnetSelectorTerms so they match tagged subnets of the cluster VPC.",
        ("kubectl describe ec2nodeclass {nodeclass}",)),
    "InstanceTypeResolutionFailed": LaunchFix(
        "Karpenter could not resolve instance types for the NodeClaim",
        "Check the NodePool requirements and the EC2NodeClass; the controller log has the error.",
        ("kubectl describe nodepool {pool}",)),
    "InstanceProfileNameInvalid": LaunchFix(
        "the instance profile in the EC2NodeClass status does not exist (deleted, or its role/instanceProfile is "
        "wrong)",
        "Fix spec.role (Karpenter creates the profile) or spec.instanceProfile so it names an existing profile.",
        ("kubectl get ec2nodeclass {nodeclass} -o jsonpath='{{.spec.role}}{{\" \"}}{{.spec.instanceProfile}}"
         "{{\" \"}}{{.status.instanceProfile}}{{\"\\n\"}}'",
         "aws iam list-instance-profiles --query 'InstanceProfiles[].[InstanceProfileName,Roles[0].RoleName]' "
         "--output table")),
    "LaunchTemplateNotFound": LaunchFix(
        "the launch template Karpenter had cached was deleted (by hand or by another tool)",
        "Karpenter re-creates its launch templates on the next attempt; if it keeps failing, find what deletes "
        "templates tagged karpenter.k8s.aws/cluster.",
        ("aws ec2 describe-launch-templates --filters Name=tag-key,Values=karpenter.k8s.aws/cluster "
         "--query 'LaunchTemplates[].LaunchTemplateName'",)),
    "InvalidAMIID": LaunchFix(
        "an AMI id in the EC2NodeClass is malformed",
        "Fix amiSelectorTerms (ids look like ami-0123456789abcdef0), or select by alias such as al2023@latest.",
        ("kubectl get ec2nodeclass {nodeclass} -o jsonpath='{{.spec.amiSelectorTerms}}'",)),
    "UserDataSizeLimitExceeded": LaunchFix(
        "the EC2NodeClass userData is over EC2's 16 KB limit",
        "Shrink spec.userData (fetch large scripts from S3 at boot instead).",
        ("kubectl get ec2nodeclass {nodeclass} -o jsonpath='{{.spec.userData}}' | wc -c",)),
    "InternalError": LaunchFix(
        "EC2 returned an internal error",
        "Usually transient: Karpenter retries. If it persists for one instance type or zone, exclude it and open "
        "an AWS support case.", ()),
    "AccountPendingVerification": LaunchFix(
        "AWS is still verifying the account for launches in this region",
        "Wait for the verification to finish (or contact AWS support); no configuration change helps.", ()),
    "FreeTierIneligible": LaunchFix(
        "the account may only launch free-tier instance types",
        "Upgrade the account's plan; GPU instance types are never free-tier.", ()),
    "AwaitingReconciliation": LaunchFix(
        "Karpenter has not attempted the launch (controller down, crash-looping or unable to reach the API)",
        "Check that the Karpenter controller runs and read its log.",
        ("kubectl get pods -n \"${{KARPENTER_NAMESPACE:-kube-system}}\" -l app.kubernetes.io/name=karpenter",
         "kubectl logs -n \"${{KARPENTER_NAMESPACE:-kube-system}}\" -l app.kubernetes.io/name=karpenter --tail=200 "
         "| grep -i {claim}")),
}

# LaunchFailed carries the raw error; these substrings identify the same causes.
_MESSAGE_HINTS = (
    ("belong to different networks", "SecurityGroupSubnetVPCMismatch"),
    ("InvalidAMIID.Malformed", "InvalidAMIID"),
    ("InvalidAMIID", "AMINotFound"),
    ("iamInstanceProfile.name is invalid", "InstanceProfileNameInvalid"),
    ("InvalidLaunchTemplateId.NotFound", "LaunchTemplateNotFound"),
    ("InvalidLaunchTemplateName.NotFound", "LaunchTemplateNotFound"),
    ("PendingVerification", "AccountPendingVerification"),
    ("no amis exist", "AMINotFound"),  # launch template resolution, v0.3x-v1.x
    ("Not authorized for images", "AMIAuthorizationFailure"),
    # The IAM evaluation says which policy type denied (AWS "not authorized" messages since 2021).
    ("explicit deny in a service control policy", "SCPDeny"),
    ("explicit deny in a permissions boundary", "BoundaryDeny"),
    ("iam:PassRole", "PassRoleDenied"),
    ("is not supported in your requested Availability Zone", "UnsupportedInZone"),
    ("UnauthorizedOperation", "Unauthorized"),
    ("AccessDenied", "Unauthorized"),
    ("not authorized", "Unauthorized"),
    ("VcpuLimitExceeded", "VCPULimitExceeded"),
    ("MaxSpotInstanceCountExceeded", "SpotQuotaExceeded"),
    ("InsufficientFreeAddressesInSubnet", "InsufficientFreeAddressesInSubnet"),
    ("RequestLimitExceeded", "RequestLimitExceeded"),
)
_UNAUTHORIZED_MESSAGES = (
    ("due to a service control policy", "SCPDeny"),
    ("due to a permission boundary", "BoundaryDeny"),
    ("explicit deny in a service control policy", "SCPDeny"),
    ("explicit deny in a permissions boundary", "BoundaryDeny"),
)
"""What Karpenter's `Unauthorized` reason carries: `User is not authorized to perform this operation due to a service
control policy` / `... due to a permission boundary` (aws/karpenter-provider-aws pkg/errors/errors.go ToReasonMessage),
or the raw AWS text on older releases."""
_GENERIC = LaunchFix(
    "the cloud provider rejected the launch",
    "Read the message and the Karpenter controller log for the failing EC2 call.",
    ("kubectl logs -n \"${{KARPENTER_NAMESPACE:-kube-system}}\" -l app.kubernetes.io/name=karpenter --tail=200 "
     "| grep -i {claim}",))


def is_capacity_error(claim: NodeClaim, snap: Snapshot) -> bool:
    """ICE and quota-class failures that Karpenter retries at once (reported by spot-capacity-shortage)."""
    launched = claim.condition("Launched")
    text = f"{launched.reason} {launched.message}".lower() if launched else ""
    if any(m in text for m in _ICE_MARKERS):
        return True
    return any(e.reason == "InsufficientCapacityError" for e in snap.index.events("NodeClaim", claim.name))


def fix_for(reason: str, message: str) -> tuple[str, LaunchFix]:
    """The known cause for a Launched reason (or, for LaunchFailed, for what its raw error says)."""
    if reason == "Unauthorized":
        # aws pkg/errors ToReasonMessage keeps the policy type of an explicit deny only in its own message.
        for needle, mapped in _UNAUTHORIZED_MESSAGES:
            if needle in message.lower():
                return mapped, FIXES[mapped]
    if reason in FIXES:
        return reason, FIXES[reason]
    for needle, mapped in _MESSAGE_HINTS:
        if needle.lower() in message.lower():
            return mapped, FIXES[mapped]
    return reason, _GENERIC


@check(code="GT301", slug="nodeclaim-launch-failed", title="NodeClaims launch their instances",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("nodeclaims",), optional=("events", "pods", "ec2nodeclasses", "nodepools"))
def nodeclaim_launch_failed(snap: Snapshot) -> Iterator[Finding | int]:
    """A NodeClaim's `Launched` condition is not True because the cloud provider refused the instance.

    Why it matters:
    The pods that triggered it stay Pending. Karpenter deletes the claim after the 5 minute launch
    timeout and creates another one that fails the same way, so the loop never ends by itself.
    (Capacity shortages - InsufficientCapacityError - are reported by spot-capacity-shortage.)

    Fix:
    Act on the reason: security groups and subnets in different VPCs, a missing or unauthorized
    AMI, missing IAM permissions on the Karpenter controller role, EC2 vCPU quota for the G/P
    family, or an EC2NodeClass that is not resolved yet.
    """
    nominated = nominations(snap) if snap.status("events").state.usable else {}
    for claim in snap.nodeclaims:
        launched = claim.condition("Launched")
        if launched is None:
            continue
        yield 1
        if launched.status == "True" or is_capacity_error(claim, snap):
            continue
        age, _ = claim_age_from(snap, claim, "Launched")
        reason = launched.reason or "Unknown"
        if reason == "AwaitingReconciliation" and (age is None or age < AWAITING_GRACE_SECONDS):
            continue
        yield _finding(snap, claim, launched.as_dict(), age, waiting_pods(snap, claim, nominated))


def _finding(snap: Snapshot, claim: NodeClaim, launched: dict[str, str], age: float | None,
             waiting: list[Pod]) -> Finding:
    reason, message = launched["reason"] or "Unknown", launched["message"]
    key, fix = fix_for(reason, message)
    ev: list[Evidence] = [Evidence.condition(claim.ref, {**launched, "message": clip(message)}, age,
                                             note=f"not launched for {human_age(age)}")]
    if age is not None:
        left = LAUNCH_TIMEOUT_SECONDS - age
        ev.append(Evidence.field(
            claim.ref, "launch timeout", f"{human_age(age)} of {human_age(LAUNCH_TIMEOUT_SECONDS)}",
            note=(f"Karpenter deletes it in {human_age(left)} (launch_timeout) and retries with a new NodeClaim"
                  if left > 0 else
                  f"{human_age(-left)} past the timeout and not deleted: the Karpenter controller is not acting"
                  + (f" (deleting since {stamp(claim.meta.deleting)})" if claim.meta.deleting else ""))))
    for e in reversed(snap.index.events("NodeClaim", claim.name)):
        if e.type == "Warning" or e.reason == "Launched":
            ev.append(Evidence.event(claim.ref, e.reason, clip(e.message), e.count, snap.age(e.last_seen),
                                     type_=e.type))
            break
    nodeclass = snap.index.nodeclass.get(claim.node_class)
    if nodeclass is not None:
        ready = nodeclass.condition("Ready")
        if ready is not None and ready.status != "True":
            ev.append(Evidence.condition(nodeclass.ref, {**ready.as_dict(), "message": clip(ready.message)},
                                         snap.age(ready.last_transition)))
    pool = snap.index.nodepool.get(claim.nodepool)
    if pool is not None:
        health = pool.condition("NodeRegistrationHealthy")
        if health is not None and health.status == "False":
            ev.append(Evidence.condition(pool.ref, {**health.as_dict(), "message": clip(health.message)},
                                         snap.age(health.last_transition),
                                         note="at least half of the pool's recent launches failed"))
    if waiting:
        ev.append(Evidence.field(claim.ref, "pods waiting for it", [f"{p.namespace}/{p.name}" for p in waiting[:8]],
                                 note=f"{len(waiting)} pending pod(s) nominated to this NodeClaim"))
    subnets = [str(x.get("id")) for x in (nodeclass.subnets if nodeclass else ()) if x.get("id")]
    groups = [str(x.get("id")) for x in (nodeclass.security_groups if nodeclass else ()) if x.get("id")]
    amis = [str(x.get("id")) for x in (nodeclass.amis if nodeclass else ()) if x.get("id")]
    fmt = {"claim": claim.name, "nodeclass": claim.node_class or "<ec2nodeclass>",
           "pool": claim.nodepool or "<nodepool>", "subnet_ids": " ".join(subnets) or "<subnet-ids>",
           "sg_ids": " ".join(groups) or "<sg-ids>", "ami_ids": " ".join(amis) or "<ami-id>"}
    commands = tuple(c.format(**fmt) for c in fix.commands) + (f"kubectl describe nodeclaim {claim.name}",)
    shown = reason if key == reason else f"{reason} ({key})"
    # The message adds to a known cause only where the reason is generic; an unknown reason is all we have.
    detail = f": {clip(message, 160)}" if message and (reason in ("LaunchFailed", "Unknown") or fix is _GENERIC) \
        else ""
    title = (f"NodeClaim {claim.name}"
             + (f" ({claim.instance_type})" if claim.instance_type else "")
             + f" not launched for {human_age(age)}: {shown} - {fix.cause}{detail}")
    related = tuple(r for r in (pool.ref if pool else None, nodeclass.ref if nodeclass else None) if r is not None)
    text = fix.fix + (f" {len(waiting)} pending pod(s) wait for this NodeClaim." if waiting else "")
    if age is not None and age > LAUNCH_TIMEOUT_SECONDS:
        text += " Karpenter has not deleted it after the 5 minute launch timeout: check that its controller runs."
    return Finding(subject=claim.ref, title=title, evidence=tuple(ev), remediation=Remediation(text, commands),
                   related=related + tuple(p.ref for p in waiting))

