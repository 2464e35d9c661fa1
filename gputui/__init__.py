"""gputui: find why GPU workloads on Kubernetes + Karpenter are stuck."""

__version__ = "0.1.0"
