"""Simulation: Mesa models of persona agents, the experiment runner that writes their data, and
network runs (rounds of influence on a social network)."""

from louder.simulation.model import BiasModel, Case
from louder.simulation.runner import RunResult, plan_cases, run_experiment
from louder.simulation.network_run import network_task

__all__ = ["BiasModel", "Case", "RunResult", "network_task", "plan_cases", "run_experiment"]
