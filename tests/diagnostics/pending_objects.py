"""Real-shaped objects for the pending-pod checks (GT105, GT401-GT404): NodePools, a NodeClass, pods, events."""

from __future__ import annotations

GPU_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu, uid: np-gpu, creationTimestamp: "2026-08-01T00:00:00Z"}
spec:
  weight: 10
  template:
    metadata:
      labels: {workload-class: gpu}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g5, g6, g6e]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      taints:
      - {key: nvidia.com/gpu, value: "true", effect: NoSchedule}
      startupTaints:
      - {key: node.example.com/gpu-warmup, value: "true", effect: NoSchedule}
  limits: {cpu: "1000", nvidia.com/gpu: "16"}
status:
  nodes: 1
  resources: {cpu: "8", memory: 32Gi, pods: "58", ephemeral-storage: 100Gi, nodes: "1", nvidia.com/gpu: "1"}
  conditions:
  - {type: ValidationSucceeded, status: "True", reason: ValidationSucceeded}
  - {type: NodeClassReady, status: "True", reason: NodeClassReady}
  - {type: Ready, status: "True", reason: Ready}
"""

CPU_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default, uid: np-default, creationTimestamp: "2026-08-01T00:00:00Z"}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
  limits: {cpu: "1000"}
status:
  resources: {cpu: "64", memory: 256Gi, nodes: "4"}
  conditions:
  - {type: ValidationSucceeded, status: "True", reason: ValidationSucceeded}
  - {type: NodeClassReady, status: "True", reason: NodeClassReady}
  - {type: Ready, status: "True", reason: Ready}
"""

NODECLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu, uid: nc-gpu}
spec:
  role: KarpenterNodeRole-prod
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod}}]
status:
  subnets: [{id: subnet-0a1b2c3d, zone: us-east-1a}]
  securityGroups: [{id: sg-0a1b2c3d4e5f, name: eks-cluster-sg-prod}]
  conditions:
  - {type: Ready, status: "True", reason: Ready}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default, uid: nc-default}
spec:
  role: KarpenterNodeRole-prod
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod}}]
status:
  subnets: [{id: subnet-0a1b2c3d, zone: us-east-1a}]
  securityGroups: [{id: sg-0a1b2c3d4e5f, name: eks-cluster-sg-prod}]
  conditions:
  - {type: Ready, status: "True", reason: Ready}
"""


def pod(name: str = "trainer-7c9d8f6b5-x2x7k", *, gpus: str = '"1"', resource: str = "nvidia.com/gpu",
        tolerations: str = "", node_selector: str = "", affinity: str = "", extra_spec: str = "",
        status: str = "", owner: str = "ReplicaSet/trainer-7c9d8f6b5", namespace: str = "ml",
        created: str = "2026-08-21T09:30:00Z") -> str:
    """A Deployment-owned pending pod asking for accelerators in `limits` (the usual way)."""
    kind, _, owner_name = owner.partition("/")
    owners = (f"  ownerReferences: [{{apiVersion: apps/v1, kind: {kind}, name: {owner_name}, uid: o1, "
              f"controller: true}}]\n") if owner else ""
    labels = "  labels: {app: trainer, pod-template-hash: 7c9d8f6b5}\n" if kind == "ReplicaSet" else ""
    status = status or """status:
  phase: Pending
  conditions:
  - {type: PodScheduled, status: "False", reason: Unschedulable, lastTransitionTime: "2026-08-21T09:30:01Z",
     message: "0/5 nodes are available: 5 Insufficient nvidia.com/gpu."}
"""
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {namespace}
  uid: uid-{name}
  creationTimestamp: "{created}"
{labels}{owners}spec:
  schedulerName: default-scheduler
{tolerations}{node_selector}{affinity}{extra_spec}  containers:
  - name: trainer
    image: nvcr.io/nvidia/pytorch:25.01-py3
    resources:
      requests: {{cpu: "4", memory: 16Gi}}
      limits: {{{resource}: {gpus}}}
{status}"""


def event(name: str, reason: str, message: str, *, source: str = "karpenter", type_: str = "Warning",
          involved: str = "Pod/trainer-7c9d8f6b5-x2x7k", namespace: str | None = "ml", count: int = 1,
          last: str = "2026-08-21T09:58:00Z", first: str = "2026-08-21T09:30:05Z") -> str:
    """A core/v1 Event as `kubectl get events -o yaml` prints it (message single-quoted YAML)."""
    kind, _, obj = involved.partition("/")
    ns_line = f"  namespace: {namespace}\n" if namespace else ""
    inv_ns = f", namespace: {namespace}" if namespace else ""
    quoted = message.replace("'", "''")
    return f"""
apiVersion: v1
kind: Event
metadata:
  name: {name}
{ns_line}involvedObject: {{kind: {kind}, name: {obj}{inv_ns}}}
reason: {reason}
message: '{quoted}'
type: {type_}
source: {{component: {source}}}
count: {count}
firstTimestamp: "{first}"
lastTimestamp: "{last}"
"""


SCHED_INSUFFICIENT = ("0/5 nodes are available: 2 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint "
                      "{dedicated: system}. preemption: 0/5 nodes are available: 5 No preemption victims found for "
                      "incoming pod.")
