"""No finding offers another stack's fix: over every shipped scenario, a Neuron/AMD node is never told to patch an
NVIDIA DaemonSet or run nvidia-smi, a GKE node is never told about EC2, and a cluster without Karpenter's CRDs is
never told about Karpenter."""

from __future__ import annotations

import pytest

from diagnostics import Finding, Report, run
from diagnostics.facts.accelerator_stack import node_platform, node_stack, node_vendor
from diagnostics.snapshot import Snapshot, SourceState
from gputui.kube import ingest
from gputui.sim.scenario import list_scenarios, load_scenario
from tests.builders import snapshot

SCENARIOS = [s.name for s in list_scenarios()]
KNOWN_KINDS = set(ingest.KIND_OF_SOURCE.values())
SOURCE_OF_RESOURCE = {"nodeclaims.karpenter.sh": "nodeclaims", "nodepools.karpenter.sh": "nodepools",
                      "ec2nodeclasses.karpenter.k8s.aws": "ec2nodeclasses"}
NVIDIA_ONLY = ("nvidia-device-plugin", "nvidia-smi", "gputui debug", "xid", "nvidia.com/gpu", "gpu-operator")
AWS_ONLY = ("aws ec2", "ec2nodeclass", "instance profile", "aws:///")
KARPENTER_ONLY = ("karpenter", "nodeclaim", "nodepool ", "kubectl get nodepool", "ec2nodeclass")


def _text(f: Finding) -> str:
    return (f.remediation.text + "\n" + "\n".join(f.remediation.commands)).lower()


def _report(name: str) -> tuple[Snapshot, Report, bool]:
    sc = load_scenario(name)
    absent = {SOURCE_OF_RESOURCE[r]: SourceState.ABSENT for r in sc.absent if r in SOURCE_OF_RESOURCE}
    objs = [o for o in sc.all_objects() if o.get("kind") in KNOWN_KINDS]
    snap = snapshot(objs, sources=absent, taken_at=sc.reference_time)
    return snap, run(snap), bool(absent)


@pytest.mark.parametrize("name", SCENARIOS)
def test_no_finding_offers_another_stacks_fix(name: str) -> None:
    snap, report, no_karpenter = _report(name)
    nodes = {n.ref: n for n in snap.nodes}
    for f in report.findings:
        text = _text(f)
        if no_karpenter:
            assert not [w for w in KARPENTER_ONLY if w in text], (f.check, f.title, text)
        node = nodes.get(f.subject)
        if node is None:
            continue
        if node_vendor(node) != "nvidia":
            assert not [w for w in NVIDIA_ONLY if w in text], (f.check, f.title, text)
        if node_stack(snap, node).provider == "dra":  # its GPUs are ResourceSlice devices: never "replace it"
            assert "delete node" not in text and "cordon" not in text, (f.check, f.title, text)
        if node_platform(node) == "gke":
            assert not [w for w in AWS_ONLY if w in text], (f.check, f.title, text)


def test_the_rule_is_exercised_on_each_kind_of_stack() -> None:
    """The scenarios contain a Neuron node and a GKE node with findings, and a cluster without Karpenter:
    the test above is not vacuous."""
    seen = set()
    for name in ("neuron-plugin-missing", "gke-plugin-crash"):
        snap, report, no_karpenter = _report(name)
        nodes = {n.ref: n for n in snap.nodes}
        for f in report.findings:
            node = nodes.get(f.subject)
            if node is not None:
                seen.add(node_vendor(node))
                seen.add(node_platform(node))
        if no_karpenter:
            seen.add("no-karpenter")
    assert {"neuron", "gke", "no-karpenter"} <= seen
