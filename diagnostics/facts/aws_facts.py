"""AWS facts: the EC2 subnets, security groups, GPU instance types, offerings and spot prices gputui read.

Pure data plus the helpers checks share: EC2NodeClass selector matching with Karpenter's semantics
(and the near misses when it matches nothing), the accelerated instance types a NodePool's
requirements allow, the zones it can launch in, and spot alternatives. The AWS source
(`gputui.sources.aws`) fills an `AwsFacts`; checks never call AWS, so a bundle replays offline.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from diagnostics.facts.gpu_pools import (
    INSTANCE_FAMILY,
    INSTANCE_TYPE,
    ZONE,
    capacity_types,
    family_of,
    is_gpu_pool,
)
from diagnostics.facts.matching import allowed_values, requirement_matches
from diagnostics.model import CheckSkipped, Evidence, EvidenceKind, ObjectRef
from diagnostics.records import NodeClass, NodePool, Requirement
from diagnostics.snapshot import Snapshot

Selector = Literal["subnets", "securityGroups"]

# Parts of the facts; each needs one EC2 permission and can fail alone.
SUBNETS = "subnets"
SECURITY_GROUPS = "security_groups"
INSTANCE_TYPES = "instance_types"
OFFERINGS = "offerings"
SPOT_PRICES = "spot_prices"
VPC_SUBNETS = "vpc_subnets"
"""The cluster VPC's other subnets: context for near misses and missing zones, never required."""
PERMISSIONS: dict[str, str] = {
    SUBNETS: "ec2:DescribeSubnets",
    VPC_SUBNETS: "ec2:DescribeSubnets",
    SECURITY_GROUPS: "ec2:DescribeSecurityGroups",
    INSTANCE_TYPES: "ec2:DescribeInstanceTypes",
    OFFERINGS: "ec2:DescribeInstanceTypeOfferings",
    SPOT_PRICES: "ec2:DescribeSpotPriceHistory",
}
ACCELERATED_PATTERNS = ("g*", "p*", "inf*", "trn*", "dl*")
"""DescribeInstanceTypes `instance-type` wildcards covering every EC2 GPU, Neuron and Gaudi type."""
ZONE_ID = "topology.k8s.aws/zone-id"
MAX_LISTED = 5
"""Near misses / alternatives shown per finding: enough to see the pattern, short enough to read."""

# Keys of what the source asked AWS (so "not found" differs from "not asked").
Q_SUBNET_TAG_KEYS = "subnet-tag-keys"
Q_SUBNET_IDS = "subnet-ids"
Q_VPCS = "vpc-ids"
Q_SG_TAG_KEYS = "sg-tag-keys"
Q_SG_IDS = "sg-ids"
Q_SG_NAMES = "sg-names"
Q_TYPE_PATTERNS = "instance-type-patterns"


# --- data ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Subnet:
    id: str
    zone: str
    zone_id: str = ""
    vpc_id: str = ""
    cidr: str = ""
    available_ips: int = 0
    tags: Mapping[str, str] = field(default_factory=dict)
    ipv6_native: bool = False
    """IPv6-only: AvailableIpAddressCount (IPv4) says nothing about room."""

    @property
    def usable_ips(self) -> int | None:
        """Addresses the CIDR offers after AWS's 5 reserved ones (None for an odd CIDR)."""
        try:
            return max(0, ipaddress.ip_network(self.cidr, strict=False).num_addresses - 5)
        except ValueError:
            return None

    def describe(self) -> str:
        """`subnet-0abc (us-east-1b, 10.0.32.0/19, vpc-01)` for notes."""
        bits = [b for b in (self.zone, self.cidr, self.vpc_id) if b]
        return f"{self.id} ({', '.join(bits)})" if bits else self.id

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "zone": self.zone, "zone_id": self.zone_id, "vpc_id": self.vpc_id,
                "cidr": self.cidr, "available_ips": self.available_ips, "tags": dict(self.tags),
                "ipv6_native": self.ipv6_native}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Subnet:
        return cls(str(d["id"]), str(d.get("zone", "")), str(d.get("zone_id", "")), str(d.get("vpc_id", "")),
                   str(d.get("cidr", "")), int(d.get("available_ips", 0)), dict(d.get("tags") or {}),
                   bool(d.get("ipv6_native", False)))


@dataclass(frozen=True, slots=True)
class SecurityGroup:
    id: str
    name: str = ""
    vpc_id: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        bits = [b for b in (self.name, self.vpc_id) if b]
        return f"{self.id} ({', '.join(bits)})" if bits else self.id

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "vpc_id": self.vpc_id, "tags": dict(self.tags)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SecurityGroup:
        return cls(str(d["id"]), str(d.get("name", "")), str(d.get("vpc_id", "")), dict(d.get("tags") or {}))


@dataclass(frozen=True, slots=True)
class InstanceType:
    """The accelerator facts of one EC2 instance type (DescribeInstanceTypes)."""

    name: str
    gpus: int = 0
    gpu_name: str = ""
    """As EC2 spells it: `A10G`, `H100`, `L40S`."""
    gpu_manufacturer: str = ""
    gpu_memory_mib: int = 0
    """Per GPU."""
    neuron_devices: int = 0
    accelerator_name: str = ""
    """Neuron device name (`Inferentia2`, `Trainium`)."""
    vcpus: int = 0
    memory_mib: int = 0
    architectures: tuple[str, ...] = ()
    ips_per_eni: int = 0
    max_enis: int = 0

    @property
    def family(self) -> str:
        return family_of(self.name)

    @property
    def size(self) -> str:
        return self.name.partition(".")[2]

    @property
    def accelerators(self) -> int:
        return self.gpus or self.neuron_devices

    @property
    def resource(self) -> str:
        """The extended resource its device plugin advertises."""
        if self.gpus:
            return "amd.com/gpu" if self.gpu_manufacturer.upper() == "AMD" else "nvidia.com/gpu"
        return "aws.amazon.com/neuron" if self.neuron_devices else ""

    def describe(self) -> str:
        """`8x H100 80 GiB` / `16x Trainium`."""
        if self.gpus:
            mem = f" {self.gpu_memory_mib // 1024} GiB" if self.gpu_memory_mib else ""
            return f"{self.gpus}x {self.gpu_name or 'GPU'}{mem}"
        if self.neuron_devices:
            return f"{self.neuron_devices}x {self.accelerator_name or 'Neuron'}"
        return "no accelerator"

    def labels(self) -> dict[str, str]:
        """The well-known labels Karpenter derives from this type (aws `pkg/providers/instancetype/types.go`)."""
        out = {INSTANCE_TYPE: self.name, INSTANCE_FAMILY: self.family,
               "karpenter.k8s.aws/instance-size": self.size}
        m = _TYPE_SCHEME.match(self.name)
        if m:
            out["karpenter.k8s.aws/instance-category"] = m.group(1)
            out["karpenter.k8s.aws/instance-generation"] = m.group(3)
        if self.vcpus:
            out["karpenter.k8s.aws/instance-cpu"] = str(self.vcpus)
        if self.memory_mib:
            out["karpenter.k8s.aws/instance-memory"] = str(self.memory_mib)
        arch = "amd64" if "x86_64" in self.architectures else "arm64" if "arm64" in self.architectures else ""
        if arch:
            out["kubernetes.io/arch"] = arch
        if self.gpus:
            out["karpenter.k8s.aws/instance-gpu-count"] = str(self.gpus)
            out["karpenter.k8s.aws/instance-gpu-name"] = _kabob(self.gpu_name)
            out["karpenter.k8s.aws/instance-gpu-manufacturer"] = _kabob(self.gpu_manufacturer)
            if self.gpu_memory_mib:
                out["karpenter.k8s.aws/instance-gpu-memory"] = str(self.gpu_memory_mib)
        if self.neuron_devices:
            out["karpenter.k8s.aws/instance-accelerator-count"] = str(self.neuron_devices)
            out["karpenter.k8s.aws/instance-accelerator-name"] = _kabob(self.accelerator_name)
            out["karpenter.k8s.aws/instance-accelerator-manufacturer"] = "aws"
        return out

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["architectures"] = list(self.architectures)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> InstanceType:
        kw = dict(d)
        kw["architectures"] = tuple(kw.get("architectures") or ())
        return cls(**kw)


_TYPE_SCHEME = re.compile(r"^([a-z]+)(-[0-9]+tb)?([0-9]+)")
"""Karpenter's category/generation parse: `g4dn` -> g, 4; `p6-b200` -> p, 6; `u-6tb1` -> u, 1."""


def _kabob(text: str) -> str:
    return text.strip().lower().replace(" ", "-")


@dataclass(frozen=True, slots=True)
class SpotPrice:
    instance_type: str
    zone: str
    price: float
    """USD per hour, Linux/UNIX."""
    timestamp: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {"instance_type": self.instance_type, "zone": self.zone, "price": self.price,
                "timestamp": self.timestamp.isoformat() if self.timestamp else None}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SpotPrice:
        ts = d.get("timestamp")
        return cls(str(d["instance_type"]), str(d["zone"]), float(d["price"]),
                   datetime.fromisoformat(ts) if ts else None)


@dataclass(frozen=True)
class AwsFacts:
    """One read of EC2, shaped by the cluster's EC2NodeClasses and GPU NodePools."""

    region: str
    fetched_at: datetime
    region_from: str = ""
    """How the region was chosen: `--aws-region`, `node providerIDs`, `AWS config` ..."""
    subnets: Mapping[str, Subnet] = field(default_factory=dict)
    security_groups: Mapping[str, SecurityGroup] = field(default_factory=dict)
    instance_types: Mapping[str, InstanceType] = field(default_factory=dict)
    """Accelerated types only (GPU / Neuron), by name."""
    offerings: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Instance type -> availability zones it is offered in (DescribeInstanceTypeOfferings)."""
    spot_prices: Mapping[tuple[str, str], SpotPrice] = field(default_factory=dict)
    """(instance type, zone) -> latest Linux/UNIX spot price."""
    queried: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """What was asked (tag keys, ids, names, VPCs, type patterns): absent from here means unknown."""
    errors: Mapping[str, str] = field(default_factory=dict)
    """Part -> why it is missing, e.g. `instance_types: forbidden (ec2:DescribeInstanceTypes)`."""
    calls: int = 0
    """EC2 API calls the read took (pages included)."""
    unmodeled_types: frozenset[str] = frozenset()
    """Types the read returned with no accelerator counted (g6f's fractional L4 reports Count 0, dl2q's
    Qualcomm cards): sold in the region, so never 'not sold'."""

    def asked(self, what: str, value: str) -> bool:
        return value in self.queried.get(what, frozenset())

    def type_queried(self, name: str) -> bool:
        """Was `name` covered by the instance-type read (so its absence means: not in this region).
        `FAMILY.x` asks for a family."""
        family = name[:-2] if name.endswith(".x") else ""
        if name in self.unmodeled_types or (family and any(t.split(".")[0] == family for t in self.unmodeled_types)):
            return False  # EC2 returned it: it is sold here, just not as an accelerator gputui counts
        return name in self.instance_types or any(
            wildcard_match(p, name) for p in self.queried.get(Q_TYPE_PATTERNS, ()))

    def zones(self) -> set[str]:
        """Every zone AWS mentioned (subnets, offerings)."""
        out = {s.zone for s in self.subnets.values() if s.zone}
        for zs in self.offerings.values():
            out |= zs
        return out

    def spot_price(self, instance_type: str, zone: str) -> float | None:
        p = self.spot_prices.get((instance_type, zone))
        return p.price if p else None

    def to_json(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "fetched_at": self.fetched_at.isoformat(),
            "region_from": self.region_from,
            "subnets": [s.to_json() for s in self.subnets.values()],
            "security_groups": [g.to_json() for g in self.security_groups.values()],
            "instance_types": [t.to_json() for t in self.instance_types.values()],
            "offerings": {k: sorted(v) for k, v in sorted(self.offerings.items())},
            "spot_prices": [p.to_json() for p in self.spot_prices.values()],
            "queried": {k: sorted(v) for k, v in sorted(self.queried.items())},
            "errors": dict(self.errors),
            "calls": self.calls,
            "unmodeled_types": sorted(self.unmodeled_types),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AwsFacts:
        subnets = [Subnet.from_json(x) for x in d.get("subnets") or ()]
        sgs = [SecurityGroup.from_json(x) for x in d.get("security_groups") or ()]
        types = [InstanceType.from_json(x) for x in d.get("instance_types") or ()]
        prices = [SpotPrice.from_json(x) for x in d.get("spot_prices") or ()]
        return cls(
            region=str(d["region"]),
            fetched_at=datetime.fromisoformat(str(d["fetched_at"])),
            region_from=str(d.get("region_from", "")),
            subnets={s.id: s for s in subnets},
            security_groups={g.id: g for g in sgs},
            instance_types={t.name: t for t in types},
            offerings={str(k): frozenset(v) for k, v in (d.get("offerings") or {}).items()},
            spot_prices={(p.instance_type, p.zone): p for p in prices},
            queried={str(k): frozenset(v) for k, v in (d.get("queried") or {}).items()},
            errors={str(k): str(v) for k, v in (d.get("errors") or {}).items()},
            calls=int(d.get("calls", 0)),
            unmodeled_types=frozenset(str(t) for t in d.get("unmodeled_types") or ()),
        )


# --- access for checks -----------------------------------------------------------------------------
class AwsPartMissing(CheckSkipped):
    """The AWS source ran but could not read what this check needs (e.g. one permission is missing)."""

    blind = True


def usable_facts(snap: Snapshot) -> AwsFacts | None:
    """The facts when the AWS source produced usable data, else None (for optional enrichment)."""
    st = snap.status("aws")
    return snap.aws if st.state.usable and isinstance(snap.aws, AwsFacts) else None


def facts_for(snap: Snapshot, *parts: str) -> AwsFacts:
    """The facts a check requires; raises AwsPartMissing (-> skipped with the reason) when a part failed."""
    facts = usable_facts(snap)
    if facts is None:
        st = snap.status("aws")
        if not st.state.usable:
            raise AwsPartMissing(st.reason(), blind=not st.state.absent)
        raise AwsPartMissing("aws: no facts collected")
    for part in parts:
        if part in facts.errors:
            raise AwsPartMissing(f"aws: {facts.errors[part]}")
    return facts


def region_of_zone(zone: str) -> str | None:
    """`us-east-1a` -> `us-east-1`; local/wavelength zones (`us-west-2-lax-1a`) -> `us-west-2`."""
    m = re.match(r"^([a-z]{2}(?:-[a-z]+)+-\d+)(?=[a-z]|-|$)", zone or "")
    return m.group(1) if m else None


def check_region(facts: AwsFacts, zones: Iterable[str]) -> None:
    """Refuse to judge zones of another region (a wrong --aws-region would make every type 'not offered')."""
    foreign = sorted(z for z in zones if region_of_zone(z) not in (None, facts.region))
    if foreign:
        other = region_of_zone(foreign[0])
        raise AwsPartMissing(f"aws: read region {facts.region}, but the cluster uses zone {foreign[0]} "
                             f"(pass --aws-region {other})")


def aws_evidence(subject: ObjectRef | None, call: str, value: Any, note: str = "") -> Evidence:
    return Evidence(EvidenceKind.AWS, subject, call, value, note)


# --- selectors (Karpenter semantics) ---------------------------------------------------------------
@functools.lru_cache(maxsize=1024)
def _wildcard(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern), re.S)


def wildcard_match(pattern: str, value: str) -> bool:
    """EC2 filter value semantics: `*` any run, `?` one character, everything else literal."""
    return _wildcard(pattern).fullmatch(value) is not None


def tags_match(wanted: Mapping[str, Any], tags: Mapping[str, str]) -> bool:
    """All of a term's tags: `"*"` means the key with any value (Karpenter's `tag-key` filter)."""
    return all(str(k) in tags and wildcard_match(str(v), tags[str(k)]) for k, v in wanted.items())


def term_matches(selector: Selector, term: Mapping[str, Any], res: Subnet | SecurityGroup) -> bool:
    """One selector term (its fields ANDed) against a subnet or security group."""
    tags = term.get("tags") or {}
    tid = term.get("id")
    name = term.get("name") if selector == "securityGroups" else None
    if not (tags or tid or name):
        return False  # an empty term selects nothing (the CRD rejects it)
    if tid and res.id != str(tid):
        return False
    if name and not (isinstance(res, SecurityGroup) and wildcard_match(str(name), res.name)):
        return False
    return tags_match(tags, res.tags) if isinstance(tags, Mapping) else False


def _term_known(facts: AwsFacts, selector: Selector, term: Mapping[str, Any]) -> bool:
    """Did the read cover this term (any resource it matches was necessarily fetched)?"""
    sg = selector == "securityGroups"
    if term.get("id"):
        return facts.asked(Q_SG_IDS if sg else Q_SUBNET_IDS, str(term["id"]))
    if sg and term.get("name"):
        return facts.asked(Q_SG_NAMES, str(term["name"]))
    tags = term.get("tags") or {}
    return bool(tags) and any(facts.asked(Q_SG_TAG_KEYS if sg else Q_SUBNET_TAG_KEYS, str(k)) for k in tags)


@dataclass(frozen=True, slots=True)
class NearMiss:
    """A resource that carries some of a term's tags but not all of them as wanted."""

    resource: Subnet | SecurityGroup
    matched: tuple[str, ...]
    """`key=value` pairs of the term it satisfies."""
    mismatched: tuple[tuple[str, str, str | None], ...]
    """(key, wanted value, its value or None when it lacks the key)."""

    def explain(self) -> str:
        parts = []
        for k, want, have in self.mismatched:
            parts.append(f"lacks tag {k}" if have is None else f"has {k}={have}, selector wants {k}={want}")
        if self.matched:
            parts.append("matches " + ", ".join(self.matched))
        return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class SelectorAnswer:
    """What AWS holds for one EC2NodeClass selector."""

    selector: Selector
    known: bool
    """False when the read did not cover every term (nothing can be concluded)."""
    matched: tuple[Subnet | SecurityGroup, ...] = ()
    missing_ids: tuple[str, ...] = ()
    missing_names: tuple[str, ...] = ()
    near_misses: tuple[NearMiss, ...] = ()


def _resources(facts: AwsFacts, selector: Selector) -> list[Subnet | SecurityGroup]:
    pool = facts.subnets if selector == "subnets" else facts.security_groups
    return sorted(pool.values(), key=lambda r: r.id)


def answer(facts: AwsFacts, nc: NodeClass, selector: Selector) -> SelectorAnswer:
    """Which subnets / security groups the class's terms select in AWS, and the near misses when none."""
    terms = nc.subnet_terms if selector == "subnets" else nc.security_group_terms
    part = SUBNETS if selector == "subnets" else SECURITY_GROUPS
    if part in facts.errors or not terms or not all(_term_known(facts, selector, t) for t in terms):
        return SelectorAnswer(selector, known=False)
    res = _resources(facts, selector)
    matched = [r for r in res if any(term_matches(selector, t, r) for t in terms)]
    missing_ids = tuple(str(t["id"]) for t in terms if t.get("id")
                        and not any(r.id == str(t["id"]) for r in res))
    missing_names = tuple(str(t["name"]) for t in terms if selector == "securityGroups" and t.get("name")
                          and not any(term_matches(selector, {"name": t["name"]}, r) for r in res))
    near: list[NearMiss] = []
    if not matched:
        seen: set[str] = set()
        for t in terms:
            tags = t.get("tags") or {}
            if not isinstance(tags, Mapping) or not tags:
                continue
            for r in res:
                if r.id in seen or not any(str(k) in r.tags for k in tags):
                    continue
                ok = tuple(f"{k}={r.tags[str(k)]}" for k, v in tags.items()
                           if str(k) in r.tags and wildcard_match(str(v), r.tags[str(k)]))
                bad = tuple((str(k), str(v), r.tags.get(str(k))) for k, v in tags.items()
                            if not (str(k) in r.tags and wildcard_match(str(v), r.tags[str(k)])))
                near.append(NearMiss(r, ok, bad))
                seen.add(r.id)
        # Closest first: most tags satisfied, then keys present with another value before missing keys.
        near.sort(key=lambda n: (-len(n.matched), sum(h is None for _k, _w, h in n.mismatched), len(n.mismatched),
                                 n.resource.id))
    return SelectorAnswer(selector, True, tuple(matched), missing_ids, missing_names, tuple(near))


def class_subnets(facts: AwsFacts, nc: NodeClass) -> list[Subnet] | None:
    """The subnets AWS returns for the class's selector (None when unknown)."""
    ans = answer(facts, nc, "subnets")
    return [r for r in ans.matched if isinstance(r, Subnet)] if ans.known else None


def cluster_vpcs(facts: AwsFacts, classes: Iterable[NodeClass]) -> set[str]:
    """VPCs of everything the classes' selectors match: the cluster's VPC(s) as far as AWS shows."""
    out: set[str] = set()
    for nc in classes:
        for sel in ("subnets", "securityGroups"):
            ans = answer(facts, nc, sel)
            out |= {r.vpc_id for r in ans.matched if r.vpc_id}
    return out


def class_zones(snap: Snapshot, nc: NodeClass, facts: AwsFacts | None = None) -> tuple[dict[str, str], str]:
    """Zone name -> zone id of the class's subnets, and where that came from: AWS's answer, else `status.subnets`."""
    if facts is not None:
        subs = class_subnets(facts, nc)
        if subs is not None:
            return {s.zone: s.zone_id for s in subs if s.zone}, f"ec2:DescribeSubnets ({facts.region})"
    zones = {str(s.get("zone")): str(s.get("zoneID") or "") for s in nc.subnets if s.get("zone")}
    return zones, f"ec2nodeclass/{nc.name} status.subnets"


# --- NodePools: candidate instance types and zones ----------------------------------------------
_INSTANCE_KEYS = frozenset(InstanceType("x.y", gpus=1, gpu_name="x", gpu_manufacturer="x", gpu_memory_mib=1,
                                        neuron_devices=1, accelerator_name="x", vcpus=1, memory_mib=1,
                                        architectures=("x86_64",)).labels())
"""Requirement keys that constrain instance types (others - zone, capacity type, custom labels - do not)."""


def _requirements(pool: NodePool) -> list[Requirement]:
    reqs = list(pool.requirements)
    reqs += [Requirement(k, "In", (v,)) for k, v in pool.template_labels.items() if k in _INSTANCE_KEYS]
    return reqs


def allows(pool: NodePool, it: InstanceType) -> bool:
    """Do the pool's instance requirements admit this type (Karpenter's well-known labels)?"""
    labels = it.labels()
    return all(requirement_matches(r, labels) for r in _requirements(pool) if r.key in _INSTANCE_KEYS)


def candidate_types(facts: AwsFacts, pool: NodePool) -> list[InstanceType]:
    """Accelerated instance types (in this region) the pool's requirements allow, by name."""
    return [it for name, it in sorted(facts.instance_types.items()) if allows(pool, it)]


def named_values(pool: NodePool) -> list[tuple[str, str]]:
    """(key, value) the pool names explicitly: instance types, families, GPU names (what a user typed)."""
    keys = (INSTANCE_TYPE, INSTANCE_FAMILY, "karpenter.k8s.aws/instance-gpu-name",
            "karpenter.k8s.aws/instance-accelerator-name")
    out: list[tuple[str, str]] = []
    for r in _requirements(pool):
        if r.key in keys and r.operator == "In":
            out.extend((r.key, v) for v in r.values)
    return list(dict.fromkeys(out))


def pool_zone_limits(pool: NodePool) -> tuple[set[str] | None, set[str], set[str] | None]:
    """(allowed zone names or None, excluded zone names, allowed zone ids or None) from requirements/labels."""
    reqs = list(pool.requirements)
    for key in (ZONE, ZONE_ID):
        if key in pool.template_labels:
            reqs.append(Requirement(key, "In", (pool.template_labels[key],)))
    allowed, excluded = allowed_values(reqs, ZONE)
    ids, _ = allowed_values(reqs, ZONE_ID)
    return allowed, excluded, ids


def launch_zones(snap: Snapshot, pool: NodePool, facts: AwsFacts | None = None) -> tuple[set[str] | None, str]:
    """Zones the pool can launch in: its zone requirements intersected with its class's subnet zones.

    None when nothing is known (no class subnets and no zone requirement: any zone of the region).
    """
    nc = snap.index.nodeclass.get(pool.node_class)
    zones, where = class_zones(snap, nc, facts) if nc is not None else ({}, "")
    allowed, excluded, ids = pool_zone_limits(pool)
    if zones:
        out = {z for z, zid in zones.items() if (allowed is None or z in allowed)
               and (ids is None or zid in ids)}
    elif allowed is not None:
        out, where = set(allowed), "NodePool requirements"
    else:
        return None, where
    return out - excluded, where


def pools_allowing_spot(pools: Iterable[NodePool]) -> bool:
    return any(is_gpu_pool(p) and "spot" in capacity_types(p) for p in pools)


# --- spot alternatives (for the spot-capacity-shortage check) -----------------------------------
@dataclass(frozen=True, slots=True)
class SpotOption:
    """An offered (instance type, zone) other than the ones that failed, with its current spot price."""

    instance_type: str
    zone: str
    price: float | None
    """USD/hour (latest Linux/UNIX spot price); None when AWS gave no price."""
    accelerators: int
    accelerator: str
    """`8x H100 80 GiB`."""
    same_type: bool
    """The same instance type in another zone (vs another type)."""

    @property
    def price_per_accelerator(self) -> float | None:
        return self.price / self.accelerators if self.price is not None and self.accelerators else None

    def describe(self) -> str:
        price = f"${self.price:.2f}/h spot" if self.price is not None else "no spot price"
        return f"{self.instance_type} in {self.zone} ({self.accelerator}, {price})"

    def to_json(self) -> dict[str, Any]:
        return {"instance_type": self.instance_type, "zone": self.zone, "spot_price": self.price,
                "accelerators": self.accelerator, "same_type": self.same_type}


def spot_alternatives(facts: AwsFacts, instance_types: Iterable[str], zones: Iterable[str] = (), *,
                      launchable_zones: Iterable[str] | None = None, min_accelerators: int | None = None,
                      min_gpu_memory_mib: int | None = None, limit: int | None = None) -> list[SpotOption]:
    """Where else spot capacity could come from for pods that failed on `instance_types` x `zones`.

    First the same types in other zones (where they are offered), then other accelerated types
    of the same kind (NVIDIA GPU, AMD GPU, Neuron) with at least as many accelerators and, for
    GPUs, at least as much memory per GPU (defaults: the smallest failing type's), so the pods
    would fit: same GPU model first, then cheapest per accelerator. `launchable_zones` (the
    EC2NodeClass's subnet zones) drops zones nothing could launch in. Prices are the latest
    Linux/UNIX spot prices read; None when not read.
    """
    wanted_names = list(dict.fromkeys(instance_types))
    failed_zones = set(zones)
    allowed_zones = set(launchable_zones) if launchable_zones is not None else None
    wanted = [facts.instance_types[t] for t in wanted_names if t in facts.instance_types]
    need = min_accelerators if min_accelerators is not None else min((w.accelerators for w in wanted), default=1)
    need_mem = min_gpu_memory_mib if min_gpu_memory_mib is not None else min(
        (w.gpu_memory_mib for w in wanted if w.gpus), default=0)
    makers = {(w.resource, w.gpu_name) for w in wanted}
    resources = {m[0] for m in makers}
    models = {m[1] for m in makers if m[1]}

    def ok_zone(z: str) -> bool:
        return allowed_zones is None or z in allowed_zones

    out: list[SpotOption] = []
    for w in wanted:
        for z in sorted(facts.offerings.get(w.name, ())):
            if failed_zones and z not in failed_zones and ok_zone(z):
                out.append(SpotOption(w.name, z, facts.spot_price(w.name, z), w.accelerators, w.describe(), True))
    for name, it in sorted(facts.instance_types.items()):
        if name in wanted_names or it.accelerators < need or (resources and it.resource not in resources):
            continue
        if it.gpus and it.gpu_memory_mib < need_mem:
            continue
        for z in sorted(facts.offerings.get(name, ())):
            if ok_zone(z):
                out.append(SpotOption(name, z, facts.spot_price(name, z), it.accelerators, it.describe(), False))
    model_of = {n: t.gpu_name for n, t in facts.instance_types.items()}

    def key(o: SpotOption) -> tuple[Any, ...]:
        ppa = o.price_per_accelerator
        return (not o.same_type, model_of.get(o.instance_type, "") not in models,
                ppa is None, ppa or 0.0, o.zone not in failed_zones, o.instance_type, o.zone)

    out.sort(key=key)
    return out[:limit] if limit is not None else out


def spot_advice_evidence(snap: Snapshot, instance_types: Sequence[str], zones: Sequence[str] = (), *,
                         pool: NodePool | None = None, subject: ObjectRef | None = None,
                         limit: int = MAX_LISTED) -> list[Evidence]:
    """One AWS evidence listing spot alternatives (see `spot_alternatives`); [] without usable AWS facts.

    With `pool`, alternatives are limited to zones its EC2NodeClass has subnets in. At most two
    zones per instance type are listed so several types fit in `limit` lines.
    """
    facts = usable_facts(snap)
    if facts is None or INSTANCE_TYPES in facts.errors or OFFERINGS in facts.errors:
        return []
    launchable: set[str] | None = None
    if pool is not None:
        nc = snap.index.nodeclass.get(pool.node_class)
        if nc is not None:
            launchable = set(class_zones(snap, nc, facts)[0]) or None
    options = spot_alternatives(facts, instance_types, zones, launchable_zones=launchable)
    per_type: dict[str, int] = {}
    shown: list[SpotOption] = []
    for o in options:
        if per_type.get(o.instance_type, 0) >= 2:
            continue
        per_type[o.instance_type] = per_type.get(o.instance_type, 0) + 1
        shown.append(o)
        if len(shown) >= limit:
            break
    if not shown:
        return []
    priced = SPOT_PRICES not in facts.errors and bool(facts.spot_prices)
    note = (f"offered in {facts.region} besides {', '.join(instance_types) or 'the failing types'}"
            + (f" in {', '.join(zones)}" if zones else "")
            + ("; latest Linux/UNIX spot prices" if priced else
               f"; no spot prices ({facts.errors.get(SPOT_PRICES, 'not read')})"))
    return [aws_evidence(subject or (pool.ref if pool else None),
                         "ec2:DescribeInstanceTypeOfferings + ec2:DescribeSpotPriceHistory",
                         [o.describe() for o in shown], note)]


def expected_accelerators(facts: AwsFacts | None, instance_type: str) -> tuple[str, int] | None:
    """(resource, count) a node of this type should advertise, per DescribeInstanceTypes; None if unknown."""
    if facts is None:
        return None
    it = facts.instance_types.get(instance_type)
    if it is None or not it.accelerators:
        return None
    return it.resource, it.accelerators


# --- GT101/GT102 enrichment ----------------------------------------------------------------------
def _tags_text(tags: Mapping[str, str], keys: Iterable[str] = (), limit: int = 6) -> dict[str, str]:
    """The tags worth showing: the selector's keys first, then a few others (Name, role tags)."""
    keys = [k for k in keys if k in tags]
    rest = [k for k in sorted(tags) if k not in keys]
    return {k: tags[k] for k in (keys + rest)[:limit]}


def selector_aws_evidence(snap: Snapshot, nc: NodeClass, selector: Selector) -> list[Evidence]:
    """What AWS says about a selector that matched nothing: AWS's own answer, missing ids, near misses.

    Near misses carry some of the term's tag keys (queried with `tag-key`), e.g. the key with
    another value. When none carries any key, the subnets/groups of the cluster's VPC are listed
    with their tags so a misspelt key shows. Resources in another VPC than the cluster's say so.
    """
    facts = usable_facts(snap)
    if facts is None:
        return []
    ans = answer(facts, nc, selector)
    if not ans.known:
        return []
    noun, call = (("subnet", "ec2:DescribeSubnets") if selector == "subnets"
                  else ("security group", "ec2:DescribeSecurityGroups"))
    others = [c for c in snap.ec2nodeclasses if c.name != nc.name]
    vpcs = cluster_vpcs(facts, others)
    if selector == "subnets":  # the class's own security groups locate the VPC too
        vpcs |= {r.vpc_id for r in answer(facts, nc, "securityGroups").matched if r.vpc_id}
    else:
        vpcs |= {r.vpc_id for r in answer(facts, nc, "subnets").matched if r.vpc_id}
    terms = nc.subnet_terms if selector == "subnets" else nc.security_group_terms
    keys = [str(k) for t in terms for k in (t.get("tags") or {})]
    ev: list[Evidence] = []
    where = f"region {facts.region}"
    if ans.matched:
        ev.append(aws_evidence(nc.ref, f"{call} (selector terms, {where})",
                               [_describe(r) for r in ans.matched[:MAX_LISTED]],
                               note=f"AWS returns {len(ans.matched)} {noun}(s) for this selector now: Karpenter "
                                    "picks them up on its next reconcile; if the status stays empty, check the "
                                    f"controller's {call} permission and that it runs in {facts.region}"))
        return ev
    ev.append(aws_evidence(nc.ref, f"{call} (selector terms, {where})", [],
                           note=f"AWS returns no {noun} for this selector either: the selector (or the tags) "
                                "must change, not Karpenter"))
    for missing in ans.missing_ids:
        ev.append(aws_evidence(nc.ref, f"{call} {'subnet-id' if selector == 'subnets' else 'group-id'}={missing}",
                               "not found", note=f"no such {noun} in {facts.region} (deleted, or another "
                                                 "account/region)"))
    for missing in ans.missing_names:
        ev.append(aws_evidence(nc.ref, f"{call} group-name={missing}", "not found",
                               note=f"no security group with this name in {facts.region}"))
    groups: dict[str, list[NearMiss]] = {}
    for nm in ans.near_misses:  # the same mismatch on many resources reads best once
        groups.setdefault(nm.explain(), []).append(nm)
    for text, members in list(groups.items())[:MAX_LISTED]:
        shown = members[:MAX_LISTED]
        first = shown[0].resource
        subject = subject_ref(first) if len(members) == 1 else nc.ref
        value = {m.resource.id: {**_where(m.resource), **_tags_text(m.resource.tags, keys, limit=len(keys) or 1)}
                 for m in shown}
        more = f" (and {len(members) - len(shown)} more)" if len(members) > len(shown) else ""
        vpc_notes = sorted({_vpc_note(m.resource.vpc_id, vpcs) for m in shown})
        ev.append(aws_evidence(subject, f"{call} {', '.join(m.resource.id for m in shown)} tags", value,
                               note=f"near miss, {len(members)} {noun}(s){more}: {text}" + "".join(vpc_notes)))
    if not ans.near_misses and vpcs:
        pool = facts.subnets if selector == "subnets" else facts.security_groups
        in_vpc = sorted((r for r in pool.values() if r.vpc_id in vpcs), key=lambda r: r.id)
        if in_vpc:
            ev.append(aws_evidence(None, f"{call} vpc-id={','.join(sorted(vpcs))}",
                                   {r.id: _tags_text(r.tags) for r in in_vpc[:MAX_LISTED]},
                                   note=f"no {noun} carries any of the selector's tag keys ({', '.join(keys)}); "
                                        f"these are the cluster VPC's {noun}s and their tags"))
    return ev


def _where(r: Subnet | SecurityGroup) -> dict[str, Any]:
    return {"zone": r.zone, "vpc": r.vpc_id} if isinstance(r, Subnet) else {"name": r.name, "vpc": r.vpc_id}


def _describe(r: Subnet | SecurityGroup) -> dict[str, Any]:
    if isinstance(r, Subnet):
        return {"id": r.id, "zone": r.zone, "vpc": r.vpc_id, "freeIPs": r.available_ips}
    return {"id": r.id, "name": r.name, "vpc": r.vpc_id}


def _vpc_note(vpc: str, cluster: set[str]) -> str:
    if not vpc:
        return ""
    if cluster and vpc not in cluster:
        return f"; in {vpc}, not the cluster's VPC {', '.join(sorted(cluster))}"
    return f"; in {vpc}"


def subject_ref(r: Subnet | SecurityGroup) -> ObjectRef:
    return ObjectRef("Subnet" if isinstance(r, Subnet) else "SecurityGroup", r.id)


__all__ = [
    "ACCELERATED_PATTERNS", "AwsFacts", "AwsPartMissing", "InstanceType", "NearMiss", "PERMISSIONS", "SecurityGroup",
    "SelectorAnswer", "SpotOption", "SpotPrice", "Subnet", "allows", "answer", "aws_evidence", "candidate_types",
    "check_region", "class_subnets", "class_zones", "cluster_vpcs", "expected_accelerators", "facts_for",
    "launch_zones", "named_values", "pool_zone_limits", "region_of_zone", "selector_aws_evidence",
    "spot_advice_evidence", "spot_alternatives", "tags_match", "term_matches", "usable_facts", "wildcard_match",
]
