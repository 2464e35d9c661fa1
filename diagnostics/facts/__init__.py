"""Derived facts several checks share (pod fit, disruption, GPU counts, stacks, messages, metrics)."""
