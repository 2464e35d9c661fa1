"""Parsers for the scheduling messages kube-scheduler and Karpenter put on pending pods (every generation)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from diagnostics.records import Taint

# --- kube-scheduler -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SchedulerReason:
    """One `<count> <reason>` item of a FailedScheduling message."""

    count: int
    reason: str


@dataclass(frozen=True, slots=True)
class SchedulerMessage:
    """`0/N nodes are available: <count> <reason>, ... preemption: ...` split into its parts."""

    total: int
    reasons: tuple[SchedulerReason, ...]
    preemption: str
    raw: str
    post_filter: tuple[str, ...] = ()
    """Other PostFilter plugins' reasons (DynamicResources: `no new claims to deallocate`), preemption's aside."""

    def count(self, needle: str) -> int:
        """Nodes rejected for a reason containing `needle` (case-insensitive)."""
        n = needle.lower()
        return sum(r.count for r in self.reasons if n in r.reason.lower())

    @property
    def insufficient(self) -> dict[str, int]:
        """Resource name -> nodes that lacked it (`3 Insufficient nvidia.com/gpu`)."""
        out: dict[str, int] = {}
        for r in self.reasons:
            if r.reason.startswith("Insufficient "):
                res = r.reason[len("Insufficient "):].strip()
                out[res] = out.get(res, 0) + r.count
        return out

    @property
    def untolerated_taints(self) -> list[tuple[int, Taint | None]]:
        """(nodes, taint) for each taint item; taint is None for the newer `untolerated taint(s)` summary.

        kube-scheduler prints only `{key: value}` (no effect), so the Taint carries no effect.
        """
        out: list[tuple[int, Taint | None]] = []
        for r in self.reasons:
            m = _SCHED_TAINT.search(r.reason)
            if m:
                out.append((r.count, Taint(m.group(1).strip(), m.group(2).strip())))
            elif "taint" in r.reason and ("untolerated" in r.reason or "didn't tolerate" in r.reason):
                out.append((r.count, None))
        return out


_SCHED_HEAD = re.compile(r"^\s*(\d+)/(\d+) nodes are available(?::\s*(.*))?$", re.S)
_POST_FILTER_STARTS = ("preemption: ", "no new claims to deallocate", "still not schedulable", "plugin disabled")
"""How PostFilter plugins' reasons begin: DefaultPreemption, and DynamicResources.PostFilter (1.26-1.34)."""
_POST_FILTER = re.compile(r"(?:^|(?<=\.)\s+)(?=" + "|".join(re.escape(s) for s in _POST_FILTER_STARTS) + ")")
_SCHED_ITEM_SPLIT = re.compile(r",\s+(?=\d+\s)")
# `node(s) had untolerated taint {k: v}` (1.25+) and `node(s) had taint {k: v}, that the pod didn't tolerate` (older).
_SCHED_TAINT = re.compile(r"taint \{([^:}]*):\s*([^}]*)\}")


def parse_scheduler_message(text: str) -> SchedulerMessage | None:
    """Parse kube-scheduler's FailedScheduling / PodScheduled message; None if it is not one.

    Items are split at `, <digit>` so reasons that themselves contain commas (the pre-1.25
    `had taint {k: v}, that the pod didn't tolerate`) stay whole. FitError.Error (kube-scheduler
    pkg/scheduler/framework/types.go) appends the PostFilter plugins' reasons after the filter
    reasons' closing `.`, joined with `, `: with DRA (1.32+) `... 2 Insufficient cpu. no new claims
    to deallocate, preemption: 0/3 nodes are available: ...`; they are split off, not read as part
    of the last filter reason.
    """
    if not text:
        return None
    raw = text.strip()
    if raw.startswith("no nodes available to schedule pods"):
        return SchedulerMessage(0, (), "", raw)
    m = _SCHED_HEAD.match(raw)
    if not m:
        return None
    total = int(m.group(2))
    rest = m.group(3) or ""
    cut = _POST_FILTER.search(rest)
    items_text, post = (rest[:cut.start()], rest[cut.end():]) if cut else (rest, "")
    others, _, preemption = post.partition("preemption: ")
    post_filter = tuple(p.strip() for p in others.split(", ") if p.strip())
    items_text = items_text.strip()
    if items_text.endswith("."):
        items_text = items_text[:-1]
    reasons: list[SchedulerReason] = []
    for item in _SCHED_ITEM_SPLIT.split(items_text) if items_text else ():
        im = re.match(r"^(\d+)\s+(.*)$", item.strip(), re.S)
        if im:
            reasons.append(SchedulerReason(int(im.group(1)), im.group(2).strip()))
        elif item.strip():
            reasons.append(SchedulerReason(0, item.strip()))
    return SchedulerMessage(total, tuple(reasons), preemption.strip(), raw, post_filter)


# --- Karpenter FailedScheduling -------------------------------------------------------------------

OFFERING_FRAGMENTS = ("no instance type has the required offering", "had a required offering",
                      "requirements/resources/offering tuple")
"""Karpenter's FailedScheduling wording (each generation) when no instance type offers the zone/capacity type."""

TAINT = "taint"
REQUIREMENTS = "requirements"
NO_INSTANCE_TYPE = "no-instance-type"
LIMITS = "limits"
NODE_LIMITS = "node-limits"
MIN_VALUES = "min-values"
ALL_FILTERED = "all-filtered"
RESERVED = "reserved"
TOPOLOGY = "topology"
OTHER = "other"

GEN_V15 = "v1.5+"
GEN_PRE_V15 = "pre-v1.5"
GEN_V03 = "v0.3x"


@dataclass(frozen=True, slots=True)
class KarpenterFragment:
    """One reason Karpenter gave (per NodePool in older versions, per error in newer ones)."""

    kind: str
    raw: str
    nodepool: str = ""
    """NodePool named by the fragment (limits in v1.5+, every fragment before v1.5); '' if unnamed."""
    taint: Taint | None = None
    key: str = ""
    """Requirement key of an `incompatible requirements` fragment."""
    variant: str = ""
    """For `no instance type ...`: the sentence before `, requirements=` (which criteria failed)."""
    requirements: str = ""
    resources: dict[str, str] = field(default_factory=dict)
    """Requested resources as Karpenter printed them (raw quantity strings), daemonset overhead included."""
    daemonset_overhead: dict[str, str] = field(default_factory=dict)

    @property
    def offering_only(self) -> bool:
        """Only offerings were missing (capacity / ICE cache), not requirements or resources."""
        return self.kind == NO_INSTANCE_TYPE and "offering" in self.variant and not any(
            w in self.variant for w in ("requirements", "resources", "tuple"))


@dataclass(frozen=True, slots=True)
class KarpenterMessage:
    fragments: tuple[KarpenterFragment, ...]
    generation: str
    raw: str

    def kinds(self) -> set[str]:
        return {f.kind for f in self.fragments}

    def of(self, kind: str) -> list[KarpenterFragment]:
        return [f for f in self.fragments if f.kind == kind]

    def for_pool(self, pool: str) -> list[KarpenterFragment]:
        return [f for f in self.fragments if f.nodepool == pool]

    @property
    def offering_only(self) -> bool:
        """Every fragment says only that no offering was available (capacity shortage)."""
        return bool(self.fragments) and all(f.offering_only for f in self.fragments)

    @property
    def mentions_offering(self) -> bool:
        """Every fragment is a `no instance type` verdict that names offerings among its causes."""
        return bool(self.fragments) and all(f.kind == NO_INSTANCE_TYPE and "offering" in f.variant
                                            for f in self.fragments)


_KARP_PREFIXES = ("Failed to schedule pod, ", "Could not schedule pod, ")
_POOL_PREFIX = re.compile(
    r'^(?:incompatible|compatible) with (?:nodepool|provisioner) "([^"]+)"'
    r"(?:, daemonset overhead=(\{[^{}]*\}))?(?:, |\s+but\s+|$)")
_NODEPOOL_KV = re.compile(r"\(NodePool=([^)\s,]+)\)")
_LIMITS = re.compile(r'exceed limits for nodepool:?\s*(?:"([^"]+)"|\(NodePool=([^)\s,]+)\))?')
_NODE_LIMITS = re.compile(r'node limits have been exhausted for nodepool:?\s*(?:"([^"]+)"|\(NodePool=([^)\s,]+)\))?')
_TAINT_V15 = re.compile(r"did not tolerate taint \(taint=([^)]*)\)")
_TAINT_OLD = re.compile(r"did not tolerate (\S+)")
_REQ_KEY = re.compile(r"incompatible requirements, key ([^,\s]+)")
_REQ_LABEL = re.compile(r'incompatible requirements, label "([^"]+)"')
_RESOURCES = re.compile(r"resources=(\{[^{}]*\})")
_REQUIREMENTS = re.compile(r"requirements=(.*?)(?:, resources=|$)")
_V03_VARIANT = "no instance type satisfied resources"
_OLD_NO_IT = re.compile(r"no instance type satisfied resources (\{[^{}]*\}) and requirements (.*?)(?:\s+\(|$)")


def parse_taint(text: str) -> Taint | None:
    """`key=value:Effect`, `key:Effect` or the pre-v1.5 `key=:Effect` (empty value)."""
    s = text.strip().rstrip(";,.")
    if ":" not in s:
        return None
    body, _, effect = s.rpartition(":")
    if effect not in ("NoSchedule", "NoExecute", "PreferNoSchedule"):
        return None
    key, _, value = body.partition("=")
    if not key:
        return None
    return Taint(key, value, effect)


def _json_map(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {k: v for k, v in re.findall(r'"([^"]+)"\s*:\s*"([^"]*)"', text)}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _classify(text: str, nodepool: str, overhead: dict[str, str]) -> KarpenterFragment:
    lower = text.lower()
    m = _LIMITS.search(text)
    if m and "exceed limits" in lower:
        return KarpenterFragment(LIMITS, text, m.group(1) or m.group(2) or nodepool,
                                 daemonset_overhead=overhead)
    m = _NODE_LIMITS.search(text)
    if m:
        return KarpenterFragment(NODE_LIMITS, text, m.group(1) or m.group(2) or nodepool,
                                 daemonset_overhead=overhead)
    named = _NODEPOOL_KV.search(text)
    pool = named.group(1) if named else nodepool
    m = _TAINT_V15.search(text)
    if m:
        return KarpenterFragment(TAINT, text, pool, taint=parse_taint(m.group(1)), daemonset_overhead=overhead)
    m = _TAINT_OLD.search(text)
    if m and "did not tolerate" in lower:
        return KarpenterFragment(TAINT, text, pool, taint=parse_taint(m.group(1)), daemonset_overhead=overhead)
    if "minvalues" in lower:
        return KarpenterFragment(MIN_VALUES, text, pool, resources=_json_map(_grab(_RESOURCES, text)),
                                 requirements=_grab(_REQUIREMENTS, text), daemonset_overhead=overhead)
    if lower.startswith("incompatible requirements") or "incompatible requirements" in lower:
        m = _REQ_KEY.search(text) or _REQ_LABEL.search(text)
        return KarpenterFragment(REQUIREMENTS, text, pool, key=m.group(1) if m else "", daemonset_overhead=overhead)
    m = _OLD_NO_IT.search(text)
    if m:
        return KarpenterFragment(NO_INSTANCE_TYPE, text, pool, variant=_V03_VARIANT,
                                 requirements=m.group(2).strip(), resources=_json_map(m.group(1)),
                                 daemonset_overhead=overhead)
    if "no instance type" in lower:
        variant = text.split(", requirements=")[0].split(" (")[0].strip()
        return KarpenterFragment(NO_INSTANCE_TYPE, text, pool, variant=variant,
                                 requirements=_grab(_REQUIREMENTS, text),
                                 resources=_json_map(_grab(_RESOURCES, text)), daemonset_overhead=overhead)
    if "filtered out all available instance types" in lower:
        return KarpenterFragment(ALL_FILTERED, text, pool, daemonset_overhead=overhead)
    if "reserved offerings" in lower or "reservation fallback" in lower:
        return KarpenterFragment(RESERVED, text, pool, daemonset_overhead=overhead)
    if "topology" in lower:
        return KarpenterFragment(TOPOLOGY, text, pool, daemonset_overhead=overhead)
    return KarpenterFragment(OTHER, text, pool, daemonset_overhead=overhead)


def _grab(rx: re.Pattern[str], text: str) -> str:
    m = rx.search(text)
    return m.group(1).strip() if m else ""


def parse_karpenter_message(text: str) -> KarpenterMessage | None:
    """Parse Karpenter's `Failed to schedule pod, ...` (event) or `Could not schedule pod, ...` (log).

    v1.5+ joins one error per cause with `; ` and names NodePools only for limits. Before
    v1.5 each error starts `incompatible with nodepool "x", daemonset overhead={...}, ` and
    the errors inside one NodePool's error (several taints) follow it, `; `-joined, so
    unprefixed fragments after a prefixed one belong to that NodePool.
    """
    if not text:
        return None
    raw = text.strip()
    body = None
    for prefix in _KARP_PREFIXES:
        if raw.startswith(prefix):
            body = raw[len(prefix):]
            break
    if body is None:
        return None
    frags: list[KarpenterFragment] = []
    current_pool = ""
    current_overhead: dict[str, str] = {}
    generation = GEN_V15
    for part in (p.strip() for p in body.split("; ")):
        if not part:
            continue
        m = _POOL_PREFIX.match(part)
        if m:
            generation = GEN_PRE_V15
            current_pool = m.group(1)
            current_overhead = _json_map(m.group(2))
            rest = part[m.end():].strip()
            frags.append(replace(_classify(rest or part, current_pool, current_overhead), raw=part))
            continue
        own_pool = bool(_LIMITS.search(part) and "exceed limits" in part) or bool(_NODE_LIMITS.search(part))
        frag = _classify(part, "" if own_pool else current_pool, {} if own_pool else current_overhead)
        if (frag.kind in (LIMITS, NODE_LIMITS) and '"' in part) or (frag.kind == TAINT and "(taint=" not in part):
            generation = GEN_PRE_V15
        frags.append(frag)
    if any(f.variant == _V03_VARIANT for f in frags):
        generation = GEN_V03
    return KarpenterMessage(tuple(frags), generation, raw)


# --- Karpenter Nominated --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Nomination:
    """`Pod should schedule on: nodeclaim/<name>[, node/<name>]` (or just `node/<name>`)."""

    nodeclaim: str
    node: str
    raw: str


_NOMINATED = re.compile(r"Pod should schedule on:?\s*(.*)$", re.S)


def parse_nominated(text: str) -> Nomination | None:
    if not text:
        return None
    m = _NOMINATED.search(text.strip())
    if not m:
        return None
    claim = node = ""
    for part in m.group(1).split(","):
        kind, _, name = part.strip().partition("/")
        if kind == "nodeclaim" and name:
            claim = name.strip()
        elif kind == "node" and name:
            node = name.strip()
    if not claim and not node:
        return None
    return Nomination(claim, node, text.strip())
