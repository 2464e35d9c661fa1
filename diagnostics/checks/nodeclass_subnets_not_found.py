"""An EC2NodeClass whose subnetSelectorTerms match no subnet: its NodePools launch nothing."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.facts.aws_facts import selector_aws_evidence
from diagnostics.model import Finding, Severity
from diagnostics.facts.nodeclass_health import selector_failure, selector_finding
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot


@check(code="GT101", slug="nodeclass-subnets-not-found", title="EC2NodeClass subnet selectors match subnets",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("ec2nodeclasses",),
       optional=("nodepools", "nodeclaims", "pods", "events", "aws"))
def nodeclass_subnets_not_found(snap: Snapshot) -> Iterator[Finding | int]:
    """An EC2NodeClass's `subnetSelectorTerms` match no subnet (`SubnetsReady=False`, `SubnetsNotFound`).

    Why it matters:
    With no subnet there is no zone to launch into. The NodeClass and every NodePool using it
    go `Ready=False` and, in Karpenter v1, the provisioner silently skips those NodePools: no
    NodeClaim is created, no launch error appears, and pending GPU pods only show
    kube-scheduler's `FailedScheduling`. It looks like "nothing happens".

    Fix:
    Run `aws ec2 describe-subnets` with the selector's tags or ids. Tag the intended private
    subnets (e.g. `karpenter.sh/discovery=<cluster>`) or correct the selector (typo, wrong
    cluster name, deleted subnet id). `status.subnets` fills in on the next reconcile.
    """
    for nc in snap.ec2nodeclasses:
        yield 1
        failure = selector_failure(snap, nc, "subnets")
        if failure is not None:
            yield selector_finding(snap, failure, extra=selector_aws_evidence(snap, nc, "subnets"))
