"""Agents placed on Mesa 3's ``mesa.discrete_space.Network``: one ``CellAgent`` per node."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from random import Random

import mesa
import networkx as nx
import numpy as np
import pandas as pd
from mesa.discrete_space import CellAgent, Network
from scipy import sparse


# Mesa 3.5 gives every Network cell a position from a spring layout unless told not to (layout=None):
# minutes at 2,000 nodes, and louder's networks are topological. Mesa 3.3 has no layout argument.
_TOPOLOGICAL = {"layout": None} if "layout" in inspect.signature(Network.__init__).parameters else {}


def topological_network(graph: nx.Graph, random: Random) -> Network:
    """Mesa's ``Network`` space on ``graph``, one agent per node, its cells without positions."""
    return Network(graph, capacity=1, random=random, **_TOPOLOGICAL)


class NetworkAgent(CellAgent):
    """An agent on node ``node``; ``attributes`` is its row of the agents table."""

    def __init__(self, model: mesa.Model, node: int, attributes: dict):
        super().__init__(model)
        self.node = node
        self.attributes = attributes
        self.outcome = None  # the agent's decision of the last completed round (set by the rounds)
        self.cell = model.grid[node]


def records(df: pd.DataFrame) -> list[dict]:
    """``df.to_dict("records")`` — the same values, a nullable column's missing value as None — built column
    by column: pandas' conversion row by row was half of building a network model."""
    cols = [[None if v is pd.NA else v for v in df[c].tolist()] if df[c].hasnans else df[c].tolist()
            for c in df.columns]
    return [dict(zip(df.columns, vals)) for vals in zip(*cols)]


class InfluenceModel(mesa.Model):
    """A Mesa model whose space is the social network; node i holds the i-th agent of ``agents``
    (sorted by ``agent_id`` when there is one). ``order`` is the order agents are created in; it
    must not matter (the rounds are synchronous), and the tests check that it does not."""

    def __init__(self, graph: nx.Graph, agents: pd.DataFrame | None = None, seed: int = 0,
                 order: Iterable[int] | None = None):
        super().__init__(rng=int(seed))  # not seed=: deprecated since Mesa 3.5, the same streams
        n = graph.number_of_nodes()
        if set(graph.nodes) != set(range(n)):
            raise ValueError("graph nodes must be 0..n-1; build it with louder.networks.build_graph")
        if agents is not None and len(agents) != n:
            raise ValueError(f"{len(agents)} agents for {n} nodes")
        rows = ([{}] * n if agents is None else
                records(agents.sort_values("agent_id") if "agent_id" in agents.columns else agents))
        self.grid = topological_network(graph, self.random)
        self.by_node: list[NetworkAgent | None] = [None] * n
        for node in (range(n) if order is None else order):
            self.by_node[node] = NetworkAgent(self, node, rows[node])
        self.round = 0

    def adjacency(self) -> sparse.csr_matrix:
        """The n × n 0/1 adjacency matrix read from the Mesa cells' connections (built once; the
        rounds use it to count every agent's neighbours' choices in one sparse product)."""
        rows, cols = [], []
        for cell in self.grid.all_cells:
            for other in cell.connections.values():
                rows.append(cell.coordinate)
                cols.append(other.coordinate)
        n = len(self.by_node)
        return sparse.csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, cols)), shape=(n, n))
