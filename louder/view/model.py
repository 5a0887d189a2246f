"""A Mesa model that replays a recorded network run round by round; it never calls a model."""

from __future__ import annotations

import mesa
import networkx as nx
from mesa.discrete_space import CellAgent

from louder.networks.space import topological_network
from louder.view.data import case_band, case_frames, load_view_data, sample_nodes

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p"]


class NodeAgent(CellAgent):
    """One agent of the recorded run, on its node; its decision is the recorded one of the round."""

    def __init__(self, model: ReplayModel, node: int, attribute: str):
        super().__init__(model)
        self.node, self.attribute = node, attribute
        self.status: str | None = None
        self.target: bool | None = None
        self.decision: str | None = None


class ReplayModel(mesa.Model):
    """One case of a recorded run on Mesa's ``Network`` space. ``round`` is where it starts; each
    ``step`` moves one round on, and ``goto`` to any recorded round. ``running`` is False at the
    last round, so SolaraViz's ▶ stops there instead of redrawing the same round forever."""

    def __init__(self, run_dir: str = ".", case: str | None = None, round: int = 0, max_nodes: int = 2000,
                 seed: int = 0):
        super().__init__(rng=int(seed))  # not seed=: deprecated since Mesa 3.5, the same streams
        data = load_view_data(run_dir)
        self.case = case if case in data.cases else data.cases[0]
        self.archetype = data.archetype
        self.band = case_band(data, self.case)  # the DPD band louder analyze wrote for it (else computed alike)
        decisions, edges, self.control = case_frames(data, self.case)
        self.decisions = decisions
        all_nodes = decisions["node"].drop_duplicates().to_numpy()
        keep = sample_nodes(all_nodes, max_nodes, seed)
        self.n_nodes, self.sampled = len(all_nodes), len(keep) < len(all_nodes)
        graph = nx.Graph()
        graph.add_nodes_from(int(n) for n in keep)
        kept = set(graph.nodes)
        graph.add_edges_from((int(s), int(t)) for s, t in edges[["source", "target"]].itertuples(index=False)
                             if s in kept and t in kept)
        # Mesa's Network places agents by node id: relabel to 0..m−1 so no node is dropped.
        order = sorted(graph.nodes)
        self.grid = topological_network(nx.relabel_nodes(graph, {n: i for i, n in enumerate(order)}), self.random)
        attributes = decisions.drop_duplicates("node").set_index("node")["attribute"]
        self.attributes = sorted(attributes.unique())
        self.marker = {a: MARKERS[i % len(MARKERS)] for i, a in enumerate(self.attributes)}
        for i, n in enumerate(order):
            agent = NodeAgent(self, n, attributes[n])
            agent.cell = self.grid[i]
        self.last_round = int(decisions["round"].max())
        self.goto(round)

    def goto(self, round: int) -> None:
        self.round = max(0, min(int(round), self.last_round))
        self.running = self.round < self.last_round
        self._apply()

    def _apply(self) -> None:
        rows = self.decisions[self.decisions["round"] == self.round].set_index("node")
        for a in self.agents:
            r = rows.loc[a.node] if a.node in rows.index else None
            a.status = None if r is None else r["status"]
            a.decision = None if r is None else r["decision"]
            a.target = None if r is None or r["status"] != "valid" else bool(r["target"])

    def step(self) -> None:
        self.goto(self.round + 1)


def portrayal(agent: NodeAgent):
    """Colour by the round's decision (target / other / not valid), marker by attribute."""
    from mesa.visualization.components import AgentPortrayalStyle

    color = "#bbbbbb" if agent.target is None else ("#d62728" if agent.target else "#1f77b4")
    return AgentPortrayalStyle(color=color, marker=agent.model.marker[agent.attribute], size=60, zorder=2,
                               edgecolors="black", linewidths=0.3)
