"""Social networks, rounds of influence, no-LLM control rules and archetype mode (issue 12)."""

from louder.networks.graphs import NetworkConfig, build_graph
from louder.networks.space import InfluenceModel, NetworkAgent

__all__ = ["InfluenceModel", "NetworkAgent", "NetworkConfig", "build_graph"]
