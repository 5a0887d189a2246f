"""Issue 24: the faster analysis paths give exactly what the previous code gave (kept here as the
reference): chunked permutation tests, one-groupby choice rates, one regex pass per attribute. Issue 47:
the permutation tests and the sequential capital in cache-sized blocks (``stats.CACHE_CELLS``) give
exactly what one array gives."""

import re
from collections import Counter

import numpy as np
import pandas as pd

from louder.analysis.stats import choices as CH
from louder.analysis.stats import prob_dpd as PD
from louder.analysis.stats import rationales as R
from louder.analysis.stats import sequential as SQ
from louder.analysis.stats.core import CACHE_CELLS, permuted_rows


def test_permutation_p_in_chunks_equals_one_array():
    rng = np.random.default_rng(0)
    for sizes in ((5, 7), (300, 280, 310, 290), (900, 1100)):  # 1 block … many blocks (CACHE_CELLS values each)
        samples = [rng.beta(2, 3, s) + 0.02 * i for i, s in enumerate(sizes)]
        n = np.array(sizes)
        pooled = np.concatenate(samples)
        observed = PD._dpd_of_means(np.array([s.sum() for s in samples]), n)
        g = np.random.default_rng(9)
        perm = g.permuted(np.broadcast_to(pooled, (3000, pooled.size)), axis=1)  # the previous code
        draws = PD._dpd_of_means(np.add.reduceat(perm, np.r_[0, np.cumsum(n)[:-1]], axis=1), n)
        expected = (1 + np.count_nonzero(draws >= observed - 1e-12)) / 3001
        assert PD.permutation_p(samples, B=3000, seed=9) == expected


def test_monte_carlo_independence_in_chunks_equals_one_array():
    rng = np.random.default_rng(1)
    for N in (24, 900, 2500):  # expected counts < 5 (a rare choice): the Monte-Carlo path
        a = rng.integers(0, 4, N)
        c = rng.choice(3, N, p=[0.5, 0.497, 0.003])
        c[0] = 2
        r = CH.independence(a, c, B=3000, seed=4)
        assert r.method == "monte-carlo"
        # the previous code: all B shuffles in one array
        k, m = 4, 3
        perm = np.random.default_rng(4).permuted(np.broadcast_to(c, (3000, N)), axis=1)
        flat = (a * m + perm) + (np.arange(3000) * k * m)[:, None]
        draws = CH._chi2(np.bincount(flat.ravel(), minlength=3000 * k * m).reshape(3000, k, m).astype(float))
        assert r.p_value == (1 + np.count_nonzero(draws >= r.chi2 - 1e-9)) / 3001


def test_permuted_rows_in_blocks_equal_one_array_whatever_the_block():
    """Blocks of any size (one row, a ragged last block, all B rows at once) give the shuffles of one
    B × N array, in order."""
    values = np.random.default_rng(2).random(CACHE_CELLS // 40 + 3)  # 39 rows a block, the last one ragged
    whole = np.random.default_rng(5).permuted(np.broadcast_to(values, (200, values.size)), axis=1)
    blocks = []
    got = permuted_rows(np.random.default_rng(5), values, 200, lambda perm: blocks.append(len(perm)) or perm[:, 0])
    assert len(set(blocks)) == 2 and sum(blocks) == 200  # several full blocks and a shorter last one
    np.testing.assert_array_equal(got, whole[:, 0])
    one = permuted_rows(np.random.default_rng(5), np.arange(3.0), 10, lambda perm: perm @ [1.0, 10.0, 100.0])
    np.testing.assert_array_equal(one, np.random.default_rng(5).permuted(np.broadcast_to(np.arange(3.0), (10, 3)),
                                                                          axis=1) @ [1.0, 10.0, 100.0])


def test_cluster_permutation_in_blocks_equals_one_array():
    rng = np.random.default_rng(3)
    C = 3000  # 33 permutations a block: 1,000 of them in 31 blocks
    attribute = rng.choice(["a", "b", "c"], C)
    p = rng.random(C) * 0.3 + (attribute == "a") * 0.02
    cluster = np.arange(C).astype(str)
    got = PD.cluster_permutation_p(p, attribute, cluster, B=1000, seed=8)
    S, n, _ = PD._cluster_sums(p, attribute.astype(object), cluster.astype(object))
    label, s, k = (n > 0).argmax(axis=1), S.sum(axis=1), n.sum(axis=1)
    perm = np.random.default_rng(8).permuted(np.broadcast_to(label, (1000, C)), axis=1)  # one array
    means = np.stack([np.bincount(row, s, 3) / np.bincount(row, k, 3) for row in perm])
    observed = np.ptp(np.bincount(label, s, 3) / np.bincount(label, k, 3))
    assert got == (1 + np.count_nonzero(np.ptp(means, axis=1) >= observed - PD.TIE)) / 1001


def test_the_sequential_capital_in_blocks_equals_one_block():
    """Blocks split the streams only: every stream's capital has the same bits at any block size."""
    x = (np.random.default_rng(6).random((300, 40)) < 0.4).astype(float)
    x[::7, ::3] = np.nan  # unanswered slots
    ref = SQ.update(SQ.start(300, 0.01), x, max_cells=10**9)  # one block
    for cells in (1, 40 * 1001 * 7, CACHE_CELLS):
        got = SQ.update(SQ.start(300, 0.01), x, max_cells=cells)
        np.testing.assert_array_equal(got.log_plus, ref.log_plus)
        np.testing.assert_array_equal(got.log_minus, ref.log_minus)


def _old_choice_rates(decisions):
    d = decisions[decisions["status"] == "valid"]
    rows = []
    for key, g in d.groupby(CH.CASE_KEYS, sort=True):
        table = pd.crosstab(g["attribute"], g["decision"])
        for attr, r in table.iterrows():
            for choice, n in r.items():
                rows.append(dict(zip(CH.CASE_KEYS, key), attribute=attr, choice=choice, n=int(n),
                                 n_valid=int(r.sum()), rate=n / r.sum()))
    return pd.DataFrame(rows, columns=CH.RATE_COLUMNS)


def test_choice_rates_equal_the_per_case_crosstabs():
    rng = np.random.default_rng(2)
    rows = []
    for scenario, labels in (("s1", ["Stay", "Evacuate"]), ("s2", ["Bike", "Bus", "Car"])):
        for group, attrs in (("g1", ["b", "a", "c"]), ("g2", ["x", "y"])):
            for attr in attrs:
                for _ in range(int(rng.integers(1, 30))):
                    rows.append(dict(model="m", condition="contextualized", scenario=scenario, group=group,
                                     attribute=attr, decision=rng.choice(labels, p=None),
                                     status=rng.choice(["valid", "valid", "valid", "invalid"])))
    d = pd.DataFrame(rows)
    d.loc[d["status"] != "valid", "decision"] = None
    d.loc[(d["scenario"] == "s2") & (d["attribute"] == "x"), "decision"] = "Car"  # zero cells for Bike and Bus
    new = CH.choice_rates(d)
    pd.testing.assert_frame_equal(new, _old_choice_rates(d))
    x2 = new[(new["scenario"] == "s2") & (new["attribute"] == "x")]
    assert list(x2["choice"]) == ["Bike", "Bus", "Car"] and list(x2["n"])[:2] == [0, 0]
    assert CH.choice_rates(d.assign(status="invalid")).empty


def test_word_counts_equal_one_pass_per_text():
    texts = ["Safety FIRST, then my family's home.", "don't leave the kids", "", "home: safety; risk",
             "Über-cautious — the neighbours' pets", "rock'n'roll 'tis a''b x' ' naïve\tcafé\nend",
             "\u212a (Kelvin, lowercases to k) and a lone surrogate \ud800 here", "ｆｕｌｌwidth ok"]
    stop = R.stopwords()
    old = Counter(w for t in texts for w in R.TOKEN.findall(t.lower()) if w not in stop)
    assert R._word_counts(texts, stop) == old
    assert "the" not in R._word_counts(texts, stop) and R._word_counts(texts, frozenset())["the"] == 2
    assert re.fullmatch(R.TOKEN, "family's")  # apostrophes stay inside a token, spaces never do
    rng = np.random.default_rng(7)  # random texts over letters, apostrophes, separators and non-ASCII
    alphabet = list("abcxyzABZ'  ,.;-\n\té€ßİ\u212a\U0001f600'")
    texts = ["".join(rng.choice(alphabet, int(rng.integers(0, 40)))) for _ in range(2000)]
    assert R._word_counts(texts, stop) == Counter(w for t in texts for w in R.TOKEN.findall(t.lower()) if w not in stop)


def _old_pattern_counts(decisions, patterns):
    d = R._with_rationale(decisions)
    rows = []
    for p in patterns:
        rx = re.compile(p.regex, re.IGNORECASE)
        sub = d if p.scenario is None else d[d["scenario"] == p.scenario]
        if sub.empty:
            continue
        hit = np.array([rx.search(t) is not None for t in sub["rationale"]], dtype=bool)
        for key, g in sub.assign(hit=hit).groupby(R.KEYS + ["attribute"], sort=True):
            n, m = len(g), int(g["hit"].sum())
            rows.append(dict(analysis="pattern", **dict(zip(R.KEYS + ["attribute"], key)), pattern=p.id, paper=p.paper,
                             n_rationales=n, n_match=m, share=m / n if n else np.nan))
    return pd.DataFrame(rows, columns=R.RATIONALE_COLUMNS)


def _old_distinctive_words(decisions, top=10, min_count=2):
    stop = R.stopwords()
    d = R._with_rationale(decisions)
    rows = []
    for key, case in d.groupby(R.KEYS, sort=True):
        per_attr = {a: R._word_counts(g["rationale"], stop) for a, g in case.groupby("attribute", sort=True)}
        if len(per_attr) < 2:
            continue
        vocab = sorted(set().union(*per_attr.values()))
        if len(vocab) < 2:
            continue
        matrix = np.array([[per_attr[a][w] for w in vocab] for a in per_attr], dtype=float)
        prior = matrix.sum(axis=0)
        for i, a in enumerate(per_attr):
            yi = matrix[i]
            delta, z = R.stats.log_odds_dirichlet(yi, prior - yi, prior)
            for j in [j for j in np.argsort(-z) if yi[j] >= min_count][:top]:
                rows.append(dict(analysis="distinctive_word", **dict(zip(R.KEYS, key)), attribute=a, word=vocab[j],
                                 count=int(yi[j]), delta=float(delta[j]), z=float(z[j])))
    return pd.DataFrame(rows, columns=R.RATIONALE_COLUMNS)


def test_rationale_tables_equal_the_per_group_code():
    """Issue 41: pattern counts and distinctive words from one pass over the rows (cell codes, texts as a
    list) equal the previous per-group code, on Arrow strings as a run's Parquet file gives them."""
    rng = np.random.default_rng(3)
    words = "my son and daughter need safety no immediate threat family community knowledge stand up risk".split()
    rows = []
    for scenario in ("emergency_response", "career_path_selection", "authority_compliance"):
        for group, attrs in (("gender_identity", ["Male", "Female", "Non-binary"]), ("religion", ["Hindu"])):
            for attr in attrs:
                for _ in range(int(rng.integers(5, 40))):
                    rows.append(dict(model="m", condition="contextualized", scenario=scenario, group=group,
                                     attribute=attr, status=rng.choice(["valid"] * 8 + ["invalid", "refused"]),
                                     rationale=None if rng.random() < 0.05 else
                                     " ".join(rng.choice(words, int(rng.integers(0, 12))))))
    d = pd.DataFrame(rows).astype({c: "string[pyarrow]" for c in ("model", "condition", "scenario", "group",
                                                                  "attribute", "status", "rationale")})
    patterns = R.load_patterns()
    counts = R.pattern_counts(d, patterns)
    pd.testing.assert_frame_equal(counts, _old_pattern_counts(d, patterns))
    assert counts["n_match"].between(1, counts["n_rationales"] - 1).any()  # matches and misses both counted
    new, old = R.distinctive_words(d, min_count=1), _old_distinctive_words(d, min_count=1)
    pd.testing.assert_frame_equal(new, old)
    assert len(new) and set(new["group"]) == {"gender_identity"}  # a group of one attribute has no contrast
    assert R.pattern_counts(d.assign(status="invalid"), patterns).empty


def test_row_ranges_over_columns_first_equal_the_last_axis_reduction():
    """Issue 41: max − min of each row reduced over the transposed contiguous copy (faster for k of a few
    attributes) gives exactly the values of the reduction over the last axis."""
    from louder.analysis.stats import core as S
    from louder.analysis.stats import power as P

    rng = np.random.default_rng(5)
    for B, k in ((1, 2), (1000, 3), (10_000, 14)):
        x = rng.integers(0, 600, (B, k))
        n = rng.integers(600, 700, k)
        r = x / n
        assert np.array_equal(S._dpd_rows(r), r.max(axis=1) - r.min(axis=1))
        assert np.array_equal(S._dpd_rows(x), x.max(axis=1) - x.min(axis=1))  # counts (explicit DPD) stay ints
        assert np.array_equal(P._dpd_rows(x, n), r.max(axis=-1) - r.min(axis=-1))


def test_band_and_its_quantile_equal_the_previous_code():
    """Issue 41: the bootstrap-t values and the quantile of their row maxima, computed with fewer
    temporaries (and a plain max when no resample lacks a pair), equal the previous code exactly —
    with resamples of zero spread, moved or not, and resamples lacking an attribute."""
    from louder.analysis.stats import intervals as I

    def old_t(dev, seb):
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(seb > 0, dev / np.where(seb > 0, seb, 1), np.where(dev > 1e-12, np.inf, 0.0))
        t[np.isnan(dev)] = np.nan
        return t

    def old_quantile(t, q):
        ok = ~np.isnan(t).all(axis=1)
        return 0.0 if not ok.any() else float(np.quantile(np.nanmax(t[ok], axis=1), q, method="higher"))

    rng = np.random.default_rng(6)
    for k, B, gaps in ((2, 50, False), (4, 2000, False), (4, 2000, True), (6, 500, True)):
        r = rng.uniform(0.2, 0.8, k)
        rb = np.clip(r + rng.normal(0, 0.05, (B, k)), 0, 1)
        rb[rng.random((B, k)) < 0.05] = r[0]  # some resamples equal to the estimate
        vb = I.pair_sum(rb * (1 - rb) / 40)
        vb[rng.random(vb.shape) < 0.05] = 0.0  # zero spread: t* is 0 (not moved) or ∞ (moved)
        rb[1], vb[:2] = r, 0.0  # one of each for sure
        if gaps:  # cluster bootstraps: an attribute missing from a resample
            rb[2:][rng.random((B - 2, k)) < 0.1] = np.nan
        b = I.band(r, rb, I.pair_sum(r * (1 - r) / 40), vb)
        i, j = I.pair_index(k)
        want = old_t(np.abs(rb[:, i] - rb[:, j] - (r[i] - r[j])), np.sqrt(np.maximum(vb, 0)))
        assert np.array_equal(b.t, want, equal_nan=True)
        assert np.isinf(b.t).any() and (b.t == 0).any() and np.isnan(b.t).any() == gaps
        for q in (0.5, 0.95):
            assert I._quantile(b.t, q) == old_quantile(want, q)
    assert I._quantile(np.full((3, 2), np.nan), 0.95) == 0.0
