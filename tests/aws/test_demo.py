"""The demo AWS agrees with every shipped scenario: selectors resolve as the status says, the near
miss and the nearly full subnet show, and the scenario's root cause still comes first."""

from __future__ import annotations

from typing import Any

import pytest

from diagnostics.facts import aws_facts as af
from diagnostics import run
from diagnostics.snapshot import SourceState
from gputui.sim.scenario import list_scenarios, load_scenario
from gputui.sources.aws import AwsConfig, collect_aws
from gputui.sim.aws import DEMO_CREDENTIALS, LOW_IP_FREE, start_demo_aws
from tests.aws.shapes import with_aws
from tests.builders import snapshot

pytestmark = pytest.mark.slow  # the demo's AWS (moto) end to end

SCENARIOS = [s.name for s in list_scenarios()]


def _condition(nc: Any, type_: str) -> str:
    c = nc.condition(type_)
    return c.status if c else ""


@pytest.mark.parametrize("name", SCENARIOS)
def test_demo_aws_matches_the_scenario(name: str, aws_env: pytest.MonkeyPatch) -> None:
    from moto.ec2.responses.spot_instances import SpotInstances

    moto_spot = SpotInstances.describe_spot_price_history
    sc = load_scenario(name)
    url, region, stop = start_demo_aws(sc)
    try:
        assert url.startswith("http://127.0.0.1:") and region == "us-east-1"
        # What `gputui demo` does: point boto3's chain at the endpoint through the environment.
        aws_env.setenv("AWS_ENDPOINT_URL", url)
        aws_env.setenv("AWS_REGION", region)
        aws_env.setenv("AWS_ACCESS_KEY_ID", DEMO_CREDENTIALS[0])
        aws_env.setenv("AWS_SECRET_ACCESS_KEY", DEMO_CREDENTIALS[1])
        # What a cluster without Karpenter's CRDs answers (the GKE scenarios): those sources are absent.
        absent = {r.split(".", 1)[0]: SourceState.ABSENT for r in sc.absent}
        snap = snapshot(sc.all_objects(), sources=absent)
        facts, status = collect_aws(snap, AwsConfig())
    finally:
        stop()
    assert status.state is SourceState.OK and facts is not None, status
    assert SpotInstances.describe_spot_price_history is moto_spot  # the demo's price patch is undone on stop
    if name == "spot-shortage":  # moto's constant $0.00001 is replaced by plausible demo prices
        assert 15 < facts.spot_price("p5.48xlarge", "us-east-1a") < 35
        assert 0.3 < facts.spot_price("g5.xlarge", "us-east-1a") < 0.6
    for nc in snap.ec2nodeclasses:
        for sel, cond, listed in (("subnets", "SubnetsReady", nc.subnets),
                                  ("securityGroups", "SecurityGroupsReady", nc.security_groups)):
            ans = af.answer(facts, nc, sel)  # type: ignore[arg-type]
            assert ans.known
            if _condition(nc, cond) == "False":
                assert ans.matched == () and ans.near_misses, (nc.name, sel)
                assert any(have is not None for n in ans.near_misses for _k, _w, have in n.mismatched)
            else:  # same ids as Karpenter's status
                assert sorted(r.id for r in ans.matched) == sorted(str(x["id"]) for x in listed), (nc.name, sel)

    report = run(with_aws(snap, facts, status.state, status.detail))
    aws_findings = [f for f in report.findings if f.code.startswith("GT6")]
    if name == "incident":
        (low,) = aws_findings
        last = snap.index.nodeclass["gpu"].subnets[-1]["id"]
        assert (low.check, low.subject.name) == ("subnet-ips-exhausted", last)
        assert f"has only {LOW_IP_FREE} free IP addresses" in low.title
    else:
        assert aws_findings == []
    if name == "subnets-not-found":
        (gt101,) = [f for f in report.findings if f.code == "GT101"]
        assert any(e.note.startswith("near miss, ") and "network-tier=private" in e.note for e in gt101.evidence)
    expect = sc.expect
    if expect.get("topFinding"):
        top = report.findings[0]
        assert (top.check, str(top.subject)) == (expect["topFinding"], expect["subject"])
