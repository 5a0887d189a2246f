"""The social network of a run: a pydantic ``NetworkConfig`` turned into a networkx graph whose nodes
are 0..n−1 (node i carries the i-th agent of the agents table, ordered by ``agent_id``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from louder.errors import LouderError
from louder.sections import Section

if TYPE_CHECKING:
    import networkx as nx

# Allowed parameters per generator: name -> required? (n defaults to the number of agents).
PARAMS: dict[str, dict[str, bool]] = {
    "watts_strogatz": {"n": False, "k": True, "p": True},
    "barabasi_albert": {"n": False, "m": True},
    "erdos_renyi": {"n": False, "p": True},
    "homophily_sbm": {"group": True, "within": True, "mean_degree": True},
    "edge_list": {"path": True},
}


class NetworkConfig(Section):
    """``network:`` in the config: the social network of the agents (rounds of influence on it:
    ``influence:``). Examples::

        {generator: watts_strogatz, params: {k: 8, p: 0.1}, seed: 0}
        {generator: homophily_sbm, params: {group: political_ideology, within: 0.7, mean_degree: 8}}
        {generator: edge_list, params: {path: friends.txt}}
    """

    generator: Literal["watts_strogatz", "barabasi_albert", "erdos_renyi", "homophily_sbm", "edge_list"] = Field(
        description="networkx generator, or edge_list (a file of node pairs)")
    params: dict[str, Any] = Field({}, description="the generator's parameters: watts_strogatz {k, p}, "
                                   "barabasi_albert {m}, erdos_renyi {p}, homophily_sbm {group, within, mean_degree}, "
                                   "edge_list {path}")
    seed: int = Field(0, description="seed of the random graph")


def _bad(field: str, msg: str) -> LouderError:
    return LouderError(f"network.params.{field}: {msg}")


def _number(params: dict, name: str, kind: type, lo: float, hi: float | None = None):
    v = params[name]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (kind is int and not float(v).is_integer()):
        raise _bad(name, f"must be {'an integer' if kind is int else 'a number'}, got {v!r}")
    v = kind(v)
    if v < lo or (hi is not None and v > hi):
        raise _bad(name, f"must be between {lo} and {hi}, got {v}" if hi is not None else f"must be ≥ {lo}, got {v}")
    return v


def build_graph(config: NetworkConfig, agents: pd.DataFrame | None = None) -> nx.Graph:
    """The graph of ``config``, relabelled to 0..n−1 (Mesa's Network keys cells by node id, and the
    rounds index agents by node, so ids must be contiguous). ``agents`` (one row per agent) fixes n
    and is required by ``homophily_sbm``. Bad parameters raise one-line ``LouderError``s."""
    import networkx as nx  # here: `louder` reads a network config without building a graph

    params = dict(config.params)
    allowed = PARAMS[config.generator]
    for name in params:
        if name not in allowed:
            raise _bad(name, f"unknown parameter for {config.generator}; allowed: {', '.join(allowed)}")
    for name, required in allowed.items():
        if required and name not in params:
            raise _bad(name, f"{config.generator} needs it (allowed: {', '.join(allowed)})")
    if "n" in allowed:
        if "n" not in params:
            if agents is None:
                raise _bad("n", "give the number of nodes, or an agents table")
            params["n"] = len(agents)
        n = _number(params, "n", int, 1)
        if agents is not None and n != len(agents):
            raise _bad("n", f"is {n} but there are {len(agents)} agents; drop n or make them equal")
    seed = config.seed
    g = config.generator
    if g == "watts_strogatz":
        k, p = _number(params, "k", int, 0), _number(params, "p", float, 0, 1)
        if k >= n:
            raise _bad("k", f"must be smaller than n={n}, got {k}")
        graph = nx.watts_strogatz_graph(n, k, p, seed=seed)
    elif g == "barabasi_albert":
        m = _number(params, "m", int, 1)
        if m >= n:
            raise _bad("m", f"must be smaller than n={n}, got {m}")
        graph = nx.barabasi_albert_graph(n, m, seed=seed)
    elif g == "erdos_renyi":
        graph = nx.fast_gnp_random_graph(n, _number(params, "p", float, 0, 1), seed=seed)
    elif g == "homophily_sbm":
        graph = _homophily_sbm(params, agents, seed)
    else:
        graph = _edge_list(params["path"], agents)
    return nx.convert_node_labels_to_integers(graph, ordering="sorted")


def sparse_graph(config: NetworkConfig, n: int, agents=None):
    """The graph of ``config`` on ``n`` agents as a CSR ``louder.networks.sparse.Graph``, the same graph
    ``build_graph`` makes. Watts–Strogatz (the generator of large runs) is drawn straight into arrays;
    the others are built by networkx and converted once. ``agents``: a function giving the agents table
    (agent_id and the grouping column), called only by the generators that read it."""
    from louder.networks import sparse

    if config.generator == "watts_strogatz":
        params = dict(config.params)
        for name in params:
            if name not in PARAMS["watts_strogatz"]:
                raise _bad(name, f"unknown parameter for watts_strogatz; allowed: {', '.join(PARAMS['watts_strogatz'])}")
        for name in ("k", "p"):
            if name not in params:
                raise _bad(name, f"watts_strogatz needs it (allowed: {', '.join(PARAMS['watts_strogatz'])})")
        if "n" in params and _number(params, "n", int, 1) != n:
            raise _bad("n", f"is {params['n']} but there are {n} agents; drop n or make them equal")
        k, p = _number(params, "k", int, 0), _number(params, "p", float, 0, 1)
        if k >= n:
            raise _bad("k", f"must be smaller than n={n}, got {k}")
        return sparse.watts_strogatz(n, k, p, config.seed)
    table = agents() if callable(agents) else agents
    return sparse.from_networkx(build_graph(config, table if table is not None else
                                            pd.DataFrame({"agent_id": np.arange(n)})))


def _homophily_sbm(params: dict, agents: pd.DataFrame | None, seed: int) -> nx.Graph:
    """Stochastic block model with one block per value of ``group``.

    With E = n·d/2 expected edges (d = mean_degree) and w = within: p_in = w·E / Σ_b C(n_b, 2) and
    p_out = (1−w)·E / Σ_{b<b'} n_b·n_b', so a share w of all ties join agents of the same group.
    """
    import networkx as nx

    group = params["group"]
    if agents is None:
        raise _bad("group", "homophily_sbm needs the agents table to know each agent's group")
    if group not in agents.columns:
        raise _bad("group", f"no column {group!r} in the agents table (columns: {', '.join(map(str, agents.columns))})")
    within = _number(params, "within", float, 0, 1)
    d = _number(params, "mean_degree", float, 0)
    ordered = agents.sort_values("agent_id") if "agent_id" in agents.columns else agents
    labels = ordered[group].astype(str).to_numpy()
    values = sorted(set(labels))
    sizes = np.array([(labels == v).sum() for v in values], dtype=float)
    n = sizes.sum()
    pairs_in = (sizes * (sizes - 1) / 2).sum()
    pairs_out = (sizes.sum() ** 2 - (sizes ** 2).sum()) / 2
    edges = n * d / 2
    p_in = within * edges / pairs_in if pairs_in else 0.0
    p_out = (1 - within) * edges / pairs_out if pairs_out else 0.0
    if p_in > 1 or p_out > 1:
        raise _bad("mean_degree", f"{d} is too high for groups of sizes {sizes.astype(int).tolist()}; lower it")
    probs = [[p_in if i == j else p_out for j in range(len(values))] for i in range(len(values))]
    # nodelist puts node i (the i-th agent) into the block of its own group value
    nodelist = [i for v in values for i in np.flatnonzero(labels == v)]
    return nx.stochastic_block_model(sizes.astype(int).tolist(), probs, nodelist=[int(i) for i in nodelist],
                                     seed=seed, sparse=True)


def _edge_list(path: str, agents: pd.DataFrame | None) -> nx.Graph:
    """Whitespace-separated node pairs, one edge per line, ``#`` comments. Nodes are sorted (as
    integers when all are) and node i is the i-th agent."""
    import networkx as nx

    p = Path(path)
    if not p.is_file():
        raise _bad("path", f"no file {path}; give the path of an edge-list file")
    try:
        graph = nx.read_edgelist(p, comments="#", data=False, nodetype=str)
    except Exception as e:  # networkx raises several types for malformed lines
        raise _bad("path", f"{path} is not an edge list ('a b' per line): {e}") from None
    if all(x.lstrip("-").isdigit() for x in graph.nodes):
        graph = nx.relabel_nodes(graph, {x: int(x) for x in graph.nodes})
    if graph.number_of_nodes() == 0:
        raise _bad("path", f"{path} has no edges")
    if agents is not None and graph.number_of_nodes() != len(agents):
        raise _bad("path", f"{path} has {graph.number_of_nodes()} nodes but there are {len(agents)} agents")
    return graph
