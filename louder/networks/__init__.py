"""Social networks, rounds of influence, no-LLM control rules and archetype mode (docs/networks.md)."""

import importlib

# Read on first use (PEP 562): a config that names a network needs only ``graphs``, and the rounds and their
# Mesa space would cost every `louder` command Mesa's import (half a second) otherwise.
_WHERE = {"NetworkConfig": "graphs", "build_graph": "graphs", "NeighbourCounts": "rounds", "Outcome": "rounds",
          "control_rule": "rounds", "neighbour_message": "rounds", "run_rounds": "rounds",
          "InfluenceModel": "space", "NetworkAgent": "space"}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
