"""Screens: overview, findings, evidence, object details, YAML, help and modals."""
