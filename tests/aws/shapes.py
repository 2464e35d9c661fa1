"""AwsFacts for check tests, built from EC2 API response shapes through the source's own parsers.

The instance-type dicts are moto 5.2.5's bundled (real) DescribeInstanceTypes data, trimmed to the
fields gputui reads. Spot prices are made up (moto's are fake anyway); their shape follows the
DescribeSpotPriceHistory reference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from diagnostics.facts import aws_facts as af
from diagnostics.facts.aws_facts import AwsFacts
from diagnostics.snapshot import Snapshot, SourceState, SourceStatus
from gputui.sources.aws import (
    parse_instance_type,
    parse_security_group,
    parse_spot_price,
    parse_subnet,
    plan_reads,
    split_inputs,
)
from tests.builders import NOW


def itype(name: str, gpus: int, gpu: str, mem: int, vcpus: int, memory: int, ips: int = 15, enis: int = 4,
          maker: str = "NVIDIA") -> dict[str, Any]:
    return {"InstanceType": name, "VCpuInfo": {"DefaultVCpus": vcpus}, "MemoryInfo": {"SizeInMiB": memory},
            "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
            "NetworkInfo": {"Ipv4AddressesPerInterface": ips, "MaximumNetworkInterfaces": enis},
            "GpuInfo": {"Gpus": [{"Name": gpu, "Manufacturer": maker, "Count": gpus,
                                  "MemoryInfo": {"SizeInMiB": mem}}], "TotalGpuMemoryInMiB": gpus * mem}}


TYPES = [
    itype("g5.xlarge", 1, "A10G", 22888, 4, 16384),
    itype("g5.2xlarge", 1, "A10G", 22888, 8, 32768),
    itype("g5.12xlarge", 4, "A10G", 22888, 48, 196608, ips=30, enis=8),
    itype("g6.xlarge", 1, "L4", 22888, 4, 16384),
    itype("p4d.24xlarge", 8, "A100", 40960, 96, 1179648, ips=50, enis=60),
    itype("p5.48xlarge", 8, "H100", 81920, 192, 2097152, ips=50, enis=64),
    itype("p5e.48xlarge", 8, "H200", 144384, 192, 2097152, ips=50, enis=64),
]


DISCOVERY = {"karpenter.sh/discovery": "prod-cluster"}


def subnet(sid: str, zone: str, free: int = 8187, *, tags: Mapping[str, str] | None = None, vpc: str = "vpc-0a1b2c3d",
           cidr: str = "10.0.0.0/19", zone_id: str = "") -> dict[str, Any]:
    """A DescribeSubnets item (tagged for `karpenter.sh/discovery: prod-cluster` unless `tags` says otherwise)."""
    return {"SubnetId": sid, "AvailabilityZone": zone, "AvailabilityZoneId": zone_id, "VpcId": vpc,
            "CidrBlock": cidr, "AvailableIpAddressCount": free, "State": "available",
            "Tags": [{"Key": k, "Value": v} for k, v in (DISCOVERY if tags is None else tags).items()]}


def group(gid: str, name: str, vpc: str = "vpc-0a1b2c3d", tags: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"GroupId": gid, "GroupName": name, "VpcId": vpc, "Description": name,
            "Tags": [{"Key": k, "Value": v} for k, v in (tags or {}).items()]}


def offerings(table: Mapping[str, Iterable[str]]) -> list[dict[str, Any]]:
    return [{"InstanceType": t, "LocationType": "availability-zone", "Location": z}
            for t, zones in table.items() for z in zones]


def spot(itype_: str, zone: str, price: str, when: datetime = NOW) -> dict[str, Any]:
    return {"AvailabilityZone": zone, "InstanceType": itype_, "ProductDescription": "Linux/UNIX",
            "SpotPrice": price, "Timestamp": when}


def make_facts(snap: Snapshot, *, region: str = "us-east-1", subnets: Iterable[dict[str, Any]] = (),
               groups: Iterable[dict[str, Any]] = (), types: Iterable[dict[str, Any]] = TYPES,
               offered: Mapping[str, Iterable[str]] | None = None, prices: Iterable[dict[str, Any]] = (),
               errors: Mapping[str, str] | None = None) -> AwsFacts:
    """What the AWS source would hold after reading these API answers for the snapshot's objects."""
    plan = plan_reads(*split_inputs(snap))
    subs = [parse_subnet(s) for s in subnets]
    queried = {af.Q_SUBNET_TAG_KEYS: frozenset(plan.subnet_tag_keys), af.Q_SUBNET_IDS: frozenset(plan.subnet_ids),
               af.Q_SG_TAG_KEYS: frozenset(plan.sg_tag_keys), af.Q_SG_IDS: frozenset(plan.sg_ids),
               af.Q_SG_NAMES: frozenset(plan.sg_names), af.Q_VPCS: frozenset(s.vpc_id for s in subs),
               af.Q_TYPE_PATTERNS: frozenset(af.ACCELERATED_PATTERNS)}
    its = {t.name: t for t in map(parse_instance_type, types)}
    offer: dict[str, set[str]] = {}
    for o in offerings(offered or {}):
        offer.setdefault(o["InstanceType"], set()).add(o["Location"])
    spots = [p for p in map(parse_spot_price, prices) if p is not None]
    return AwsFacts(region=region, fetched_at=NOW, region_from="node providerIDs",
                    subnets={s.id: s for s in subs},
                    security_groups={g.id: g for g in map(parse_security_group, groups)},
                    instance_types=its, offerings={k: frozenset(v) for k, v in offer.items()},
                    spot_prices={(p.instance_type, p.zone): p for p in spots}, queried=queried,
                    errors=dict(errors or {}), calls=5)


def with_aws(snap: Snapshot, facts: AwsFacts | None,
             state: SourceState = SourceState.OK, detail: str = "") -> Snapshot:
    status = SourceStatus("aws", state, detail, updated_at=NOW if facts else None)
    return dataclasses.replace(snap, aws=facts, sources={**snap.sources, "aws": status})

