"""Simulation: Mesa models of persona agents and the experiment runner that writes their data."""

from louder.simulation.model import BiasModel, Case
from louder.simulation.runner import RunResult, plan_cases, run_experiment

__all__ = ["BiasModel", "Case", "RunResult", "plan_cases", "run_experiment"]
