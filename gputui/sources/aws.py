"""AWS source: EC2 subnets, security groups, GPU instance types, offerings and spot prices for the cluster.

What is read follows the cluster's objects: the EC2NodeClasses' subnet and security-group selector
terms, and - when a NodePool or node is about accelerators - the region's GPU/Neuron instance types,
where they are offered and their spot prices. Every read is a batch filter, so the number of calls
does not grow with the number of EC2NodeClasses or NodePools.

Credentials, profile, region and endpoint come from boto3's own configuration chain (`AWS_PROFILE`,
`AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL`, SSO, web identity, instance roles ...) plus `--aws-profile`
and `--aws-region`. The region, when not given on the command line, is the nodes' (labels or
providerIDs): querying another region than the cluster's would make every answer wrong. Without
nodes it is `AWS_REGION` (the AWS CLI v2 name, which botocore ignores), then boto3's own. No
credentials, a denied permission or an unreachable endpoint is a status, never an exception.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from typing import TYPE_CHECKING, Any

from diagnostics.facts import aws_facts as af
from diagnostics.facts.aws_facts import (
    ACCELERATED_PATTERNS,
    PERMISSIONS,
    AwsFacts,
    InstanceType,
    SecurityGroup,
    SpotPrice,
    Subnet,
    cluster_vpcs,
    pools_allowing_spot,
    region_of_zone,
)
from diagnostics.facts.gpu_pools import family_of, is_gpu_family, is_gpu_pool
from diagnostics.records import Node, NodeClass, NodePool
from diagnostics.snapshot import Snapshot, SourceState, SourceStatus, utcnow
from gputui.sources.poller import PollerThread
from gputui import __version__

if TYPE_CHECKING:
    import boto3
    from botocore.config import Config

log = logging.getLogger(__name__)

SOURCE = "aws"
FILTER_CHUNK = 100
"""Values per EC2 filter (EC2 caps filter values per call; 100 is safely below every cap)."""
MAX_PAGES = 20
"""Per read: a runaway pagination would cost minutes; 20 pages of 1000 subnets is plenty."""
SPOT_PRODUCTS = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")
CORE_PARTS = (af.SUBNETS, af.SECURITY_GROUPS)
"""Without these nothing about the EC2NodeClasses can be said: their denial makes the source forbidden."""

_DENIED = frozenset({"UnauthorizedOperation", "AccessDenied", "AccessDeniedException"})
_EXPIRED = frozenset({"ExpiredToken", "ExpiredTokenException", "RequestExpired", "TokenRefreshRequired"})
_REJECTED = frozenset({"AuthFailure", "InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch",
                       "IncompleteSignature", "InvalidAccessKeyId", "MissingAuthenticationToken"})


@dataclass(frozen=True)
class AwsConfig:
    """Only what the command line says; everything else is boto3's chain (env, ~/.aws, SSO, roles)."""

    profile: str | None = None
    region: str | None = None
    endpoint_url: str | None = None

    @classmethod
    def from_args(cls, args: Any) -> AwsConfig:
        return cls(profile=getattr(args, "aws_profile", None) or None,
                   region=getattr(args, "aws_region", None) or None,
                   endpoint_url=getattr(args, "aws_endpoint_url", None) or None)


class AwsUnavailable(Exception):
    """AWS cannot be used at all (no credentials, rejected credentials, unreachable): carries the status."""

    def __init__(self, status: SourceStatus) -> None:
        super().__init__(status.detail)
        self.status = status


@dataclass(frozen=True, slots=True)
class Failure:
    state: SourceState
    detail: str
    fatal: bool
    """True when every other call would fail the same way (credentials, network)."""


# --- what to read ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReadPlan:
    """The batch reads the cluster's objects call for; also the cache key (with the region)."""

    subnet_tag_keys: tuple[str, ...] = ()
    subnet_ids: tuple[str, ...] = ()
    sg_tag_keys: tuple[str, ...] = ()
    sg_ids: tuple[str, ...] = ()
    sg_names: tuple[str, ...] = ()
    accelerated: bool = False
    """Read GPU/Neuron instance types and their offerings (a GPU NodePool or GPU node exists)."""
    spot: bool = False
    """Read spot prices (a GPU NodePool allows spot)."""

    @property
    def empty(self) -> bool:
        return not (self.subnet_tag_keys or self.subnet_ids or self.sg_tag_keys or self.sg_ids or self.sg_names
                    or self.accelerated)


def split_inputs(snapshot_or_records: Snapshot | Iterable[Any]) -> tuple[list[Node], list[NodePool], list[NodeClass]]:
    if isinstance(snapshot_or_records, Snapshot):
        s = snapshot_or_records
        return list(s.nodes), list(s.nodepools), list(s.ec2nodeclasses)
    nodes: list[Node] = []
    pools: list[NodePool] = []
    classes: list[NodeClass] = []
    for r in snapshot_or_records:
        if isinstance(r, Node):
            nodes.append(r)
        elif isinstance(r, NodePool):
            pools.append(r)
        elif isinstance(r, NodeClass):
            classes.append(r)
    return nodes, pools, classes


def plan_reads(nodes: Sequence[Node], pools: Sequence[NodePool], classes: Sequence[NodeClass]) -> ReadPlan:
    s_keys: set[str] = set()
    s_ids: set[str] = set()
    g_keys: set[str] = set()
    g_ids: set[str] = set()
    g_names: set[str] = set()
    for nc in classes:
        for t in nc.subnet_terms:
            s_keys |= {str(k) for k in (t.get("tags") or {})}
            if t.get("id"):
                s_ids.add(str(t["id"]))
        for t in nc.security_group_terms:
            g_keys |= {str(k) for k in (t.get("tags") or {})}
            if t.get("id"):
                g_ids.add(str(t["id"]))
            if t.get("name"):
                g_names.add(str(t["name"]))
    # Only EC2 instances are AWS's to describe: GKE's g2-standard-8 also reads as a "g2" family.
    accelerated = any(is_gpu_pool(p) for p in pools) or any(
        n.instance_type and is_gpu_family(family_of(n.instance_type))
        and (not n.provider_id or n.provider_id.startswith("aws://")) for n in nodes)
    return ReadPlan(tuple(sorted(s_keys)), tuple(sorted(s_ids)), tuple(sorted(g_keys)), tuple(sorted(g_ids)),
                    tuple(sorted(g_names)), accelerated, accelerated and pools_allowing_spot(pools))


def detect_region(nodes: Iterable[Node], classes: Iterable[NodeClass] = ()) -> tuple[str | None, str]:
    """The cluster's region: node labels, else providerIDs (`aws:///us-east-1a/i-...`), else class zones."""
    votes: Counter[str] = Counter()
    how = ""
    for n in nodes:
        if n.provider_id and not n.provider_id.startswith("aws://"):
            continue  # another cloud's node (GKE's gce://...): its region label is not an AWS region
        label = n.labels.get("topology.kubernetes.io/region") or n.labels.get("failure-domain.beta.kubernetes.io/region")
        if label:
            votes[label] += 1
            how = how or "node labels"
            continue
        if n.provider_id.startswith("aws://"):
            zone = n.provider_id[len("aws://"):].strip("/").split("/")[0]
            region = region_of_zone(zone)
            if region:
                votes[region] += 1
                how = how or "node providerIDs"
    if not votes:
        for nc in classes:
            for s in nc.subnets:
                region = region_of_zone(str(s.get("zone") or ""))
                if region:
                    votes[region] += 1
                    how = "EC2NodeClass status.subnets zones"
    if not votes:
        return None, ""
    return votes.most_common(1)[0][0], how


# --- boto3, imported on first use ----------------------------------------------------------------
_CREDENTIAL_ENV = ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
                   "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI")
"""Variables that give botocore's chain something to load: keys, a profile, IRSA (web identity), ECS
and EKS Pod Identity (container credentials)."""
_EC2_DMI = ("/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/bios_vendor", "/sys/class/dmi/id/bios_version",
            "/sys/hypervisor/uuid")


def credentials_in_sight(config: AwsConfig | None = None) -> bool:
    """Could boto3's credential chain find anything here? Decided without importing boto3 (~0.1-0.3 s).

    Mirrors botocore's providers: environment keys and profiles, IRSA and container credentials,
    the shared credentials/config files (SSO, assume-role and credential_process live there), the
    legacy boto files, and an instance role, which only an EC2 machine (DMI vendor "Amazon EC2",
    a Xen `ec2...` hypervisor UUID) with instance metadata enabled can have. When this says no,
    boto3 would end in NoCredentialsError too (after dialling instance metadata, where enabled).
    """
    if config is not None and config.profile:
        return True  # boto3 says whether the profile exists
    env = os.environ
    if any(env.get(k) for k in _CREDENTIAL_ENV):
        return True
    files = (env.get("AWS_SHARED_CREDENTIALS_FILE") or "~/.aws/credentials", env.get("AWS_CONFIG_FILE") or "~/.aws/config",
             env.get("BOTO_CONFIG") or "~/.boto", "/etc/boto.cfg")
    if any(os.path.isfile(os.path.expanduser(f)) for f in files):
        return True
    if env.get("AWS_EC2_METADATA_DISABLED", "").lower() == "true":
        return False
    for path in _EC2_DMI:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read(200).strip().lower()
        except OSError:
            continue
        if "amazon" in text or text.startswith("ec2"):
            return True
    return False


def preload() -> None:
    """Import boto3 ahead of use: a one-shot does it while it waits for the Kubernetes API.

    boto3 is imported lazily (a tenth of a second or more) so that resolving the AWS settings and
    importing this module cost nothing until AWS is actually asked; with no credentials in sight
    it is never imported (the source says so without it).
    """
    if not credentials_in_sight():
        return
    for name in ("boto3", "botocore.session", "botocore.exceptions"):
        importlib.import_module(name)


@cache
def client_config() -> Config:
    """Short timeouts and standard retries: a dead endpoint costs seconds, never a hang."""
    from botocore.config import Config

    return Config(connect_timeout=3, read_timeout=5, retries={"mode": "standard", "max_attempts": 3},
                  user_agent_extra=f"gputui/{__version__}")


# --- errors ------------------------------------------------------------------------------------------
def classify(exc: BaseException, operation: str, profile: str | None = None) -> Failure:
    """An exception from boto3 as a source state: what a reader of the status line needs to act."""
    import botocore.exceptions as bex

    login = f"aws sso login --profile {profile}" if profile else "aws sso login"
    if isinstance(exc, bex.ClientError):
        err = exc.response.get("Error") or {}
        code, msg = str(err.get("Code") or ""), _short(str(err.get("Message") or ""))
        status = int((exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
        if code in _DENIED:
            return Failure(SourceState.FORBIDDEN, f"ec2:{operation}", fatal=False)
        if code in _EXPIRED:
            return Failure(SourceState.FORBIDDEN, f"AWS credentials expired ({code}): refresh them, e.g. {login}",
                           fatal=True)
        if code in _REJECTED:
            return Failure(SourceState.FORBIDDEN, f"AWS rejected the credentials ({code}: {msg})", fatal=True)
        if code == "OptInRequired":
            return Failure(SourceState.FORBIDDEN, f"region not enabled for this account ({code}: {msg})", fatal=True)
        return Failure(SourceState.UNREACHABLE, f"ec2:{operation} failed: {code or status}: {msg}".rstrip(": "),
                       fatal=False)
    if isinstance(exc, bex.ProfileNotFound):
        return Failure(SourceState.NOT_CONFIGURED, f"AWS profile {profile!r} not found in ~/.aws/config", True)
    if isinstance(exc, (bex.NoCredentialsError, bex.PartialCredentialsError)):
        return Failure(SourceState.NOT_CONFIGURED, _NO_CREDENTIALS, True)
    if isinstance(exc, (bex.SSOError, bex.TokenRetrievalError)):
        return Failure(SourceState.FORBIDDEN, f"AWS SSO session expired or missing: run {login}", True)
    if isinstance(exc, bex.CredentialRetrievalError):
        return Failure(SourceState.NOT_CONFIGURED, f"AWS credentials could not be loaded: {_short(str(exc))}", True)
    if isinstance(exc, bex.NoRegionError):
        return Failure(SourceState.NOT_CONFIGURED, _NO_REGION, True)
    if isinstance(exc, bex.ReadTimeoutError):
        # EC2 answered the connection but not this call in time: only this part is missing (a slow
        # spot price history must not throw away subnets and security groups already read).
        return Failure(SourceState.UNREACHABLE, f"ec2:{operation}: no answer in time ({_short(str(exc))})", False)
    if isinstance(exc, (bex.ConnectionError, bex.HTTPClientError)):
        return Failure(SourceState.UNREACHABLE, _short(str(exc)), True)
    if operation == "connect":  # before any call: a malformed setting in the environment or ~/.aws
        return Failure(SourceState.NOT_CONFIGURED, f"AWS configuration: {type(exc).__name__}: {_short(str(exc))}", True)
    return Failure(SourceState.UNREACHABLE, f"ec2:{operation}: {type(exc).__name__}: {_short(str(exc))}", False)


_NO_CREDENTIALS = ("no AWS credentials: set AWS_PROFILE or --aws-profile, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                   "or run where an IAM role is available")
_NO_REGION = "no AWS region: pass --aws-region (no node carries a providerID or region label)"


def _short(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:300]


# --- reading -----------------------------------------------------------------------------------------
def _chunks(values: Sequence[str], n: int = FILTER_CHUNK) -> Iterator[list[str]]:
    for i in range(0, len(values), n):
        yield list(values[i:i + n])


def _tags(d: dict[str, Any]) -> dict[str, str]:
    return {str(t.get("Key")): str(t.get("Value", "")) for t in d.get("Tags") or () if t.get("Key") is not None}


def parse_subnet(d: dict[str, Any]) -> Subnet:
    return Subnet(str(d["SubnetId"]), str(d.get("AvailabilityZone") or ""), str(d.get("AvailabilityZoneId") or ""),
                  str(d.get("VpcId") or ""), str(d.get("CidrBlock") or ""), int(d.get("AvailableIpAddressCount") or 0),
                  _tags(d), bool(d.get("Ipv6Native")))


def parse_security_group(d: dict[str, Any]) -> SecurityGroup:
    return SecurityGroup(str(d["GroupId"]), str(d.get("GroupName") or ""), str(d.get("VpcId") or ""), _tags(d))


def parse_instance_type(d: dict[str, Any]) -> InstanceType:
    gpus = (d.get("GpuInfo") or {}).get("Gpus") or []
    g0 = gpus[0] if gpus else {}
    neuron = (d.get("NeuronInfo") or {}).get("NeuronDevices") or []
    if not neuron:  # older shape for Inferentia (inf1)
        neuron = [a for a in (d.get("InferenceAcceleratorInfo") or {}).get("Accelerators") or []
                  if str(a.get("Manufacturer", "")).upper() == "AWS"]
    n0 = neuron[0] if neuron else {}
    net = d.get("NetworkInfo") or {}
    return InstanceType(
        name=str(d["InstanceType"]),
        gpus=sum(int(g.get("Count") or 0) for g in gpus),
        gpu_name=str(g0.get("Name") or ""),
        gpu_manufacturer=str(g0.get("Manufacturer") or ""),
        gpu_memory_mib=int((g0.get("MemoryInfo") or {}).get("SizeInMiB") or 0),
        neuron_devices=sum(int(n.get("Count") or 0) for n in neuron),
        accelerator_name=str(n0.get("Name") or ""),
        vcpus=int((d.get("VCpuInfo") or {}).get("DefaultVCpus") or 0),
        memory_mib=int((d.get("MemoryInfo") or {}).get("SizeInMiB") or 0),
        architectures=tuple(str(a) for a in (d.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ()),
        ips_per_eni=int(net.get("Ipv4AddressesPerInterface") or 0),
        max_enis=int(net.get("MaximumNetworkInterfaces") or 0),
    )


def parse_spot_price(d: dict[str, Any]) -> SpotPrice | None:
    try:
        price = float(d["SpotPrice"])
    except (KeyError, TypeError, ValueError):
        return None
    ts = d.get("Timestamp")
    return SpotPrice(str(d.get("InstanceType") or ""), str(d.get("AvailabilityZone") or ""), price,
                     ts if isinstance(ts, datetime) else None)


@dataclass
class _Reader:
    """One fetch: runs the batch reads, records what was asked, what failed and how many calls it took."""

    client: Any
    profile: str | None
    workers: int
    calls: int = 0
    items: dict[str, list[Any]] = field(default_factory=dict)
    queried: dict[str, set[str]] = field(default_factory=dict)
    errors: dict[str, Failure] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def pages(self, operation: str, method: str, key: str, **kw: Any) -> list[Any]:
        out: list[Any] = []
        for i, page in enumerate(self.client.get_paginator(method).paginate(**kw)):
            with self._lock:
                self.calls += 1
            out.extend(page.get(key) or ())
            if i + 1 >= MAX_PAGES:
                log.warning("aws: %s stopped after %d pages", operation, MAX_PAGES)
                break
        return out

    def run(self, jobs: Sequence[tuple[str, str, str, Sequence[str], Callable[[], list[Any]]]]) -> None:
        """Jobs are (part, operation, query key, values asked, call). Fatal failures raise AwsUnavailable."""
        if not jobs:
            return

        doomed: list[Failure] = []

        def one(job: tuple[str, str, str, Sequence[str], Callable[[], list[Any]]]) -> tuple[Any, Failure | None]:
            part, op, _q, _v, fn = job
            if doomed:  # credentials or network already failed: the rest would fail the same way
                return None, doomed[0]
            try:
                return fn(), None
            except Exception as exc:  # noqa: BLE001 - every failure becomes a status
                failure = classify(exc, op, self.profile)
                if failure.fatal:
                    doomed.append(failure)
                return None, failure

        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(jobs)))) as pool:
            results = list(pool.map(one, jobs))
        fatal = next((f for _r, f in results if f is not None and f.fatal), None)
        if fatal is not None:
            raise AwsUnavailable(SourceStatus(SOURCE, fatal.state, fatal.detail))
        for (part, _op, qkey, values, _fn), (got, failure) in zip(jobs, results, strict=True):
            if failure is not None:
                self.errors.setdefault(part, failure)
                continue
            self.items.setdefault(part, []).extend(got or ())
            if qkey:
                self.queried.setdefault(qkey, set()).update(values)


def fetch(client: Any, plan: ReadPlan, region: str, classes: Sequence[NodeClass], *, region_from: str = "",
          profile: str | None = None, now: Callable[[], datetime] = utcnow, workers: int = 4) -> AwsFacts:
    """All the reads for `plan`, in two rounds of batch calls. Raises AwsUnavailable when AWS is unusable."""
    r = _Reader(client, profile, workers)
    ops = {af.SUBNETS: "DescribeSubnets", af.SECURITY_GROUPS: "DescribeSecurityGroups",
           af.INSTANCE_TYPES: "DescribeInstanceTypes", af.OFFERINGS: "DescribeInstanceTypeOfferings",
           af.SPOT_PRICES: "DescribeSpotPriceHistory"}

    def subnets(name: str, values: list[str]) -> Callable[[], list[Any]]:
        return lambda: r.pages(ops[af.SUBNETS], "describe_subnets", "Subnets",
                               Filters=[{"Name": name, "Values": values}])

    def groups(name: str, values: list[str]) -> Callable[[], list[Any]]:
        return lambda: r.pages(ops[af.SECURITY_GROUPS], "describe_security_groups", "SecurityGroups",
                               Filters=[{"Name": name, "Values": values}])

    def type_offerings(names: list[str]) -> Callable[[], list[Any]]:
        return lambda: r.pages(ops[af.OFFERINGS], "describe_instance_type_offerings", "InstanceTypeOfferings",
                               LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": names}])

    def spot_prices(names: list[str], start: datetime) -> Callable[[], list[Any]]:
        return lambda: r.pages(ops[af.SPOT_PRICES], "describe_spot_price_history", "SpotPriceHistory",
                               InstanceTypes=names, ProductDescriptions=list(SPOT_PRODUCTS), StartTime=start)

    Job = tuple[str, str, str, Sequence[str], Callable[[], list[Any]]]
    first: list[Job] = []
    for filt, values, qkey, part, make in (
            ("tag-key", plan.subnet_tag_keys, af.Q_SUBNET_TAG_KEYS, af.SUBNETS, subnets),
            ("subnet-id", plan.subnet_ids, af.Q_SUBNET_IDS, af.SUBNETS, subnets),
            ("tag-key", plan.sg_tag_keys, af.Q_SG_TAG_KEYS, af.SECURITY_GROUPS, groups),
            ("group-id", plan.sg_ids, af.Q_SG_IDS, af.SECURITY_GROUPS, groups),
            ("group-name", plan.sg_names, af.Q_SG_NAMES, af.SECURITY_GROUPS, groups)):
        for chunk in _chunks(values):
            first.append((part, ops[part], qkey, chunk, make(filt, chunk)))
    if plan.accelerated:
        first.append((af.INSTANCE_TYPES, ops[af.INSTANCE_TYPES], af.Q_TYPE_PATTERNS, ACCELERATED_PATTERNS,
                      lambda: r.pages(ops[af.INSTANCE_TYPES], "describe_instance_types", "InstanceTypes",
                                      Filters=[{"Name": "instance-type", "Values": list(ACCELERATED_PATTERNS)}])))
    r.run(first)

    types = {t.name: t for t in map(parse_instance_type, r.items.get(af.INSTANCE_TYPES, ())) if t.accelerators}
    partial = _facts(r, region, region_from, now, types, {}, {})
    second: list[Job] = []
    vpcs = sorted(cluster_vpcs(partial, classes)) if af.SUBNETS not in r.errors else []
    for chunk in _chunks(vpcs):
        second.append((af.VPC_SUBNETS, ops[af.SUBNETS], af.Q_VPCS, chunk, subnets("vpc-id", chunk)))
    names = sorted(types)
    for chunk in _chunks(names):
        second.append((af.OFFERINGS, ops[af.OFFERINGS], "", chunk, type_offerings(chunk)))
    if plan.spot:
        start = datetime.now(timezone.utc)  # AWS's clock, not the (possibly shifted) snapshot clock
        for chunk in _chunks(names):
            second.append((af.SPOT_PRICES, ops[af.SPOT_PRICES], "", chunk, spot_prices(chunk, start)))
    r.run(second)

    offerings: dict[str, set[str]] = {}
    for o in r.items.get(af.OFFERINGS, ()):
        offerings.setdefault(str(o.get("InstanceType")), set()).add(str(o.get("Location")))
    prices: dict[tuple[str, str], SpotPrice] = {}
    for p in filter(None, map(parse_spot_price, r.items.get(af.SPOT_PRICES, ()))):
        key = (p.instance_type, p.zone)
        old = prices.get(key)
        if old is None or (p.timestamp and (old.timestamp is None or p.timestamp > old.timestamp)):
            prices[key] = p
    if af.INSTANCE_TYPES in r.errors:  # offerings without the types are unusable for the checks
        r.errors.setdefault(af.OFFERINGS, r.errors[af.INSTANCE_TYPES])
    return _facts(r, region, region_from, now, types, {k: frozenset(v) for k, v in offerings.items()}, prices)


def _facts(r: _Reader, region: str, region_from: str, now: Callable[[], datetime], types: dict[str, InstanceType],
           offerings: dict[str, frozenset[str]], prices: dict[tuple[str, str], SpotPrice]) -> AwsFacts:
    subs = {s.id: s for s in map(parse_subnet, [*r.items.get(af.SUBNETS, ()), *r.items.get(af.VPC_SUBNETS, ())])}
    sgs = {g.id: g for g in map(parse_security_group, r.items.get(af.SECURITY_GROUPS, ()))}
    errors = {part: (f"forbidden ({f.detail})" if f.state is SourceState.FORBIDDEN else f.detail)
              for part, f in r.errors.items()}
    returned = {str(d.get("InstanceType")) for d in r.items.get(af.INSTANCE_TYPES, ()) if d.get("InstanceType")}
    return AwsFacts(region=region, fetched_at=now(), region_from=region_from, subnets=subs, security_groups=sgs,
                    instance_types=types, offerings=offerings, spot_prices=prices,
                    queried={k: frozenset(v) for k, v in r.queried.items()}, errors=errors, calls=r.calls,
                    unmodeled_types=frozenset(returned - set(types)))


def status_of(facts: AwsFacts, endpoint: str | None = None) -> SourceStatus:
    """Forbidden when a core read (subnets, security groups) was denied; otherwise OK, naming what is missing."""
    denied = sorted({PERMISSIONS.get(p, p) for p, e in facts.errors.items() if e.startswith("forbidden")})
    core = [p for p in CORE_PARTS if p in facts.errors]
    if core:
        if any(facts.errors[p].startswith("forbidden") for p in core):
            return SourceStatus(SOURCE, SourceState.FORBIDDEN, ", ".join(denied), updated_at=facts.fetched_at)
        return SourceStatus(SOURCE, SourceState.UNREACHABLE, facts.errors[core[0]], updated_at=facts.fetched_at)
    bits = [f"region {facts.region}" + (f" (from {facts.region_from})" if facts.region_from else "")]
    if endpoint:
        bits.append(f"endpoint {endpoint}")
    bits.append(f"{facts.calls} EC2 calls")
    bits += [f"{part.replace('_', ' ')}: {err}" for part, err in sorted(facts.errors.items())]
    return SourceStatus(SOURCE, SourceState.OK, "; ".join(bits), updated_at=facts.fetched_at)


# --- the source ----------------------------------------------------------------------------------------
class AwsSource:
    """Reads AWS for a snapshot's objects, caching the facts for `ttl` seconds per (read plan, region).

    A changed selector or a new GPU NodePool changes the plan and so refetches at once; `force`
    (the TUI's refresh) ignores the cache. When a refresh finds AWS unreachable, the last good
    facts are returned as STALE. Safe to call from several threads (one fetch at a time).
    """

    def __init__(self, config: AwsConfig, *, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] = utcnow, client: Any = None, workers: int = 4) -> None:
        self.config = config
        self.ttl = ttl
        self.clock = clock
        self.now = now
        self.workers = workers
        self._client = client
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._cache: tuple[tuple[Any, ...], float, AwsFacts, SourceStatus] | None = None
        self._last: AwsFacts | None = None
        self.fetches = 0

    def invalidate(self) -> None:
        with self._lock:
            self._cache = None

    def collect(self, snapshot_or_records: Snapshot | Iterable[Any], *, force: bool = False
                ) -> tuple[AwsFacts | None, SourceStatus]:
        """The facts and the status to store; never raises."""
        try:
            return self._collect(snapshot_or_records, force)
        except Exception as exc:  # noqa: BLE001 - a bug here must not take the diagnosis down
            log.exception("aws collection failed")
            return None, SourceStatus(SOURCE, SourceState.UNREACHABLE, f"{type(exc).__name__}: {_short(str(exc))}")

    def _collect(self, inputs: Snapshot | Iterable[Any], force: bool) -> tuple[AwsFacts | None, SourceStatus]:
        nodes, pools, classes = split_inputs(inputs)
        plan = plan_reads(nodes, pools, classes)
        detected, how = detect_region(nodes, classes)
        key = (plan, self.config, detected)
        with self._lock:
            if not force and self._cache is not None and self._cache[0] == key \
                    and self.clock() - self._cache[1] < self.ttl:
                return self._cache[2], self._cache[3]
            if plan.empty:
                region = self.config.region or detected or ""
                facts = AwsFacts(region=region, fetched_at=self.now(), region_from=how)
                return facts, SourceStatus(SOURCE, SourceState.OK, "nothing to read: no EC2NodeClass selector, "
                                                                   "GPU NodePool or GPU node", updated_at=facts.fetched_at)
            if self._client is None and not credentials_in_sight(self.config):
                return None, SourceStatus(SOURCE, SourceState.NOT_CONFIGURED, _NO_CREDENTIALS)
            try:
                client, region, region_from = self._connect(detected, how)
                self.fetches += 1
                facts = fetch(client, plan, region, classes, region_from=region_from, profile=self.config.profile,
                              now=self.now, workers=self.workers)
            except AwsUnavailable as exc:
                status = exc.status
                if status.state is SourceState.UNREACHABLE and self._last is not None:
                    return self._last, SourceStatus(SOURCE, SourceState.STALE, status.detail,
                                                    updated_at=self._last.fetched_at)
                return None, status
            endpoint = self.config.endpoint_url or _custom_endpoint(client)
            status = status_of(facts, endpoint)
            if not status.state.usable:
                if status.state is SourceState.UNREACHABLE and self._last is not None:
                    return self._last, SourceStatus(SOURCE, SourceState.STALE, status.detail,
                                                    updated_at=self._last.fetched_at)
                return None, status
            self._cache = (key, self.clock(), facts, status)
            self._last = facts
            return facts, status

    def _connect(self, detected: str | None, how: str) -> tuple[Any, str, str]:
        """(client, region, how the region was chosen). Raises AwsUnavailable (not configured)."""
        import botocore.exceptions as bex

        cfg = self.config
        if self._client is not None:  # a prepared client (tests, embedding): its region is fixed
            return self._client, str(self._client.meta.region_name), "the client"
        try:
            session = new_session(cfg.profile)
            if cfg.region:
                region, region_from = cfg.region, "--aws-region"
            elif detected:
                region, region_from = detected, how
            elif os.environ.get("AWS_REGION"):  # the AWS CLI v2 / SDK name botocore itself ignores
                region, region_from = os.environ["AWS_REGION"], "AWS_REGION"
            else:
                region, region_from = session.region_name or "", "AWS config"
            if not region:
                raise bex.NoRegionError()
            if region in self._clients:
                return self._clients[region], region, region_from
            if session.get_credentials() is None:
                raise bex.NoCredentialsError()
            client = session.client("ec2", region_name=region, endpoint_url=cfg.endpoint_url, config=client_config())
        except Exception as exc:  # noqa: BLE001 - classified into a status
            f = classify(exc, "connect", cfg.profile)
            raise AwsUnavailable(SourceStatus(SOURCE, f.state, f.detail)) from None
        self._clients[region] = client
        return client, region, region_from


_shared: dict[str, Any] = {}
_shared_lock = threading.Lock()


def new_session(profile: str | None) -> boto3.Session:
    """A fresh boto3 session (its own credentials and profile) sharing one botocore data loader.

    The loader only caches botocore's JSON models; without sharing, every session re-reads the
    large EC2 model (half a second), which a poller or a test making sessions pays again and again.
    """
    import boto3
    import botocore.session

    bs = botocore.session.get_session()
    with _shared_lock:
        if "loader" in _shared:
            bs.register_component("data_loader", _shared["loader"])
        else:
            _shared["loader"] = bs.get_component("data_loader")
    return boto3.Session(botocore_session=bs, profile_name=profile)


def _custom_endpoint(client: Any) -> str | None:
    """The endpoint when it is not AWS's own (AWS_ENDPOINT_URL, a local emulator): worth showing."""
    url = str(getattr(client.meta, "endpoint_url", "") or "")
    return url if url and not url.endswith(".amazonaws.com") and ".amazonaws.com/" not in url else None


def collect_aws(snapshot_or_records: Snapshot | Iterable[Any], config: AwsConfig, *, client: Any = None,
                now: Callable[[], datetime] = utcnow, workers: int = 4) -> tuple[AwsFacts | None, SourceStatus]:
    """One-shot (diagnose, bundle): the facts and the status to put in the Snapshot. Never raises."""
    return AwsSource(config, client=client, now=now, workers=workers).collect(snapshot_or_records)


class AwsPoller(PollerThread):
    """Keeps the store's AWS facts fresh in one worker thread (rounds never overlap).

    Waits for the EC2NodeClasses, NodePools and nodes to sync first (they decide what to read),
    then every `interval` seconds asks the source, whose TTL cache makes most rounds free.
    """

    WAIT_FOR = ("ec2nodeclasses", "nodepools", "nodes")
    SOURCE_NAME = SOURCE

    def __init__(self, store: Any, config: AwsConfig, *, interval: float = 60.0, sync_timeout: float = 30.0,
                 source: AwsSource | None = None) -> None:
        super().__init__(store)
        self.source = source or AwsSource(config)
        self.interval = interval
        self.sync_timeout = sync_timeout
        self._force = False

    def refresh(self) -> None:
        """Read AWS again now, ignoring the cache (the TUI's refresh key)."""
        self._force = True
        self._wake.set()

    def poll_once(self) -> SourceStatus:
        force, self._force = self._force, False
        facts, status = self.source.collect(self.store.snapshot(), force=force)
        self.store.set_extra(SOURCE, facts, status)
        self.rounds += 1
        return status

    def _loop(self) -> None:
        self.store.wait_synced(self.WAIT_FOR, self.sync_timeout)
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception as exc:  # never let the worker die silently
                log.exception("aws poll failed")
                self.store.set_extra(SOURCE, None, SourceStatus(SOURCE, SourceState.UNREACHABLE,
                                                                f"{type(exc).__name__}: {_short(str(exc))}"))
            self._wake.wait(self.interval)
            self._wake.clear()
