"""Simulation: Mesa models of persona agents, the experiment runner that writes their data, and
network runs (rounds of influence on a social network). Its section of the config is
``louder.sections.simulation``. The names below are loaded on first use: importing the package loads
no run (nor Mesa)."""

from importlib import import_module

_WHERE = {"BiasModel": "model", "Case": "model", "RunResult": "runner", "plan_cases": "runner",
          "run_experiment": "runner", "network_task": "network_run"}

__all__ = ["BiasModel", "Case", "RunResult", "network_task", "plan_cases", "run_experiment"]


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(import_module(f"louder.simulation.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'louder.simulation' has no attribute {name!r}")
