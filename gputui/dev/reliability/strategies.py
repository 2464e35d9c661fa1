"""Hypothesis strategies for Kubernetes-ish objects: real shapes, fields missing, odd values (`test` extra).

Names come from small pools so objects refer to each other (pods to nodes, NodeClaims to nodes and pools,
pools to classes, events to everything), which is where the checks' joins can trip. Fields a real apiserver
types as integers (restartCount, desiredNumberScheduled, ...) stay integers; everything a user, a
controller or a CRD may fill as a string gets odd strings too.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

NODES = ("ip-10-0-1-1.ec2.internal", "ip-10-0-1-2.ec2.internal", "gpu-0")
POOLS = ("gpu", "gpu-spot", "default")
CLASSES = ("gpu", "default")
CLAIMS = ("gpu-abc12", "gpu-def34", "default-xyz")
NAMESPACES = ("default", "ml")
PODS = ("trainer-0", "infer-1", "job-x")

QUANTITIES = st.sampled_from(["1", "0", "8", "1k", "500m", "0.5", "1e3", "-1", "", "garbage", "1Gi", "2Ki",
                              "9" * 30, "1.5.5", "Infinity", "NaN", "+4", "0x10"])
ODD_TEXT = st.one_of(st.sampled_from([
    "", "x" * 10_000, "ünïcødé ✗ 💥", "\x00\x01\x02", "null",
    # Real texts the checks parse, both Karpenter message generations and kube-scheduler's.
    "0/5 nodes are available: 3 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint {nvidia.com/gpu: }. "
    "preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.",
    'incompatible with nodepool "gpu", daemonset overhead={"cpu":"200m"}, no instance type satisfied resources '
    '{"cpu":"200m","nvidia.com/gpu":"1","pods":"1"} and requirements karpenter.sh/nodepool In [gpu]',
    "all available instance types exceed limits for nodepool: \"gpu\"",
    "creating instance, insufficient capacity, with fleet error(s), InsufficientInstanceCapacity: We currently do "
    "not have sufficient p5.48xlarge capacity in the Availability Zone you requested (us-west-2a).",
    'Resource "nvidia.com/gpu" was requested but not registered',
    "SubnetSelector did not match any Subnets",
    "Pod should schedule on: nodeclaim/gpu-abc12",
    "Cannot disrupt Node: state node isn't initialized",
]), st.text(max_size=60))
TIMESTAMPS = st.sampled_from([None, "2026-08-21T09:59:00Z", "2026-08-21T08:00:00Z", "2026-08-22T10:00:00Z",
                              "2026-13-45T99:00:00Z", "yesterday", "", "2026-08-21T09:00:00.123456789Z",
                              "1970-01-01T00:00:00Z"])
CONDITION_TYPES = st.sampled_from(["Ready", "Launched", "Registered", "Initialized", "Drifted", "Empty",
                                   "Consolidatable", "ConsolidationAllowed", "NodeClassReady", "ValidationSucceeded",
                                   "SubnetsReady", "SecurityGroupsReady", "AMIsReady", "InstanceProfileReady",
                                   "AcceleratedHardwareReady", "MemoryPressure", "PodScheduled", "Disrupted",
                                   "VendorSpecific", ""])
GPU_KEYS = st.sampled_from(["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared", "amd.com/gpu",
                            "aws.amazon.com/neuron", "cpu", "memory", "pods"])


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The value, or the field missing (None fields are dropped by `drop_none`)."""
    return st.one_of(st.none(), strategy)


def drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


resources = st.dictionaries(GPU_KEYS, QUANTITIES, max_size=4)
condition = st.builds(lambda t, s, r, m, ts, sev: drop_none({"type": t, "status": s, "reason": r, "message": m,
                                                             "lastTransitionTime": ts, "severity": sev}),
                      CONDITION_TYPES, maybe(st.sampled_from(["True", "False", "Unknown", "Maybe"])),
                      maybe(st.sampled_from(["LaunchFailed", "ResourceNotRegistered", "InsufficientCapacity",
                                             "NodeClassNotFound", "SubnetsNotFound", "KubeletNotReady",
                                             "Unschedulable", "NvidiaXID79", ""])),
                      maybe(ODD_TEXT), TIMESTAMPS, maybe(st.sampled_from(["Warning", "Info"])))
conditions = st.one_of(st.none(), st.lists(condition, max_size=5),
                       st.just("not a list"), st.just([{"no": "type"}, 3]))
taint = st.builds(lambda k, v, e: drop_none({"key": k, "value": v, "effect": e}),
                  maybe(st.sampled_from(["nvidia.com/gpu", "dedicated", "karpenter.sh/disruption",
                                         "node.kubernetes.io/not-ready"])),
                  maybe(st.sampled_from(["true", "ml", "disrupting", ""])),
                  maybe(st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule", "Sometimes"])))
toleration = st.builds(lambda k, o, e: drop_none({"key": k, "operator": o, "effect": e}),
                       maybe(st.sampled_from(["nvidia.com/gpu", "dedicated", ""])),
                       maybe(st.sampled_from(["Exists", "Equal", "Whatever"])),
                       maybe(st.sampled_from(["NoSchedule", "NoExecute", ""])))
requirement = st.builds(lambda k, o, v: drop_none({"key": k, "operator": o, "values": v}),
                        maybe(st.sampled_from(["karpenter.k8s.aws/instance-family", "karpenter.sh/capacity-type",
                                               "node.kubernetes.io/instance-type",
                                               "karpenter.k8s.aws/instance-gpu-count",
                                               "topology.kubernetes.io/zone", "kubernetes.io/arch"])),
                        maybe(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Near"])),
                        maybe(st.lists(st.sampled_from(["p5", "g6e", "g5.xlarge", "spot", "on-demand", "1", "-1",
                                                        "zero", "us-west-2a", "amd64", ""]), max_size=3)))
labels = st.dictionaries(st.sampled_from(["karpenter.sh/nodepool", "node.kubernetes.io/instance-type",
                                          "karpenter.k8s.aws/instance-gpu-count", "nvidia.com/gpu.count",
                                          "nvidia.com/gpu.present", "karpenter.sh/capacity-type",
                                          "topology.kubernetes.io/zone", "app"]),
                         st.sampled_from([*POOLS, "g5.xlarge", "p4d.24xlarge", "1", "0", "many", "true", "spot",
                                          "us-west-2a", ""]), max_size=4)


def _meta(name: st.SearchStrategy[str], namespaced: bool) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda n, ns, lb, ts, dl: drop_none({
        "name": n, "namespace": ns if namespaced else None, "labels": lb, "creationTimestamp": ts,
        "deletionTimestamp": dl, "uid": f"uid-{n}"}),
        name, st.sampled_from(NAMESPACES), maybe(labels), TIMESTAMPS, st.one_of(st.none(), TIMESTAMPS))


@st.composite
def node(draw: st.DrawFn) -> dict[str, Any]:
    status = draw(maybe(st.builds(lambda c, a, cd: drop_none({"capacity": c, "allocatable": a, "conditions": cd}),
                                  maybe(resources), maybe(resources), conditions)))
    spec = draw(maybe(st.builds(lambda t, p, u: drop_none({"taints": t, "providerID": p, "unschedulable": u}),
                                maybe(st.lists(taint, max_size=3)),
                                maybe(st.sampled_from(["aws:///us-west-2a/i-0123", "", "bogus"])),
                                maybe(st.booleans()))))
    return drop_none({"apiVersion": "v1", "kind": "Node", "metadata": draw(_meta(st.sampled_from(NODES), False)),
                      "spec": spec, "status": status})


@st.composite
def pod(draw: st.DrawFn) -> dict[str, Any]:
    container = st.builds(lambda r, lim: {"name": "c", "image": "img", "resources": drop_none({"requests": r,
                                                                                              "limits": lim})},
                          maybe(resources), maybe(resources))
    spec = draw(maybe(st.builds(lambda n, c, t, s, a: drop_none({
        "nodeName": n, "containers": c, "tolerations": t, "nodeSelector": s,
        "affinity": a}),
        maybe(st.sampled_from(NODES + ("gone-node",))), maybe(st.lists(container, max_size=2)),
        maybe(st.lists(toleration, max_size=2)), maybe(labels),
        maybe(st.builds(lambda r: {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": r}]}}}, st.lists(requirement, max_size=2))))))
    status = draw(maybe(st.builds(lambda p, cd, nn, cs: drop_none({
        "phase": p, "conditions": cd, "nominatedNodeName": nn, "containerStatuses": cs}),
        maybe(st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Unknown", "Weird"])), conditions,
        maybe(st.sampled_from(NODES)),
        maybe(st.lists(st.builds(lambda r, w: {"name": "c", "restartCount": r, "state": {"waiting": {"reason": w}}},
                                 st.integers(-1, 10**6), st.sampled_from(["CrashLoopBackOff", "", "ImagePullBackOff"])),
                       max_size=2)))))
    return drop_none({"apiVersion": "v1", "kind": "Pod", "metadata": draw(_meta(st.sampled_from(PODS), True)),
                      "spec": spec, "status": status})


@st.composite
def nodeclaim(draw: st.DrawFn) -> dict[str, Any]:
    spec = draw(maybe(st.builds(lambda ref, req, res, t: drop_none({
        "nodeClassRef": ref, "requirements": req, "resources": res, "taints": t}),
        maybe(st.builds(lambda n, g: drop_none({"name": n, "group": g, "kind": "EC2NodeClass"}),
                        st.sampled_from(CLASSES), maybe(st.just("karpenter.k8s.aws")))),
        maybe(st.lists(requirement, max_size=3)), maybe(st.builds(lambda r: {"requests": r}, resources)),
        maybe(st.lists(taint, max_size=2)))))
    status = draw(maybe(st.builds(lambda n, p, c, cd: drop_none({
        "nodeName": n, "providerID": p, "capacity": c, "conditions": cd}),
        maybe(st.sampled_from(NODES)), maybe(st.sampled_from(["aws:///us-west-2a/i-0123", ""])),
        maybe(resources), conditions)))
    return drop_none({"apiVersion": draw(st.sampled_from(["karpenter.sh/v1", "karpenter.sh/v1beta1"])),
                      "kind": "NodeClaim", "metadata": draw(_meta(st.sampled_from(CLAIMS), False)),
                      "spec": spec, "status": status})


@st.composite
def nodepool(draw: st.DrawFn) -> dict[str, Any]:
    budget = st.builds(lambda n, s, d, r: drop_none({"nodes": n, "schedule": s, "duration": d, "reasons": r}),
                       maybe(st.sampled_from(["0", "10%", "150%", "abc", "1"])),
                       maybe(st.sampled_from(["0 9 * * mon-fri", "not a cron", "@daily", ""])),
                       maybe(st.sampled_from(["10h", "forever", "-5m", "1h30m"])),
                       maybe(st.lists(st.sampled_from(["Drifted", "Underutilized", "Empty", "Unknown"]), max_size=2)))
    template = st.builds(lambda ref, req, t: {"spec": drop_none({"nodeClassRef": ref, "requirements": req,
                                                                 "taints": t})},
                         maybe(st.builds(lambda n: {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": n},
                                         st.sampled_from(CLASSES))),
                         maybe(st.lists(requirement, max_size=4)), maybe(st.lists(taint, max_size=2)))
    spec = draw(maybe(st.builds(lambda t, lim, d, w: drop_none({"template": t, "limits": lim, "disruption": d,
                                                               "weight": w}),
                                maybe(template), maybe(resources),
                                maybe(st.builds(lambda p, b, c: drop_none({"consolidationPolicy": p, "budgets": b,
                                                                           "consolidateAfter": c}),
                                                maybe(st.sampled_from(["WhenEmptyOrUnderutilized", "WhenEmpty",
                                                                       "WhenUnderutilized"])),
                                                maybe(st.lists(budget, max_size=2)),
                                                maybe(st.sampled_from(["30s", "Never", "-1m"])))),
                                maybe(st.sampled_from([10, 0, "heavy"])))))
    status = draw(maybe(st.builds(lambda r, cd: drop_none({"resources": r, "conditions": cd}),
                                  maybe(resources), conditions)))
    return drop_none({"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                      "metadata": draw(_meta(st.sampled_from(POOLS), False)), "spec": spec, "status": status})


@st.composite
def nodeclass(draw: st.DrawFn) -> dict[str, Any]:
    terms = st.one_of(st.none(), st.just("not a list"),
                      st.lists(st.one_of(st.builds(lambda t: {"tags": {"karpenter.sh/discovery": t}},
                                                   st.sampled_from(["cluster", ""])),
                                         st.just({"id": "subnet-0123"}), st.just({})), max_size=2))
    spec = draw(maybe(st.builds(lambda s, g, r: drop_none({"subnetSelectorTerms": s, "securityGroupSelectorTerms": g,
                                                          "role": r}),
                                terms, terms, maybe(st.sampled_from(["KarpenterNodeRole", ""])))))
    status = draw(maybe(st.builds(lambda s, cd: drop_none({"subnets": s, "conditions": cd}),
                                  st.one_of(st.none(), st.just([]), st.just([{"id": "subnet-1", "zone": "us-west-2a"}]),
                                            st.just(["subnet-2"])),
                                  conditions)))
    return drop_none({"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
                      "metadata": draw(_meta(st.sampled_from(CLASSES), False)), "spec": spec, "status": status})


@st.composite
def event(draw: st.DrawFn) -> dict[str, Any]:
    kind, name = draw(st.sampled_from([("Pod", p) for p in PODS] + [("Node", n) for n in NODES]
                                      + [("NodeClaim", c) for c in CLAIMS] + [("NodePool", p) for p in POOLS]
                                      + [("EC2NodeClass", c) for c in CLASSES]))
    return drop_none({
        "apiVersion": "v1", "kind": "Event",
        "metadata": draw(_meta(st.text(alphabet="abcdef0123456789.", min_size=1, max_size=12), True)),
        "involvedObject": draw(maybe(st.builds(lambda ns: drop_none({"kind": kind, "name": name, "namespace": ns}),
                                               maybe(st.sampled_from(NAMESPACES))))),
        "reason": draw(maybe(st.sampled_from(["FailedScheduling", "Nominated", "FailedLaunch", "DisruptionBlocked",
                                              "Unconsolidatable", "InsufficientCapacityError", "Rebooted",
                                              "FailedDraining", "SomethingNew"]))),
        "message": draw(maybe(ODD_TEXT)),
        "type": draw(maybe(st.sampled_from(["Warning", "Normal", "Odd"]))),
        "count": draw(maybe(st.integers(-5, 10**7))),
        "firstTimestamp": draw(TIMESTAMPS), "lastTimestamp": draw(TIMESTAMPS),
    })


@st.composite
def daemonset(draw: st.DrawFn) -> dict[str, Any]:
    return drop_none({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": draw(_meta(st.sampled_from(["nvidia-device-plugin-daemonset", "dcgm-exporter"]), True)),
        "spec": draw(maybe(st.builds(lambda s, t: {"template": {"spec": drop_none({
            "nodeSelector": s, "tolerations": t, "containers": [{"name": "p", "image": "nvcr.io/nvidia/x:1"}]})}},
            maybe(labels), maybe(st.lists(toleration, max_size=2))))),
        "status": draw(maybe(st.builds(lambda d, r: {"desiredNumberScheduled": d, "numberReady": r},
                                       st.integers(0, 50), st.integers(0, 50)))),
    })


objects = st.lists(st.one_of(node(), pod(), nodeclaim(), nodepool(), nodeclass(), event(), daemonset()),
                   max_size=14)
"""A small cluster's worth of odd objects (duplicates by name: the last one wins, as in a cache)."""


# --- real objects, mutated -----------------------------------------------------------------------

MUTATED_SCENARIOS = ("gpu-not-advertised", "subnets-not-found", "spot-shortage", "consolidation-blocked",
                     "untolerated-taint")
"""The small demo scenarios: every check has a real failing case in one of them."""

_SCENARIO_CACHE: dict[str, list[dict[str, Any]]] = {}


def scenario_objects(name: str) -> list[dict[str, Any]]:
    if name not in _SCENARIO_CACHE:
        from gputui.sim.scenario import load_scenario

        _SCENARIO_CACHE[name] = load_scenario(name).all_objects()
    return _SCENARIO_CACHE[name]


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if prefix or k not in ("kind", "apiVersion"):
                out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


def _odd_like(draw: st.DrawFn, value: Any) -> Any:
    """A value of the same JSON type (what a schema-checked apiserver could still hold), or odd content."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return draw(st.sampled_from([0, -1, 2**31 - 1, value * 1000]))
    if isinstance(value, str):
        return draw(st.one_of(QUANTITIES, ODD_TEXT, TIMESTAMPS.filter(lambda t: t is not None)))
    if isinstance(value, list):
        return value[: draw(st.integers(0, max(0, len(value) - 1)))]
    if isinstance(value, dict):
        return {}
    return value


@st.composite
def mutated_scenario(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A demo scenario's objects with a few fields deleted, emptied or given odd values of the same type."""
    import copy

    objs = copy.deepcopy(scenario_objects(draw(st.sampled_from(MUTATED_SCENARIOS))))
    for _ in range(draw(st.integers(1, 8))):
        obj = draw(st.sampled_from(objs))
        paths = [p for p in _paths(obj) if p[:2] != ("metadata", "name") and p != ("metadata",)]
        if not paths:
            continue
        path = draw(st.sampled_from(paths))
        parent: Any = obj
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        if draw(st.booleans()):
            if isinstance(parent, dict):
                del parent[last]
            else:
                parent.pop(last)
        else:
            parent[last] = _odd_like(draw, parent[last])
    return objs
