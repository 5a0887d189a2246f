"""The network as arrays (louder/networks/sparse.py, issue 49): the same graphs as networkx and the same
control-rule decisions as ``run_rounds``, agent for agent, in a CSR pattern and a few vectors."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from louder.networks import InfluenceModel, NetworkConfig, build_graph
from louder.networks.graphs import sparse_graph
from louder.networks.rounds import Outcome, control_rule, run_rounds
from louder.networks.sparse import STATUSES, ControlState, control_step, from_networkx, watts_strogatz

CHOICES3 = ["Evacuate", "Stay", "Shelter"]


@pytest.mark.parametrize("n, k, p, seed", [(10, 4, 0.5, 1), (50, 6, 0.9, 3), (200, 6, 0.2, 2), (3000, 8, 0.1, 0),
                                           (7, 6, 1.0, 5), (30, 0, 0.5, 1), (30, 1, 0.5, 1), (40, 3, 0.0, 4)])
def test_watts_strogatz_is_networkx_graph_edge_for_edge(n, k, p, seed):
    """The same random draws in the same order: every rewired edge lands where networkx puts it
    (p = 1 and a 7-node graph exercise the retries and the 'neighbours everyone' exit)."""
    ours = watts_strogatz(n, k, p, seed)
    theirs = from_networkx(nx.watts_strogatz_graph(n, k, p, seed=seed))
    assert np.array_equal(ours.indptr, theirs.indptr) and np.array_equal(ours.indices, theirs.indices)
    assert ours.number_of_edges() == nx.watts_strogatz_graph(n, k, p, seed=seed).number_of_edges()
    edges = np.concatenate([np.column_stack(e) for e in ours.edges(chunk=64)]) if n else np.empty((0, 2))
    assert len(edges) == ours.number_of_edges() and (edges[:, 0] < edges[:, 1]).all()
    assert set(map(tuple, edges.tolist())) == {tuple(sorted(e)) for e in nx.watts_strogatz_graph(n, k, p, seed=seed).edges}


def test_sparse_graph_is_build_graph_for_every_generator(tmp_path):
    agents = pd.DataFrame({"agent_id": range(120), "g": ["a", "b", "c"] * 40})
    (tmp_path / "e.txt").write_text("".join(f"{i} {(i * 7 + 3) % 120}\n" for i in range(120)))
    for gen, params in [("watts_strogatz", {"k": 4, "p": 0.3}), ("barabasi_albert", {"m": 2}),
                        ("erdos_renyi", {"p": 0.05}), ("homophily_sbm", {"group": "g", "within": 0.8, "mean_degree": 4}),
                        ("edge_list", {"path": str(tmp_path / "e.txt")})]:
        cfg = NetworkConfig(generator=gen, params=params, seed=3)
        a, b = sparse_graph(cfg, 120, lambda: agents), from_networkx(build_graph(cfg, agents))
        assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices), gen


def test_bad_watts_strogatz_parameters_are_one_line():
    from louder.errors import LouderError

    for params, msg in [({"k": 10, "p": 0.1}, "network.params.k: must be smaller than n=10"),
                        ({"k": 4}, "network.params.p: watts_strogatz needs it"),
                        ({"k": 4, "p": 2}, "network.params.p: must be between 0 and 1"),
                        ({"k": 4, "p": 0.1, "q": 1}, "network.params.q: unknown parameter")]:
        with pytest.raises(LouderError, match=msg):
            sparse_graph(NetworkConfig(generator="watts_strogatz", params=params), 10)


def _outcomes(rng, n, choices):
    out = []
    for u in rng.random(n):
        if u < 0.08:
            out.append(Outcome(None, STATUSES[1 + int(u * 100) % 3]))
        else:
            c = choices[int(u * 1000) % len(choices)]
            out.append(Outcome(c, p_target=None if u > 0.9 else float(rng.random())))
    return out


def _state(outcomes, choices):
    return ControlState(np.array([choices.index(o.decision) if o.status == "valid" else -1 for o in outcomes], np.int8),
                        np.array([STATUSES.index(o.status) for o in outcomes], np.int8),
                        np.array([np.nan if o.p_target is None else o.p_target for o in outcomes]))


@pytest.mark.parametrize("choices", [["Evacuate", "Stay"], CHOICES3])
@pytest.mark.parametrize("rule, params", [("majority", {}), ("threshold", {"threshold": 0.4}),
                                          ("threshold", {"threshold": 0.0}), ("degroot", {"self_weight": 0.3}),
                                          ("degroot", {"self_weight": 1.0})])
def test_control_step_equals_run_rounds_agent_for_agent(rule, params, choices):
    """Ties, agents with no valid neighbour, invalid/refused/error agents that keep their answer, isolated
    nodes, probabilities or none: every round of the vectorised rule is run_rounds' (on 3 seeds)."""
    for seed in range(3):
        rng = np.random.default_rng(seed)
        g = nx.gnp_random_graph(300, 0.02, seed=seed)
        initial = _outcomes(rng, 300, choices)
        rows = run_rounds(InfluenceModel(g, seed=0), initial, 4, control_rule(rule, choices, choices[0], **params),
                          choices, choices[0]).sort_values(["round", "node"])
        graph = from_networkx(g)
        adj = graph.adjacency()
        state = _state(initial, choices)
        for r in range(1, 5):
            state = control_step(adj, state, rule, choices, choices[0], **params)
            want = rows[rows["round"] == r]
            got = [choices[c] if s == 0 else None for c, s in zip(state.choice, state.status)]
            assert got == [None if pd.isna(d) else d for d in want["decision"]], (rule, seed, r)
            assert [STATUSES[s] for s in state.status] == want["status"].tolist()
        # a shard decides its rows only, from every agent's state: the same decisions
        nodes = np.arange(0, 300, 3)
        full = control_step(adj, _state(initial, choices), rule, choices, choices[0], **params)
        part = control_step(graph.rows(nodes).adjacency(), _state(initial, choices), rule, choices, choices[0],
                            nodes=nodes, **params)
        assert np.array_equal(part.choice, full.choice[nodes]) and np.array_equal(part.status, full.status[nodes])


def test_graph_rows_keep_each_agents_neighbours():
    g = watts_strogatz(500, 6, 0.3, 1)
    nodes = np.array([0, 7, 499, 250, 3])
    part = g.rows(nodes)
    for i, v in enumerate(nodes):
        assert part.indices[part.indptr[i]:part.indptr[i + 1]].tolist() == \
            g.indices[g.indptr[v]:g.indptr[v + 1]].tolist()
