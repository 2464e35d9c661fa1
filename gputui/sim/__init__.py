"""A Kubernetes API simulator (aiohttp on 127.0.0.1) serving gputui scenarios to real clients."""

from __future__ import annotations

from gputui.sim.cluster import SimCluster
from gputui.sim.kubeconfig import write_kubeconfig
from gputui.sim.scenario import Scenario, ScenarioError, ScenarioSummary, list_scenarios, load_scenario

__all__ = [
    "Scenario",
    "ScenarioError",
    "ScenarioSummary",
    "SimCluster",
    "list_scenarios",
    "load_scenario",
    "write_kubeconfig",
]
