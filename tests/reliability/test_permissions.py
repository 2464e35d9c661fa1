"""Each resource forbidden (403) or its CRD absent (404): no crash, the checks needing it skipped with the exact
missing permission, the others still run. And the shipped Roles grant exactly what gputui asks for."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gputui import rbac
from gputui.dev.reliability import permissions as pm
from gputui.dev.reliability import rbac_check as rc
from gputui.sim.cluster import SimCluster

pytestmark = pytest.mark.slow  # the reliability suite: faults injected end to end (README "Reliability")

CASES = pm.cases()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimCluster, Path]]:
    with SimCluster("incident", shift_to_now=True) as sim:
        yield sim, sim.write_kubeconfig(tmp_path_factory.mktemp("perm") / "kubeconfig")


def test_every_source_and_crd_is_covered() -> None:
    assert [c.source for c in CASES if c.denial == "forbidden"] == [
        "nodes", "pods", "events", "namespaces", "daemonsets", "pdbs", "runtimeclasses", "nodeclaims",
        "nodepools", "ec2nodeclasses"]
    assert [c.source for c in CASES if c.denial == "absent"] == ["nodeclaims", "nodepools", "ec2nodeclasses"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.source}-{c.denial}" for c in CASES])
def test_denied_resource_skips_exactly_its_checks(cluster: tuple[SimCluster, Path], case: pm.PermissionCase) -> None:
    sim, kubeconfig = cluster
    pm.deny(sim, case, True)
    try:
        for result in (pm.run_diagnose(kubeconfig, case), pm.run_live(kubeconfig, case)):
            where = f"{result.mode}: {result.to_json()}"
            assert result.error == "" and result.errored == [], where
            assert result.exit_code is None or result.exit_code in pm.FINDINGS_EXIT_CODES, where
            # The source says what is missing, in the words `kubectl auth can-i` uses.
            assert case.expected_reason in result.source_detail, where
            assert result.skipped_wrong == [], where
            assert result.did_not_run == [], where
            assert len(result.ran) >= 10, where
    finally:
        pm.deny(sim, case, False)


def test_nodeclaim_checks_name_the_missing_permission(cluster: tuple[SimCluster, Path]) -> None:
    """What a user reads for one real case (GT301-GT303, GT404 and GT503 need NodeClaims)."""
    sim, kubeconfig = cluster
    case = next(c for c in CASES if c.source == "nodeclaims" and c.denial == "forbidden")
    pm.deny(sim, case, True)
    try:
        result = pm.run_diagnose(kubeconfig, case)
    finally:
        pm.deny(sim, case, False)
    assert sorted(result.skipped_right) == ["gpu-workload-disruption", "nodeclaim-launch-failed", "nodeclaim-not-initialized",
                                            "nodeclaim-not-registered", "pod-waiting-for-nodeclaim"]
    assert result.source_detail == "list nodeclaims.karpenter.sh"


# --- the shipped RBAC ---------------------------------------------------------------------------


def test_manifests_print_as_one_applyable_stream() -> None:
    out = io.StringIO()
    rbac.print_manifests(out=out)
    docs = [d for d in yaml.safe_load_all(out.getvalue()) if d]
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [("ClusterRole", "gputui-readonly"),
                                                                  ("Role", "gputui-debug-pod")]
    assert all(d["apiVersion"] == "rbac.authorization.k8s.io/v1" for d in docs)
    assert "namespace" not in docs[1]["metadata"]  # `kubectl apply -n NS` puts it where the debug pods go


def test_readonly_role_grants_what_gputui_reads_and_nothing_more() -> None:
    granted = rc.granted(rbac.load(rbac.READONLY))
    assert rc.describe(rc.readonly_required() - granted) == []
    assert rc.describe(granted - rc.readonly_required()) == []
    assert not {p.verb for p in granted} - {"get", "list", "watch"}
    assert not {p.resource for p in granted} & rc.SENSITIVE_RESOURCES
    assert "list nodeclaims.karpenter.sh" in rc.describe(granted)


def test_debug_role_grants_the_pod_lifecycle_only() -> None:
    granted = rc.granted(rbac.load(rbac.DEBUG_POD))
    assert set(rc.describe(granted)) == {"create pods", "delete pods", "get pods", "list pods", "watch pods",
                                         "get pods/log"}
    assert rbac.load(rbac.DEBUG_POD)["kind"] == "Role"  # one namespace, never cluster-wide


def test_wildcards_are_refused() -> None:
    with pytest.raises(rc.WildcardError):
        rc.granted({"rules": [{"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}]})


def test_gputui_works_on_a_cluster_enforcing_exactly_the_roles() -> None:
    """diagnose and the live session read every source; a debug pod runs only with the debug Role added."""
    e2e = rc.run_with_grants(rc.granted(rbac.load(rbac.READONLY)), rc.granted(rbac.load(rbac.DEBUG_POD)))
    assert all(v["ok"] for v in e2e.values()), e2e
    assert e2e["debug (readonly)"]["nvidia_smi_ran"] is False and "403" in e2e["debug (readonly)"]["failure"]
    assert e2e["debug (readonly+debug)"]["nvidia_smi_ran"] is True


def test_a_role_missing_one_verb_is_caught() -> None:
    """The end-to-end run can fail: without `watch nodes` the live session reports nodes forbidden."""
    grants = rc.granted(rbac.load(rbac.READONLY)) - {rc.Permission("", "nodes", "watch")}
    e2e = rc.run_with_grants(grants, rc.granted(rbac.load(rbac.DEBUG_POD)))
    assert e2e["diagnose"]["ok"] is True  # diagnose only lists
    assert e2e["live"] == {"ok": False, "not_ok": {"nodes": "forbidden"}}
