"""Getting a Snapshot: the live store fed by informers, and one-shot (whole-cluster or pod-scoped) reads."""
