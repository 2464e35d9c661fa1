"""The chain an on-call engineer follows: pod -> NodeClaim -> node -> NodePool -> EC2NodeClass.

Lives in `diagnostics.relations` beside the "why is this pod pending" relation; kept importable here.
"""

from __future__ import annotations

from diagnostics.relations import chain, nominated_claim

__all__ = ["chain", "nominated_claim"]
