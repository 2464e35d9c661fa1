"""Real upstream objects and texts the accelerator-stack checks must recognise (audit of #19).

Each case is shaped from the upstream source named in its docstring: what a real controller writes,
not what the demo simulator writes.
"""

from __future__ import annotations

import pytest

from diagnostics import run
from tests.builders import snapshot
from tests.diagnostics.checks.test_nodeclaim_launch_failed import POOL_AND_CLASS, claim


@pytest.mark.parametrize("message, cause, wrong", [
    ("User is not authorized to perform this operation due to a service control policy",
     "an AWS Organizations service control policy denies the launch", "Add the missing EC2 permission"),
    ("User is not authorized to perform this operation due to a permission boundary",
     "the Karpenter controller role's permissions boundary denies the launch", "Add the missing EC2 permission"),
])
def test_karpenter_unauthorized_reason_says_which_policy_denied(message: str, cause: str, wrong: str) -> None:
    """aws/karpenter-provider-aws pkg/errors ToReasonMessage: an SCP or boundary deny becomes Launched reason
    `Unauthorized` with its own message (core lifecycle/launch.go SetUnknownWithReason), never the raw AWS text."""
    c = claim("gpu-inference-z8v3q", "2026-08-21T09:58:00Z",
              f'{{type: Launched, status: Unknown, reason: Unauthorized, message: "{message}", '
              f'lastTransitionTime: "2026-08-21T09:58:00Z"}}')
    (f,) = run(snapshot(POOL_AND_CLASS, c), only=["nodeclaim-launch-failed"]).results[0].findings
    assert cause in f.title, f.title
    assert wrong not in f.remediation.text


def test_karpenter_unauthorized_without_a_policy_type_does_not_promise_the_action_in_its_message() -> None:
    """ToReasonMessage's default: `User is not authorized to perform this operation because no identity-based policy
    allows it` - the denied action (ec2:CreateFleet, iam:PassRole ...) is only in the controller's log."""
    c = claim("gpu-inference-z8v3q", "2026-08-21T09:58:00Z",
              '{type: Launched, status: Unknown, reason: Unauthorized, message: "User is not authorized to perform '
              'this operation because no identity-based policy allows it", lastTransitionTime: "2026-08-21T09:58:00Z"}')
    (f,) = run(snapshot(POOL_AND_CLASS, c), only=["nodeclaim-launch-failed"]).results[0].findings
    assert "the Karpenter controller's IAM role is not allowed" in f.title
    assert "the message names the denied action" not in f.remediation.text
    assert any("karpenter" in cmd and "logs" in cmd for cmd in f.remediation.commands), f.remediation.commands
