"""Issue 24: the faster analysis paths give exactly what the previous code gave (kept here as the
reference): chunked permutation tests, one-groupby choice rates, one regex pass per attribute."""

import re
from collections import Counter

import numpy as np
import pandas as pd

from louder.analysis import choices as CH
from louder.analysis import prob_dpd as PD
from louder.analysis import rationales as R


def test_permutation_p_in_chunks_equals_one_array():
    rng = np.random.default_rng(0)
    for sizes in ((5, 7), (300, 280, 310, 290), (900, 1100)):  # 1 chunk … many chunks (1M values each)
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
    texts = pd.Series(["Safety FIRST, then my family's home.", "don't leave the kids", "", "home: safety; risk",
                       "Über-cautious — the neighbours' pets"])
    stop = R.stopwords()
    old = Counter(w for t in texts for w in R.TOKEN.findall(t.lower()) if w not in stop)
    assert R._word_counts(texts, stop) == old
    assert "the" not in R._word_counts(texts, stop) and R._word_counts(texts, frozenset())["the"] == 2
    assert re.fullmatch(R.TOKEN, "family's")  # apostrophes stay inside a token, spaces never do
