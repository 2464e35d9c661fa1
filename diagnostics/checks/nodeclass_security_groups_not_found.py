"""An EC2NodeClass whose securityGroupSelectorTerms match no security group: its NodePools launch nothing."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.facts.aws_facts import selector_aws_evidence
from diagnostics.model import Finding, Severity
from diagnostics.facts.nodeclass_health import selector_failure, selector_finding
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot


@check(code="GT102", slug="nodeclass-security-groups-not-found",
       title="EC2NodeClass security group selectors match security groups",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("ec2nodeclasses",),
       optional=("nodepools", "nodeclaims", "pods", "events", "aws"))
def nodeclass_security_groups_not_found(snap: Snapshot) -> Iterator[Finding | int]:
    """An EC2NodeClass's `securityGroupSelectorTerms` match nothing (`SecurityGroupsReady=False`).

    Why it matters:
    Karpenter cannot launch an instance without a security group, so the NodeClass and its
    NodePools go `Ready=False` and the provisioner skips them: no NodeClaim, no Karpenter event,
    pending GPU pods only show kube-scheduler's `FailedScheduling`.

    Fix:
    Run `aws ec2 describe-security-groups` with the selector's tags, ids or names. Tag the
    cluster/node security group (e.g. `karpenter.sh/discovery=<cluster>`) or correct the
    selector. `status.securityGroups` fills in on the next reconcile.
    """
    for nc in snap.ec2nodeclasses:
        yield 1
        failure = selector_failure(snap, nc, "securityGroups")
        if failure is not None:
            yield selector_finding(snap, failure, extra=selector_aws_evidence(snap, nc, "securityGroups"))
