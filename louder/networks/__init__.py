"""Social networks, rounds of influence, no-LLM control rules and archetype mode (docs/networks.md)."""

from louder.networks.graphs import NetworkConfig, build_graph
from louder.networks.rounds import NeighbourCounts, Outcome, control_rule, neighbour_message, run_rounds
from louder.networks.space import InfluenceModel, NetworkAgent

__all__ = ["InfluenceModel", "NeighbourCounts", "NetworkAgent", "NetworkConfig", "Outcome", "build_graph",
           "control_rule", "neighbour_message", "run_rounds"]
