"""Networks on Mesa, synchronous rounds of influence, control rules and archetype mode."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from mesa.discrete_space import CellAgent, Network

from louder.analysis.stats.network import dpd_by_round, with_archetype_clusters
from louder.errors import LouderError
from louder.networks import InfluenceModel, NetworkConfig, build_graph
from louder.networks.archetype import (
    ROUND0,
    ArchetypeTable,
    archetype_decide,
    assign_replicates,
    bucket_of,
    call_plan,
    initial_outcomes,
    share_buckets,
)
from louder.networks.rounds import NeighbourCounts, Outcome, control_rule, neighbour_message, run_rounds, share_message

CHOICES, TARGET = ["Evacuate", "Stay"], "Evacuate"
E, S = Outcome("Evacuate"), Outcome("Stay")


def decisions(rows: pd.DataFrame, r: int) -> list:
    return rows[rows["round"] == r].sort_values("node")["decision"].tolist()


# --- graphs -------------------------------------------------------------------------------------

def test_generators_give_contiguous_nodes_and_agents_live_on_mesa_network():
    for gen, params in [("watts_strogatz", {"k": 4, "p": 0.2}), ("barabasi_albert", {"m": 2}),
                        ("erdos_renyi", {"p": 0.1})]:
        g = build_graph(NetworkConfig(generator=gen, params=params, seed=1), pd.DataFrame({"agent_id": range(50)}))
        assert sorted(g.nodes) == list(range(50))
        model = InfluenceModel(g, seed=1)
        assert isinstance(model.grid, Network) and len(model.agents) == 50
        for agent in model.agents:
            assert isinstance(agent, CellAgent) and agent.cell.coordinate == agent.node
            assert {a.node for a in agent.cell.neighborhood.agents} == set(g.neighbors(agent.node))
        assert (model.adjacency().toarray() == nx.to_numpy_array(g, nodelist=range(50))).all()


def test_same_seed_same_graph_and_edge_list_relabelled(tmp_path):
    cfg = NetworkConfig(generator="watts_strogatz", params={"n": 30, "k": 4, "p": 0.3}, seed=7)
    assert set(build_graph(cfg).edges) == set(build_graph(cfg).edges)
    f = tmp_path / "edges.txt"
    f.write_text("# friends\n10 30\n30 20\n20 10\n40 10\n")
    g = build_graph(NetworkConfig(generator="edge_list", params={"path": str(f)}))
    assert sorted(g.nodes) == [0, 1, 2, 3] and set(map(frozenset, g.edges)) == {
        frozenset(e) for e in [(0, 2), (2, 1), (1, 0), (3, 0)]}


def test_homophily_sbm_puts_the_asked_share_of_ties_within_groups():
    rng = np.random.default_rng(0)
    agents = pd.DataFrame({"agent_id": range(3000), "political_ideology": rng.choice(["L", "M", "C"], 3000)})
    cfg = NetworkConfig(generator="homophily_sbm", params={"group": "political_ideology", "within": 0.7,
                                                           "mean_degree": 8}, seed=3)
    g = build_graph(cfg, agents)
    lab = agents["political_ideology"].to_numpy()
    within = np.mean([lab[u] == lab[v] for u, v in g.edges])
    assert abs(within - 0.7) < 0.02
    assert abs(2 * g.number_of_edges() / 3000 - 8) < 0.3


@pytest.mark.parametrize("cfg, agents, message", [
    ({"generator": "watts_strogatz", "params": {"n": 10, "k": 12, "p": 0.1}}, None,
     "network.params.k: must be smaller"),
    ({"generator": "watts_strogatz", "params": {"n": 10, "k": 2, "q": 0.1}}, None, "network.params.q: unknown"),
    ({"generator": "watts_strogatz", "params": {"n": 10, "k": 2}}, None, "network.params.p: watts_strogatz needs"),
    ({"generator": "erdos_renyi", "params": {"n": 10, "p": 1.5}}, None, "network.params.p: must be between"),
    ({"generator": "barabasi_albert", "params": {"m": 2}}, None, "network.params.n: give the number"),
    ({"generator": "erdos_renyi", "params": {"n": "ten", "p": 0.5}}, None, "network.params.n: must be an integer"),
    ({"generator": "edge_list", "params": {"path": "/nonexistent/edges.txt"}}, None, "network.params.path: no file"),
    ({"generator": "homophily_sbm", "params": {"group": "race", "within": 0.7, "mean_degree": 4}},
     pd.DataFrame({"agent_id": range(5), "gender": ["a"] * 5}), "network.params.group: no column 'race'"),
    ({"generator": "homophily_sbm", "params": {"group": "g", "within": 0.7, "mean_degree": 40}},
     pd.DataFrame({"agent_id": range(6), "g": list("aabbcc")}), "network.params.mean_degree: 40.0 is too high"),
])
def test_bad_network_params_are_one_line_errors(cfg, agents, message):
    with pytest.raises(LouderError) as e:
        build_graph(NetworkConfig(**cfg), agents)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


# --- rounds and control rules ---------------------------------------------------------------------

def two_cliques() -> nx.Graph:
    g = nx.disjoint_union(nx.complete_graph(5), nx.complete_graph(5))
    g.add_edge(4, 5)  # the bridge
    return g


def test_two_cliques_joined_by_a_bridge_stay_split_under_majority():
    g = two_cliques()
    # clique A leans Evacuate (one dissenter), clique B leans Stay (one dissenter, on the bridge)
    initial = [E, E, S, E, E, E, S, S, S, S]
    rows = run_rounds(InfluenceModel(g), initial, 4, control_rule("majority", CHOICES, TARGET), CHOICES, TARGET)
    for r in range(1, 5):
        assert decisions(rows, r) == ["Evacuate"] * 5 + ["Stay"] * 5
    r1 = rows[rows["round"] == 1].set_index("node")
    assert r1.loc[2, "changed"] and r1.loc[5, "changed"] and not r1.loc[0, "changed"]
    # node 4 (bridge end in A): neighbours 0, 1, 2, 3 (E, E, S, E) and 5 (E in round 0) → 4 of 5
    assert r1.loc[4, "neighbours"] == 5 and r1.loc[4, "neighbour_share"] == pytest.approx(4 / 5)
    # node 5 (bridge end in B): neighbours 6–9 (all S) and 4 (E) → 1 of 5
    assert r1.loc[5, "neighbour_share"] == pytest.approx(1 / 5)


def test_complete_graph_converges_in_one_round():
    initial = [E] * 5 + [S] * 2
    rows = run_rounds(InfluenceModel(nx.complete_graph(7)), initial, 3, control_rule("majority", CHOICES, TARGET),
                      CHOICES, TARGET)
    assert decisions(rows, 1) == ["Evacuate"] * 7
    assert decisions(rows, 2) == decisions(rows, 3) == ["Evacuate"] * 7


@pytest.mark.parametrize("rule, params", [("majority", {}), ("threshold", {"threshold": 0.4}),
                                          ("degroot", {"self_weight": 0.3})])
def test_agent_creation_order_changes_nothing(rule, params):
    g = build_graph(NetworkConfig(generator="watts_strogatz", params={"n": 200, "k": 6, "p": 0.2}, seed=2))
    rng = np.random.default_rng(0)
    initial = [Outcome("Evacuate" if u < 0.4 else "Stay", p_target=float(u)) if u < 0.95 else Outcome(None, "error")
               for u in rng.random(200)]
    order = list(range(200))
    random.Random(5).shuffle(order)
    runs = [run_rounds(InfluenceModel(g, seed=9, order=o), initial, 4, control_rule(rule, CHOICES, TARGET, **params),
                       CHOICES, TARGET).sort_values(["round", "node"]).reset_index(drop=True)
            for o in (None, order, order[::-1])]
    pd.testing.assert_frame_equal(runs[0], runs[1])
    pd.testing.assert_frame_equal(runs[0], runs[2])
    assert runs[0]["changed"].fillna(False).any()  # the rule did something


def test_share_dependent_fake_produces_the_hand_computed_cascade():
    """Path 0-1-2-3; the fake evacuates iff at least half its valid neighbours did.
    Round 0: E S S S → round 1: S E S S → round 2: E S E S → round 3: S E S E (by hand)."""
    calls = []

    def fake(agent, nb, share):
        calls.append((agent.model.round, agent.node, share))
        return E if share >= 0.5 else S

    rows = run_rounds(InfluenceModel(nx.path_graph(4)), [E, S, S, S], 3, fake, CHOICES, TARGET)
    short = {"Evacuate": "E", "Stay": "S"}
    assert ["".join(short[d] for d in decisions(rows, r)) for r in range(4)] == ["ESSS", "SESS", "ESES", "SESE"]
    assert sorted(c for c in calls if c[0] == 1) == [(1, 0, 0.0), (1, 1, 0.5), (1, 2, 0.0), (1, 3, 0.0)]
    r2 = rows[rows["round"] == 2].set_index("node")
    assert r2["neighbour_share"].tolist() == [1.0, 0.0, 0.5, 0.0]
    assert r2["changed"].tolist() == [True, True, True, False]


def test_invalid_refused_error_neighbours_are_reported_and_excluded():
    seen = {}

    def fake(agent, nb, share):
        seen[agent.node] = (nb, share)
        return agent.outcome

    initial = [S, E, Outcome(None, "invalid"), Outcome(None, "refused"), Outcome(None, "error"), S]
    rows = run_rounds(InfluenceModel(nx.star_graph(5)), initial, 1, fake, CHOICES, TARGET)
    nb, share = seen[0]
    assert nb.total == 5 and dict(nb.counts) == {"Evacuate": 1, "Stay": 1}
    assert (nb.invalid, nb.refused, nb.error) == (1, 1, 1) and share == 0.5
    assert seen[2][1] == 0.0  # a leaf sees only the centre (Stay)
    r1 = rows[rows["round"] == 1].set_index("node")
    assert r1.loc[0, "neighbours_valid"] == 2 and r1.loc[2, "status"] == "invalid" and pd.isna(r1.loc[2, "changed"])
    assert pd.isna(r1.loc[2, "target"]) and r1.loc[1, "target"] == True  # noqa: E712
    assert "gave no clear answer" in neighbour_message(nb, CHOICES, TARGET)


def test_neighbour_message_template():
    nb = NeighbourCounts(total=8, counts={"Evacuate": 6, "Stay": 2}, invalid=0, refused=0, error=0, mean_p_target=0.75)
    assert neighbour_message(nb, CHOICES, TARGET) == (
        "Of the 8 people you know best, 6 decided to evacuate and 2 decided to stay.")
    nb = NeighbourCounts(total=8, counts={"Stay": 5, "Evacuate": 2}, invalid=1, refused=0, error=0, mean_p_target=0.3)
    assert neighbour_message(nb, CHOICES, TARGET) == (
        "Of the 8 people you know best, 2 decided to evacuate, 5 decided to stay and 1 gave no clear answer.")
    odd = NeighbourCounts(total=3, counts={"Walk": 1, "Run": 2}, invalid=0, refused=0, error=0, mean_p_target=0.3)
    assert neighbour_message(odd, ["Walk", "Run"], "Run") == (
        'Of the 3 people you know best, 2 chose "Run" and 1 chose "Walk".')
    assert share_message(0.75, TARGET) == "Of the people you know best, 75 % decided to evacuate."


def test_degroot_averages_probabilities_and_threshold_cascades():
    g = nx.path_graph(3)
    initial = [Outcome("Evacuate", p_target=0.9), Outcome("Stay", p_target=0.2), Outcome("Stay", p_target=0.1)]
    rows = run_rounds(InfluenceModel(g), initial, 1, control_rule("degroot", CHOICES, TARGET, self_weight=0.5),
                      CHOICES, TARGET)
    r1 = rows[rows["round"] == 1].sort_values("node")
    # p0 = .5·.9 + .5·.2 = .55; p1 = .5·.2 + .5·(.9+.1)/2 = .35; p2 = .5·.1 + .5·.2 = .15
    assert r1["p_target"].tolist() == pytest.approx([0.55, 0.35, 0.15])
    assert r1["decision"].tolist() == ["Evacuate", "Stay", "Stay"]
    rows = run_rounds(InfluenceModel(nx.path_graph(5)), [E, S, S, S, S], 4,
                      control_rule("threshold", CHOICES, TARGET, threshold=0.5), CHOICES, TARGET)
    assert decisions(rows, 4) == ["Evacuate"] * 5  # one adopter tips a line, one node per round
    assert decisions(rows, 1) == ["Evacuate", "Evacuate", "Stay", "Stay", "Stay"]


# --- archetype mode -------------------------------------------------------------------------------

def test_buckets_and_call_plan_count():
    b = share_buckets(8)
    assert b.tolist() == [i / 8 for i in range(9)]
    assert bucket_of([0.0, 0.06, 0.07, 0.5, 1.0, np.nan], b).tolist() == [0, 0, 1, 4, 8, ROUND0]
    assert share_buckets([0.5, 0, 1]).tolist() == [0, 0.5, 1]
    with pytest.raises(ValueError):
        share_buckets([0.5, 1.5])
    plan = call_plan([f"c{i}" for i in range(7)], b, 5)
    assert len(plan) == 7 * 9 * 5 and len(plan.drop_duplicates()) == len(plan)
    assert len(call_plan(range(7), b, 5, round0=True)) == 7 * 5


def _archetype_population(cells_p: dict, per_cell: int, K: int) -> pd.DataFrame:
    rows = []
    for cell, (attr, _) in cells_p.items():
        rows += [{"attribute": attr, "cell_id": cell} for _ in range(per_cell)]
    agents = pd.DataFrame(rows)
    agents.insert(0, "agent_id", range(len(agents)))
    agents["replicate"] = assign_replicates(agents, K)
    return agents


def test_archetype_mode_recovers_the_analytic_dpd_and_accounts_failed_calls():
    """Known p per cell (the same in every bucket): the rate of an attribute is the mean p of its
    agents' cells, so DPD = max − min of those means, in every round."""
    K, buckets = 3, share_buckets(4)
    cells_p = {"a1": ("A", 0.8), "a2": ("A", 0.6), "b1": ("B", 0.3), "b2": ("B", 0.5), "f": ("B", None)}
    agents = _archetype_population(cells_p, 2000, K)
    plan = pd.concat([call_plan(list(cells_p), buckets, K, round0=True), call_plan(list(cells_p), buckets, K)])
    plan["p_target"] = [cells_p[c][1] if cells_p[c][1] is not None else np.nan for c in plan["cell_id"]]
    plan["status"] = ["valid" if cells_p[c][1] is not None else "error" for c in plan["cell_id"]]
    table = ArchetypeTable(plan)
    g = build_graph(NetworkConfig(generator="watts_strogatz", params={"k": 6, "p": 0.1}, seed=0), agents)
    model = InfluenceModel(g, agents, seed=0)
    initial = initial_outcomes(model, table, CHOICES, TARGET, seed=11)
    rows = run_rounds(model, initial, 2, archetype_decide(table, buckets, CHOICES, TARGET, 11, len(agents)),
                      CHOICES, TARGET)
    failed = rows[rows["cell_id"] == "f"]
    assert (failed["status"] == "error").all() and failed["decision"].isna().all() and failed["target"].isna().all()
    analytic = (0.8 + 0.6) / 2 - (0.3 + 0.5) / 2  # the failed cell's agents are not counted as p = 0
    res = dpd_by_round(with_archetype_clusters(rows), "attribute", cluster="cluster", B=200)
    assert res["dpd"].to_numpy() == pytest.approx([analytic] * 3, abs=0.03)
    assert (res["ci_low"] <= res["dpd"]).all() and (res["dpd"] <= res["ci_high"]).all()


def test_archetype_draws_do_not_depend_on_creation_order():
    K, buckets = 2, share_buckets(4)
    cells_p = {"a": ("A", 0.7), "b": ("B", 0.4)}
    agents = _archetype_population(cells_p, 100, K)
    plan = pd.concat([call_plan(list(cells_p), buckets, K, round0=True), call_plan(list(cells_p), buckets, K)])
    plan["p_target"] = [cells_p[c][1] + 0.05 * b for c, b in zip(plan["cell_id"], plan["bucket"])]
    plan["status"] = "valid"
    table = ArchetypeTable(plan)
    g = build_graph(NetworkConfig(generator="erdos_renyi", params={"p": 0.05}, seed=1), agents)
    out = []
    for order in (None, list(range(200))[::-1]):
        model = InfluenceModel(g, agents, seed=0, order=order)
        rows = run_rounds(model, initial_outcomes(model, table, CHOICES, TARGET, 3), 2,
                          archetype_decide(table, buckets, CHOICES, TARGET, 3, 200), CHOICES, TARGET)
        out.append(rows.sort_values(["round", "node"]).reset_index(drop=True))
    pd.testing.assert_frame_equal(out[0], out[1])


def test_scalar_bucketing_in_decide_matches_bucket_of():
    b = share_buckets([0, 0.25, 0.5, 1])
    got = []
    table = ArchetypeTable(pd.DataFrame({"cell_id": ["c"] * 5, "bucket": [ROUND0, 0, 1, 2, 3], "replicate": 0,
                                         "p_target": [0.0, 0.1, 0.2, 0.3, 0.4], "status": "valid"}))

    class Agent:
        node, attributes = 0, {"cell_id": "c", "replicate": 0}

        class model:
            round = 1

    decide = archetype_decide(table, b, CHOICES, TARGET, 0, 1)
    shares = [0.0, 0.1, 0.125, 0.13, 0.4, 0.75, 0.76, 1.0, float("nan")]
    for s in shares:
        got.append(decide(Agent, None, s).p_target)
    expected = [[0.0, 0.1, 0.2, 0.3, 0.4][i + 1] for i in bucket_of(shares, b)]
    assert got == expected


def test_records_are_pandas_records_of_every_dtype():
    """``space.records`` builds the agents' rows column by column: the values and their types are
    ``to_dict("records")``'s, a nullable column's missing value None (not pd.NA), a float NaN kept."""
    import math

    from louder.networks.space import records

    n = 6
    df = pd.DataFrame({"agent_id": np.arange(n), "attribute": ["Female", "Male", "Non-binary"] * 2,
                       "weight": [np.nan, 1.5, 0.25, 1.0, 2.0, 0.5],
                       "age": pd.array([30, None, 41, 52, None, 19], dtype="Int64"),
                       "town": pd.array(["a", None, "c", "d", "e", None], dtype="str"),
                       "urban": pd.array([True, None, False, True, False, None], dtype="boolean"),
                       "note": pd.Series([None, "x", 3, None, "y", 2.5], dtype=object),
                       "when": pd.Timestamp("2020-01-01")})

    def same(a, b) -> bool:
        return type(a) is type(b) and (a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)))

    want, got = df.to_dict("records"), records(df)
    assert len(got) == n and all(list(w) == list(g) for w, g in zip(want, got))
    assert all(same(w[k], g[k]) for w, g in zip(want, got) for k in df.columns), (want, got)
    assert got[1]["age"] is None and got[1]["urban"] is None  # (a str column gives NaN, as pandas does)
