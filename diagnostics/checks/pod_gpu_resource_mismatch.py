"""A pending pod asks for a GPU resource its nodes do not offer, while they offer another form of the same GPUs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from diagnostics.facts.gpu_forms import GPU, Mismatch, mismatches, offered
from diagnostics.facts.gpu_units import MIG_PREFIX, SHARED, gpu_units, node_model
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.records import Node, Pod
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.facts.workloads import owner_workload

GKE_PARTITION = "cloud.google.com/gke-gpu-partition-size"
RENAMED = ".shared"
"""What renameByDefault appends to a time-sliced resource's name (k8s-device-plugin DefaultSharedResourceNameSuffix)."""

# MIG profiles each GPU offers (GPU Operator `assets/state-mig-manager/0400_configmap.yaml`, default-mig-parted-config),
# spelt as resource names spell them: the plugin turns '+' into '.' (`1g.10gb+me` -> nvidia.com/mig-1g.10gb.me,
# k8s-device-plugin internal/rm/rm.go), and the MIG manager's config for it is all-1g.10gb.me.
MIG_PROFILES: Mapping[str, tuple[str, ...]] = {
    "A100-40GB": ("1g.5gb", "1g.5gb.me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    "80GB": ("1g.10gb", "1g.10gb.me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "H100-NVL": ("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
    "96GB": ("1g.12gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
    "H200": ("1g.18gb", "1g.18gb.me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
    "A30": ("1g.6gb", "1g.6gb.me", "2g.12gb", "2g.12gb.me", "4g.24gb"),
}


def mig_family(node: Node) -> str:
    """Which MIG profile table applies to the node's GPU (from GFD's product label), '' when unknown."""
    product = (node.labels.get("nvidia.com/gpu.product") or "").upper()
    model = node_model(node)
    if "NVL" in product:
        return "H100-NVL"
    if model == "A30":
        return "A30"
    if model == "H200":
        return "H200"
    if "96GB" in product or model == "GH200":
        return "96GB"
    if "80GB" in product or model in ("H100", "H800"):
        return "80GB"
    if model == "A100" and "40GB" in product:
        return "A100-40GB"
    return ""


@check(code="GT405", slug="pod-gpu-resource-mismatch", title="GPU pods ask for the GPU resource their nodes offer",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("pods", "nodes"))
def pod_gpu_resource_mismatch(snap: Snapshot) -> Iterator[Finding | int]:
    """A pending pod asks for a MIG profile, `nvidia.com/gpu` or `nvidia.com/gpu.shared` its nodes offer only in another form.

    None of the nodes the pod may run on advertises the resource it asks for, while they offer the
    same GPUs in another form (other MIG profiles, time-sliced replicas, or whole GPUs).

    Why it matters:
    The scheduler only says `Insufficient nvidia.com/mig-1g.10gb`: it never says that the nodes are
    cut into other MIG profiles, or that time-slicing with `renameByDefault: true` advertises
    `nvidia.com/gpu.shared` instead of `nvidia.com/gpu`. Adding nodes does not help: new nodes
    are configured the same way.

    Fix:
    Ask for a resource the nodes offer (one of the MIG profiles they list, or
    `nvidia.com/gpu.shared`), or change the nodes: a MIG config with that profile
    (`nvidia.com/mig.config` label, for GPUs that support it) or `renameByDefault: false`.
    """
    examined, found = mismatches(snap)
    yield examined
    for pod, m in found.values():
        yield _finding(pod, m)


def _single_cut(nodes: tuple[Node, ...], profile: str) -> list[Node]:
    """Nodes under the MIG `single` strategy whose GFD product label says they are cut into `profile`."""
    return [n for n in nodes if n.labels.get("nvidia.com/mig.strategy") == "single"
            and n.labels.get("nvidia.com/gpu.product", "").endswith(f"-MIG-{profile}")]


def _offer_text(offered: Mapping[str, float]) -> str:
    return ", ".join(f"{k} x{v:g}" for k, v in sorted(offered.items()))


def _finding(pod: Pod, m: Mismatch) -> Finding:
    wl = owner_workload(pod)
    names = [n.name for n in m.nodes]
    ev: list[Evidence] = [Evidence.field(pod.ref, f"spec.containers[*].resources.requests[{m.resource}]", f"{m.want:g}")]
    for n in m.nodes[:4]:
        ev.append(Evidence.field(n.ref, "status.capacity", offered(n),
                                 note=f"{node_model(n) or 'GPU'} {gpu_units(n).text()}".strip()))
    for n in m.nodes[:2]:
        for key in ("nvidia.com/mig.config", "nvidia.com/mig.strategy", "nvidia.com/gpu.replicas",
                    "nvidia.com/gpu.sharing-strategy", "nvidia.com/gpu.product"):
            if n.labels.get(key):
                ev.append(Evidence.field(n.ref, f"metadata.labels[{key}]", n.labels[key]))
    ctr = next((name for name, req, lim in pod.container_requests if m.resource in req or m.resource in lim), "")
    set_cmd = (f"kubectl -n {wl.namespace} set resources {wl.resource} {wl.name}" + (f" -c {ctr}" if ctr else "")
               if wl.kind in ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet") else "")

    def swap(new: str) -> str:
        both = f"{m.resource}=0,{new}={m.want:g}"
        return f"{set_cmd} --requests={both} --limits={both}"
    migs = {k: v for k, v in m.offered.items() if k.startswith(MIG_PREFIX)}
    commands: list[str] = []
    where = f"the {len(names)} node(s) it may run on ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
    renamed = m.resource + RENAMED if m.resource.startswith(MIG_PREFIX) else ""
    if renamed and renamed in m.offered:
        # Time-slicing with renameByDefault renames every shared resource, MIG profiles too (k8s-device-plugin
        # api/config/v1 DefaultSharedRename): the nodes are cut into this profile already.
        title = (f"{pod.namespace}/{pod.name} asks for {m.resource}, but {where} advertise that MIG profile "
                 f"time-sliced as {renamed} (renameByDefault: true): {_offer_text(m.offered)}")
        text = (f"Request {renamed} (one replica of a shared MIG device), or set `renameByDefault: false` in the "
                "device plugin's sharing config so the profile keeps its name.")
        if set_cmd:
            commands.append(swap(renamed))
    elif m.resource.startswith(MIG_PREFIX) and any(n.labels.get(GKE_PARTITION) for n in m.nodes):
        # GKE advertises each MIG partition as nvidia.com/gpu; the node label names the partition size. There is no
        # MIG manager to relabel: a node pool is created with the size (gcloud --accelerator ...,gpu-partition-size).
        profile = m.resource[len(MIG_PREFIX):]
        sizes = sorted({n.labels[GKE_PARTITION] for n in m.nodes if n.labels.get(GKE_PARTITION)})
        title = (f"{pod.namespace}/{pod.name} asks for {m.resource}, but GKE advertises MIG partitions as "
                 f"nvidia.com/gpu (partition size {', '.join(sizes)} on {where})")
        text = (f"Request nvidia.com/gpu and select the partition with nodeSelector {GKE_PARTITION}={profile}"
                + ("." if profile in sizes else
                   f"; no candidate node is cut into {profile}: create a node pool with gpu-partition-size={profile}."))
        if set_cmd:
            commands.append(swap(GPU))
        if profile not in sizes:
            gke = next(n for n in m.nodes if n.labels.get(GKE_PARTITION))
            accel = gke.labels.get("cloud.google.com/gke-accelerator", "ACCELERATOR")
            count = gke.labels.get("cloud.google.com/gke-accelerator-count", "1")
            commands.append(f"gcloud container node-pools create {accel.replace('nvidia-', '')}-{profile.replace('.', '-')} "
                            f"--cluster CLUSTER --accelerator type={accel},count={count},gpu-partition-size={profile}"
                            f" --machine-type {gke.instance_type or 'MACHINE_TYPE'}")
    elif m.resource.startswith(MIG_PREFIX) and _single_cut(m.nodes, m.resource[len(MIG_PREFIX):]):
        # MIG strategy single: every slice is nvidia.com/gpu and GFD names the profile in the product label
        # (k8s-device-plugin README 'MIG strategies'): the nodes already have this profile.
        products = sorted({p for n in _single_cut(m.nodes, m.resource[len(MIG_PREFIX):])
                           if (p := n.labels.get("nvidia.com/gpu.product", ""))})
        title = (f"{pod.namespace}/{pod.name} asks for {m.resource}, but {where} use the MIG `single` strategy and "
                 f"advertise those slices as nvidia.com/gpu: {_offer_text(m.offered)}")
        text = (f"Request nvidia.com/gpu and select the slices with nodeSelector nvidia.com/gpu.product={products[0]}"
                if products else "Request nvidia.com/gpu (the MIG `single` strategy names every slice so)") + "."
        if set_cmd:
            commands.append(swap(GPU))
    elif m.resource.startswith(MIG_PREFIX):
        profile = m.resource[len(MIG_PREFIX):]
        offer = _offer_text(migs) if migs else _offer_text(m.offered)
        title = (f"{pod.namespace}/{pod.name} asks for MIG profile {m.resource}, which none of {where} offers; "
                 f"they offer {offer}")
        able = [n for n in m.nodes if profile in MIG_PROFILES.get(mig_family(n), ())]
        single = [n for n in m.nodes if n.labels.get("nvidia.com/mig.strategy") == "single"]
        text = f"Ask for a profile the nodes offer ({', '.join(sorted(migs)) or 'none'})"
        if migs and set_cmd:
            best = sorted(migs, key=lambda k: -migs[k])[0]
            commands.append(swap(best))
        if single and not migs:
            text += ("; these nodes use the MIG `single` strategy, which advertises every slice as nvidia.com/gpu: "
                     "request nvidia.com/gpu and select the profile with nodeSelector nvidia.com/gpu.product")
        if able:
            text += (f", or re-partition a node whose GPU supports {profile} ({', '.join(n.name for n in able[:3])}): "
                     f"the MIG manager applies the new config after evicting its GPU pods.")
            commands.append(f"kubectl label node {able[0].name} nvidia.com/mig.config=all-{profile} --overwrite")
        elif all(mig_family(n) for n in m.nodes):
            families = sorted(f for f, ps in MIG_PROFILES.items() if profile in ps)
            text += (f". No candidate node's GPU has a {profile} profile" +
                     (f" (it exists on {', '.join(families)} GPUs)" if families else "") + ".")
        else:  # a GPU whose profile table gputui does not carry (B200, GB200, RTX PRO ...): no claim either way
            text += (f". Whether {', '.join(sorted({node_model(n) or n.name for n in m.nodes if not mig_family(n)}))} "
                     f"GPUs offer {profile} is in the MIG manager's config (ConfigMap default-mig-parted-config): "
                     f"if it does, label a node nvidia.com/mig.config=all-{profile}.")
        if GPU not in m.offered:  # under the `single` strategy nvidia.com/gpu is offered: it is a slice there
            text += " Whole GPUs (nvidia.com/gpu) would not fit these nodes either while their GPUs are partitioned."
    elif m.resource == GPU and SHARED in m.offered:
        title = (f"{pod.namespace}/{pod.name} asks for nvidia.com/gpu, but {where} advertise time-sliced GPUs as "
                 f"nvidia.com/gpu.shared (renameByDefault: true): {_offer_text(m.offered)}")
        text = ("Request nvidia.com/gpu.shared (one replica of a shared GPU), or set `renameByDefault: false` in the "
                "device plugin's sharing config so shared GPUs keep the nvidia.com/gpu name.")
        if set_cmd:
            commands.append(swap(SHARED))
    elif m.resource == SHARED:
        title = (f"{pod.namespace}/{pod.name} asks for nvidia.com/gpu.shared, but {where} offer "
                 f"{_offer_text(m.offered)} (no time-slicing with renameByDefault there)")
        text = "Request nvidia.com/gpu, or enable time-slicing with renameByDefault: true on these nodes."
        if set_cmd:
            commands.append(swap(GPU))
    else:
        title = (f"{pod.namespace}/{pod.name} asks for whole GPUs ({m.resource}), but the GPUs of {where} are all "
                 f"MIG-partitioned: {_offer_text(m.offered)}")
        text = ("Request one of the offered MIG profiles, or turn MIG off on a node (its GPU pods are evicted "
                "first).")
        if m.nodes:
            commands.append(f"kubectl label node {m.nodes[0].name} nvidia.com/mig.config=all-disabled --overwrite")
    if any(n.labels.get(GKE_PARTITION) or n.labels.get("cloud.google.com/gke-max-shared-clients-per-gpu")
           for n in m.nodes):
        commands.append(f"kubectl get nodes -L cloud.google.com/gke-accelerator,{GKE_PARTITION},"
                        "cloud.google.com/gke-gpu-sharing-strategy,cloud.google.com/gke-max-shared-clients-per-gpu")
    else:
        commands.append("kubectl get nodes -L nvidia.com/mig.config,nvidia.com/mig.strategy,nvidia.com/gpu.replicas,"
                        "nvidia.com/gpu.product")
    return Finding(subject=pod.ref, title=title, evidence=tuple(ev), remediation=Remediation(text, tuple(commands)),
                   related=tuple(n.ref for n in m.nodes[:8]) + ((wl.ref,) if wl.kind != "Pod" else ()))

