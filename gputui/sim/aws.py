"""A demo AWS: moto's EC2 server on 127.0.0.1, seeded to agree with the demo scenario's EC2NodeClasses.

What gets created comes from the objects, never from their names:
- one VPC; for every EC2NodeClass whose selectors resolve, the subnets of its `status.subnets`
  (same ids, same zones, one /19 each) and the security groups of its `status.securityGroups`,
  tagged with its selector terms' tags, so AWS answers each selector the way the status says;
- for a class whose selector matches nothing (`SubnetsReady`/`SecurityGroupsReady=False`), resources
  that carry the selector's tag key with another value - the near miss a real account usually has
  (e.g. `network-tier=private` where the selector now wants `private-gpu`);
- in the scenarios listed in `LOW_IP_SUBNETS` (the `incident`), the last subnet of the first
  class's `status.subnets` (Karpenter sorts them by free addresses) is nearly out of IP addresses,
  using subnet CIDR reservations (what VPC CNI prefix delegation creates).

Instance types, offerings and GPU details are moto's bundled (real) data. moto answers every spot
price with a constant $0.00001 dated 2006, so while a demo runs its DescribeSpotPriceHistory answers
plausible made-up prices instead (`SPOT_PER_GPU_HOUR`, varying by zone). moto keeps its state per
process: starting a demo resets it.
"""

from __future__ import annotations

import hashlib
import importlib
import ipaddress
import logging
import math
import re
import threading
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import boto3

from diagnostics.facts.aws_facts import region_of_zone

DEMO_CREDENTIALS = ("demo", "demo")
"""moto accepts any key; the demo never sees real credentials."""
DEFAULT_REGION = "us-east-1"
LOW_IP_SUBNETS: dict[str, int] = {"incident": 1}
"""Scenario name -> how many subnets (from the end of status.subnets) are nearly out of addresses."""
LOW_IP_FREE = 11
"""Free addresses left in such a subnet (a /28 kept free: 16 - 5 reserved by AWS)."""
VPC_CIDR = "10.0.0.0/16"
SPOT_PER_GPU_HOUR = {"t4": 0.21, "a10g": 0.42, "l4": 0.36, "l40s": 0.98, "v100": 0.92, "a100": 1.35,
                     "h100": 3.05, "h200": 4.10, "b200": 6.20}
"""Demo spot prices, USD per GPU-hour: made up, in the range AWS charges (moto's are a constant)."""

_seed_lock = threading.Lock()
_ID = re.compile(r"^(subnet|sg)-[0-9a-f]{8,17}$")


@dataclass
class _Planned:
    id: str | None
    zone: str
    tags: dict[str, str] = field(default_factory=dict)
    name: str = ""


@dataclass
class DemoAws:
    """What was seeded (for tests and the status line)."""

    region: str
    vpc_id: str = ""
    subnets: list[str] = field(default_factory=list)
    security_groups: list[str] = field(default_factory=list)
    low_ip: list[str] = field(default_factory=list)


def start_demo_aws(scenario: Any, *, low_ip_subnets: int | None = None
                   ) -> tuple[str, str, Callable[[], None]]:
    """Start moto on 127.0.0.1 (a free port), seed it for `scenario`; returns (endpoint_url, region, stop).

    `scenario` is a Scenario (gputui.sim.scenario), a shipped scenario's name or path, or the
    objects themselves. `low_ip_subnets` overrides `LOW_IP_SUBNETS` for the scenario.
    """
    from moto.server import ThreadedMotoServer

    objects, name = _objects(scenario)
    region = scenario_region(objects)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no request log lines over the TUI
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    restore = _plausible_spot_prices()
    try:
        low = LOW_IP_SUBNETS.get(name, 0) if low_ip_subnets is None else low_ip_subnets
        seed(url, region, objects, low_ip_subnets=low)
    except Exception:
        server.stop()
        restore()
        raise

    def stop() -> None:
        server.stop()
        restore()

    return url, region, stop


def demo_client(endpoint_url: str, region: str) -> Any:
    key, secret = DEMO_CREDENTIALS
    return boto3.client("ec2", endpoint_url=endpoint_url, region_name=region, aws_access_key_id=key,
                        aws_secret_access_key=secret)


def _objects(scenario: Any) -> tuple[list[Mapping[str, Any]], str]:
    if isinstance(scenario, (str, Path)):
        from gputui.sim.scenario import load_scenario

        scenario = load_scenario(scenario)
    objs = getattr(scenario, "objects", None)
    if isinstance(objs, Mapping):
        return [o for items in objs.values() for o in items if isinstance(o, Mapping)], str(scenario.name)
    return [o for o in scenario or () if isinstance(o, Mapping)], ""


def _of(objects: Iterable[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [o for o in objects if o.get("kind") == kind]


def on_aws(scenario: Any) -> bool:
    """Whether the scenario is an AWS cluster: a GKE scenario (gce:// providerIDs, no EC2NodeClass) gets no moto."""
    objects, _ = _objects(scenario)
    pids = [str((n.get("spec") or {}).get("providerID") or "") for n in _of(objects, "Node")]
    return bool(_of(objects, "EC2NodeClass")) or any(p.startswith("aws://") for p in pids) or not any(pids)


def scenario_region(objects: Iterable[Mapping[str, Any]]) -> str:
    """The region the scenario's nodes run in (labels, providerIDs, class zones), else us-east-1."""
    objects = list(objects)
    for n in _of(objects, "Node"):
        pid = str((n.get("spec") or {}).get("providerID") or "")
        if pid and not pid.startswith("aws://"):
            continue  # another cloud's node: its region label is not an AWS region
        labels = (n.get("metadata") or {}).get("labels") or {}
        if labels.get("topology.kubernetes.io/region"):
            return str(labels["topology.kubernetes.io/region"])
        pid = str((n.get("spec") or {}).get("providerID") or "")
        if pid.startswith("aws://"):
            region = region_of_zone(pid[len("aws://"):].strip("/").split("/")[0])
            if region:
                return region
    for z in _zones(objects):
        region = region_of_zone(z)
        if region:
            return region
    return DEFAULT_REGION


def _zones(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    zones: set[str] = set()
    for o in objects:
        if o.get("kind") == "Node":
            z = ((o.get("metadata") or {}).get("labels") or {}).get("topology.kubernetes.io/zone")
            if z:
                zones.add(str(z))
        elif o.get("kind") == "EC2NodeClass":
            zones |= {str(s["zone"]) for s in (o.get("status") or {}).get("subnets") or () if s.get("zone")}
        elif o.get("kind") == "NodePool":  # the zones the pools ask for should exist too
            tspec = ((o.get("spec") or {}).get("template") or {}).get("spec") or {}
            for r in tspec.get("requirements") or ():
                if r.get("key") == "topology.kubernetes.io/zone" and r.get("operator") == "In":
                    zones |= {str(v) for v in r.get("values") or ()}
    return sorted(zones)


def _condition(nc: Mapping[str, Any], type_: str) -> str:
    for c in (nc.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return str(c.get("status"))
    return ""


def _broken(nc: Mapping[str, Any], condition: str, status_field: str) -> bool:
    """The selector matches nothing: its condition is False, or (v1beta1) status exists without the list."""
    status = nc.get("status") or {}
    cond = _condition(nc, condition)
    return cond == "False" or (not cond and bool(status) and not status.get(status_field))


def _concrete(tags: Mapping[str, Any]) -> dict[str, str]:
    """Tags a resource must carry to match a term (`*` = any value: use one)."""
    return {str(k): ("1" if str(v) == "*" else str(v).replace("*", "x").replace("?", "x")) for k, v in tags.items()}


def _other_value(value: str) -> str:
    """A plausible older value: `private-gpu` -> `private`, `ml-prod-efa` -> `ml-prod`, `prod` -> `prod-old`."""
    head, sep, _ = value.rpartition("-")
    return head if sep and head else f"{value}-old"


def _near_miss(term: Mapping[str, Any]) -> dict[str, str] | None:
    """The term's tags with the last one's value changed (None when every value is `*`)."""
    tags = _concrete(term.get("tags") or {})
    keys = [k for k, v in (term.get("tags") or {}).items() if str(v) != "*"]
    if not keys:
        return None
    last = str(keys[-1])
    tags[last] = _other_value(tags[last])
    return tags


def plan(objects: Iterable[Mapping[str, Any]], region: str) -> tuple[list[_Planned], list[_Planned], list[str]]:
    """(subnets, security groups, subnet ids in Karpenter's order) the scenario's classes imply."""
    objects = list(objects)
    classes = _of(objects, "EC2NodeClass")
    zones = _zones(objects) or [f"{region}{c}" for c in "abc"]
    subnets: dict[str, _Planned] = {}
    groups: dict[str, _Planned] = {}
    order: list[str] = []
    broken_subnets: list[Mapping[str, Any]] = []
    broken_groups: list[Mapping[str, Any]] = []
    for nc in classes:
        spec, status = nc.get("spec") or {}, nc.get("status") or {}
        s_terms = [t for t in spec.get("subnetSelectorTerms") or () if isinstance(t, Mapping)]
        g_terms = [t for t in spec.get("securityGroupSelectorTerms") or () if isinstance(t, Mapping)]
        if _broken(nc, "SubnetsReady", "subnets"):
            broken_subnets += s_terms
        else:
            tags = _concrete(next((t["tags"] for t in s_terms if t.get("tags")), {}))
            ids = [str(t["id"]) for t in s_terms if t.get("id")]
            listed = [(str(s.get("id") or ""), str(s.get("zone") or "")) for s in status.get("subnets") or ()]
            for i, (sid, zone) in enumerate(listed or [("", z) for z in zones]):
                key = sid or f"{zone}/{','.join(f'{k}={v}' for k, v in sorted(tags.items()))}"
                entry = subnets.setdefault(key, _Planned(sid or None, zone or zones[i % len(zones)]))
                entry.tags.update(tags)
                if sid and sid not in order:
                    order.append(sid)
            for sid in ids:
                if sid not in subnets:
                    subnets[sid] = _Planned(sid, zones[len(subnets) % len(zones)])
        if _broken(nc, "SecurityGroupsReady", "securityGroups"):
            broken_groups += g_terms
        else:
            tags = _concrete(next((t["tags"] for t in g_terms if t.get("tags")), {}))
            names = [str(t["name"]) for t in g_terms if t.get("name")]
            listed_g = [(str(g.get("id") or ""), str(g.get("name") or "")) for g in status.get("securityGroups") or ()]
            for gid, gname in listed_g or [("", n) for n in names] or [("", "")]:
                key = gid or gname or f"tags:{sorted(tags.items())}"
                entry = groups.setdefault(key, _Planned(gid or None, "", name=gname or (names[0] if names else "")))
                entry.tags.update(tags)
            for gid in (str(t["id"]) for t in g_terms if t.get("id")):
                groups.setdefault(gid, _Planned(gid, ""))
    for term in broken_subnets:
        near = _near_miss(term)
        if near and not any(set(near) & set(p.tags) for p in subnets.values()):
            for z in zones:
                subnets[f"near/{z}"] = _Planned(None, z, dict(near))
    for term in broken_groups:
        near = _near_miss(term)
        if near and not any(set(near) & set(p.tags) for p in groups.values()):
            groups[f"near/{sorted(near.items())}"] = _Planned(None, "", dict(near), name="node-sg-previous")
    return (sorted(subnets.values(), key=lambda p: (p.zone, p.id or "~")),
            list(groups.values()), order)


def seed(endpoint_url: str, region: str, objects: Iterable[Mapping[str, Any]], *, low_ip_subnets: int = 0) -> DemoAws:
    """Reset moto and create the VPC, subnets and security groups `plan` describes."""
    objects = list(objects)
    subnets, groups, order = plan(objects, region)
    ec2 = demo_client(endpoint_url, region)
    cluster = next((v for p in subnets + groups for k, v in p.tags.items() if k == "karpenter.sh/discovery"), "demo")
    out = DemoAws(region)
    with _seed_lock:
        urllib.request.urlopen(urllib.request.Request(f"{endpoint_url}/moto-api/reset", method="POST"),
                               timeout=10).read()
        ec2.describe_subnets()  # moto creates the default VPC lazily: before any id is pinned
        out.vpc_id = ec2.create_vpc(CidrBlock=VPC_CIDR, TagSpecifications=[
            {"ResourceType": "vpc", "Tags": [{"Key": "Name", "Value": f"{cluster}-vpc"}]}])["Vpc"]["VpcId"]
        net = ipaddress.ip_network(VPC_CIDR)
        prefix = max(19, net.prefixlen + math.ceil(math.log2(max(1, len(subnets)))))
        cidrs = list(net.subnets(new_prefix=prefix))
        created: dict[str, str] = {}
        for i, p in enumerate(subnets):
            tags = {"Name": f"{cluster}-private-{p.zone}", **p.tags}
            with _pinned_id("moto.ec2.models.subnets", "random_subnet_id", p.id):
                sub = ec2.create_subnet(VpcId=out.vpc_id, CidrBlock=str(cidrs[i]), AvailabilityZone=p.zone,
                                        TagSpecifications=[{"ResourceType": "subnet", "Tags": _tag_list(tags)}])
            sid = sub["Subnet"]["SubnetId"]
            created[p.id or sid] = sid
            out.subnets.append(sid)
        for p in groups:
            name = p.name or f"{cluster}-node"
            with _pinned_id("moto.ec2.models.security_groups", "random_security_group_id", p.id):
                g = ec2.create_security_group(GroupName=name, Description=f"gputui demo: {name}", VpcId=out.vpc_id,
                                              TagSpecifications=[{"ResourceType": "security-group",
                                                                  "Tags": _tag_list(p.tags)}] if p.tags else [])
            out.security_groups.append(g["GroupId"])
        ordered = [created[s] for s in order if s in created]
        for sid in ordered[len(ordered) - low_ip_subnets:] if low_ip_subnets > 0 else []:
            _nearly_fill(ec2, sid)
            out.low_ip.append(sid)
    return out


def _tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def _nearly_fill(ec2: Any, subnet_id: str) -> None:
    """Leave LOW_IP_FREE addresses: reserve every prefix of the subnet but its last /28."""
    # CidrBlock is the subnet's IPv4 block (IPv6 blocks are listed apart, in Ipv6CidrBlockAssociationSet).
    cidr = ipaddress.IPv4Network(ec2.describe_subnets(SubnetIds=[subnet_id])["Subnets"][0]["CidrBlock"])
    keep = list(cidr.subnets(new_prefix=28))[-1]
    for prefix in sorted(cidr.address_exclude(keep)):
        ec2.create_subnet_cidr_reservation(SubnetId=subnet_id, Cidr=str(prefix), ReservationType="prefix",
                                           Description="gputui demo: addresses held by VPC CNI prefixes")


@contextmanager
def _pinned_id(module: str, function: str, value: str | None) -> Iterator[None]:
    """Make moto give the next resource this id, so AWS and the scenario's status.subnets agree.

    moto has no public way to choose EC2 ids; its id generator is a module function, so the demo
    swaps it for the one call. Without it (another moto version) ids are random: still a demo.
    """
    try:
        mod = importlib.import_module(module)
        original = getattr(mod, function)
    except (ImportError, AttributeError):
        original = None
    if value is None or original is None or not _ID.match(value):
        yield
        return
    setattr(mod, function, lambda: value)
    try:
        yield
    finally:
        setattr(mod, function, original)


def demo_spot_price(instance_type: str, zone: str, gpus: int = 0, gpu_name: str = "", vcpus: int = 0) -> float:
    """A stable, plausible spot price: per-GPU rate x GPUs (or per-vCPU), +-15% by zone."""
    rate = SPOT_PER_GPU_HOUR.get(gpu_name.lower(), 0.8) * gpus if gpus else 0.012 * max(vcpus, 1)
    jitter = hashlib.sha256(f"{instance_type}/{zone}".encode()).digest()[0] / 255.0
    return round(rate * (0.85 + 0.3 * jitter), 4)


def _plausible_spot_prices() -> Callable[[], None]:
    """Make moto's DescribeSpotPriceHistory answer `demo_spot_price`s; returns the undo. A no-op if moto moved."""
    try:
        from moto.core.responses import ActionResult
        from moto.ec2.models.instance_types import INSTANCE_TYPES
        from moto.ec2.responses.spot_instances import SpotInstances
    except ImportError:
        return lambda: None
    original = SpotInstances.__dict__.get("describe_spot_price_history")
    if original is None:
        return lambda: None

    def describe_spot_price_history(self: Any) -> Any:
        offers = self.ec2_backend.describe_spot_price_history(self._get_param("InstanceTypes", []),
                                                              self._filters_from_querystring())
        when = (datetime.now(timezone.utc) - timedelta(minutes=7)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        history = []
        for o in offers:
            info = INSTANCE_TYPES.get(o["InstanceType"]) or {}
            gpus = (info.get("GpuInfo") or {}).get("Gpus") or [{}]
            price = demo_spot_price(o["InstanceType"], o["Location"], sum(g.get("Count", 0) for g in gpus),
                                    str(gpus[0].get("Name", "")), (info.get("VCpuInfo") or {}).get("DefaultVCpus", 0))
            history.append({"InstanceType": o["InstanceType"], "ProductDescription": "Linux/UNIX",
                            "SpotPrice": f"{price:.6f}", "AvailabilityZone": o["Location"], "Timestamp": when})
        return ActionResult({"SpotPriceHistory": history})

    SpotInstances.describe_spot_price_history = describe_spot_price_history  # type: ignore[method-assign]

    def restore() -> None:
        SpotInstances.describe_spot_price_history = original  # type: ignore[method-assign]

    return restore
