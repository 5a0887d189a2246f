"""Cluster-aware probability DPD (issue 14 point 1) and the archetype note (issue 12 §4)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from interval_reference import reference_dpd_interval

from louder.analysis.stats import prob_dpd as PD


def clustered(seed=4):
    """7 clusters (3 of attribute a, 2 of b, 2 of c), 2–4 agents each; agents of a cluster share p
    up to a little noise, as archetype agents share one call."""
    rng = np.random.default_rng(seed)
    attrs, clusters, p = [], [], []
    for c, a in enumerate("aaabbcc"):
        size = int(rng.integers(2, 5))
        base = rng.beta(2, 2)
        attrs += [a] * size
        clusters += [f"k{c}"] * size
        p += list(np.clip(base + rng.normal(0, 0.02, size), 0, 1))
    return np.array(p), np.array(attrs, dtype=object), np.array(clusters, dtype=object)


def test_cluster_interval_and_p_against_brute_force():
    p, attr, cl = clustered()
    r = PD.prob_dpd_clustered(p, attr, cl, B=4000, seed=5)
    means = pd.Series(p).groupby(attr).mean()
    assert r.dpd == pytest.approx(means.max() - means.min())
    # two or three clusters per attribute: about as many observations, so the interval is (honestly) wide
    assert r.ci_low <= r.dpd <= r.ci_high and r.ci_high - r.ci_low > 0.5
    # exact permutation p: every assignment of the labels aaabbcc to the 7 clusters
    s = pd.Series(p).groupby(cl).sum()
    k = pd.Series(p).groupby(cl).size()
    count = total = 0
    for lab in set(itertools.permutations("aaabbcc")):
        m = pd.Series(s.values).groupby(list(lab)).sum() / pd.Series(k.values).groupby(list(lab)).sum()
        count += (m.max() - m.min()) >= r.dpd - 1e-12
        total += 1
    assert total == 210 and abs(r.p_value - count / total) < 0.02


def test_cluster_interval_against_brute_force():
    """14 clusters; a plain loop draws clusters with replacement, pools their agents per attribute
    (mean and linearised variance), then the band and projection of docs/statistics.md by hand."""
    rng = np.random.default_rng(8)
    attrs, clusters, p = [], [], []
    for c, a in enumerate("aaaaabbbbbcccc"):
        size = int(rng.integers(2, 5))
        attrs += [a] * size
        clusters += [f"k{c}"] * size
        p += list(np.clip(rng.beta(2, 2) + rng.normal(0, 0.02, size), 0, 1))
    p, attr, cl = np.array(p), np.array(attrs, dtype=object), np.array(clusters, dtype=object)
    r = PD.prob_dpd_clustered(p, attr, cl, B=4000, seed=5)
    ids = sorted(set(cl))
    members = [(p[cl == c].sum(), (cl == c).sum(), attr[cl == c][0]) for c in ids]

    def rates(drawn):
        out, var = {}, {}
        for a in sorted({m[2] for m in drawn}):
            s_n = [(s_, n_) for s_, n_, b in drawn if b == a]
            m = sum(s_ for s_, _ in s_n) / sum(n_ for _, n_ in s_n)
            out[a] = m
            var[a] = sum((s_ - m * n_) ** 2 for s_, n_ in s_n) / sum(n_ for _, n_ in s_n) ** 2
        return out, var

    g = np.random.default_rng(123)
    resamples = [rates([members[i] for i in g.integers(0, len(ids), len(ids))]) for _ in range(4000)]
    lo, hi = reference_dpd_interval(*rates(members), resamples, df=3)  # 4 clusters of attribute c
    assert abs(r.ci_low - lo) < 0.03 and abs(r.ci_high - hi) < 0.03


def test_cluster_spanning_attributes_is_refused():
    with pytest.raises(ValueError, match="spans"):
        PD.cluster_permutation_p([0.1, 0.2], ["a", "b"], ["k", "k"], B=10)


def test_one_agent_per_cluster_matches_the_agent_bootstrap_width():
    rng = np.random.default_rng(1)
    samples = [rng.beta(2, 3, 60), rng.beta(3, 2, 50)]
    p = np.concatenate(samples)
    attr = np.array(["a"] * 60 + ["b"] * 50, dtype=object)
    r = PD.prob_dpd_clustered(p, attr, np.arange(110).astype(str).astype(object), B=3000)
    plain = PD.prob_dpd(samples, B=3000)
    assert abs((r.ci_high - r.ci_low) - (plain.ci_high - plain.ci_low)) < 0.03


def archetype_rows(seed: int, cells: int = 20, K: int = 5, per: int = 100, sd: float = 0.1) -> pd.DataFrame:
    """No-bias archetype rows: 2 attributes × cells, K replicates each; every call p = 0.5 + N(0, sd)."""
    rng = np.random.default_rng(seed)
    n = 2 * cells * K * per
    cell = np.repeat(np.arange(2 * cells), K * per)
    rep = np.tile(np.repeat(np.arange(K), per), 2 * cells)
    p_call = np.clip(0.5 + rng.normal(0, sd, (2 * cells, K)), 0, 1)
    return pd.DataFrame({"model": "m", "condition": "no_persona", "scenario": "s", "group": "g",
                         "attribute": np.where(cell < cells, "a", "b"), "status": "valid",
                         "p_target": p_call[cell, rep], "cell_id": cell, "replicate": rep, "round": 0,
                         "node": np.arange(n), "bucket": pd.array([pd.NA] * n, dtype="Float64")})


@pytest.mark.slow
def test_prob_dpd_table_clusters_archetype_rows_by_itself_and_holds_its_level():
    """Under no bias the cluster test rejects about 5 % of the time; treating agents as independent
    rejects far more often (here: the p-value of the agent-level permutation)."""
    rows = archetype_rows(0)
    t = PD.prob_dpd_table(rows, B=500)
    agent = PD.prob_dpd([g["p_target"].to_numpy() for _, g in rows.groupby("attribute")], B=500)
    assert (t["ci_high_p"] - t["ci_low_p"]).iloc[0] > 3 * (agent.ci_high - agent.ci_low)
    hits_cluster = hits_agent = 0
    seeds = 40
    for s in range(seeds):
        r = archetype_rows(s)
        hits_cluster += PD.prob_dpd_table(r, B=200, seed=s)["p_value_p"].iloc[0] < 0.05
        hits_agent += PD.prob_dpd([g["p_target"].to_numpy() for _, g in r.groupby("attribute")], B=200,
                                  seed=s).p_value < 0.05
    assert hits_cluster / seeds <= 0.12
    assert hits_agent / seeds > 0.5


def test_archetype_note_states_the_width_ratio_and_is_silent_for_other_runs():
    from louder.analysis.measures.archetype import archetype_note

    rows = archetype_rows(1).assign(target=lambda d: np.random.default_rng(0).random(len(d)) < d["p_target"])
    note = archetype_note(rows, B=300)
    assert note.clusters == 200 and note.agents == 20_000
    # design effect 1 + (100 − 1)·0.1²/0.25 ≈ 5: the cluster interval about √5 ≈ 2.2× wider
    assert note.width_cluster > 1.5 * note.width_agent and "resamples the 200 archetype" in note.text
    assert archetype_note(rows.drop(columns=["bucket"])) is None


def test_null_level_with_archetype_clusters_fast():
    """benchmarks/network_null.py, fewer seeds, through with_archetype_clusters (cell_id/replicate,
    the ids an archetype run writes): about 5 % false positives, far more at agent level."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    from network_null import null_rows

    from louder.analysis.stats.network import gap_interval, with_archetype_clusters

    def rows(seed):
        r = null_rows(seed, cells=20, replicates=5, agents_per_cluster=50)
        ids = r["cluster"].str[1:].astype(int)  # "a17" → archetype 17 of attribute a
        return with_archetype_clusters(r.assign(cell_id=r["attribute"] + (ids // 5).astype(str),
                                                replicate=ids % 5))

    def fp(seeds, cluster):
        hits = 0
        for s in range(seeds):
            _, lo, hi = gap_interval(rows(s), "attribute", "a", "b", cluster=cluster, B=200, seed=s)
            hits += lo > 0 or hi < 0
        return hits / seeds

    assert fp(80, "cluster") <= 0.125
    assert fp(20, None) >= 0.2
