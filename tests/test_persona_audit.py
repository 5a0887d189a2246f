"""The persona audit (issue 37, item 3): a planted negative tone, a flattened attribute, neutral
personas over many seeds, and the measures against independent code."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_distances
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from louder.analysis.stats.persona_audit import (
    AUDIT_COLUMNS,
    GAP_COLUMNS,
    _diversity,
    distances,
    persona_audit,
    restates,
    stereotype_hits,
    words,
)
from louder.analysis.stats.rationales import load_patterns

ATTRS = ["Male", "Female", "Non-binary"]
TRAITS = ["works as a teacher", "lives in a small town", "enjoys cooking", "has two children", "likes to read novels",
          "volunteers at the library", "drives a delivery van", "plays chess on weekends", "grew up on a farm",
          "studies history at night", "keeps a vegetable garden", "walks the dog every morning", "repairs old bicycles",
          "sings in a choir", "is a good neighbour", "enjoys quiet evenings", "loves hiking"]
NEGATIVE = ["is bitter and lonely", "hates the job", "feels miserable and angry", "is afraid of failure",
            "suffers from terrible debt", "resents the neighbours"]


def personas(seed, n=30, tone=None, same=None):
    """Fake-model-like personas: three random traits per text; ``tone``: one trait of that attribute's
    personas is negative; ``same``: every persona of that attribute is one text."""
    rng = np.random.default_rng(seed)
    rows = []
    for a in ATTRS:
        for i in range(n):
            traits = list(rng.choice(TRAITS, 3, replace=False))
            if a == tone:
                traits[1] = rng.choice(NEGATIVE)
            text = f"{rng.choice(['Sam', 'Alex', 'Robin', 'Kim'])} is a person who " + ", ".join(traits) + "."
            if a == same:
                text = "Alex is a person who works as a teacher, enjoys cooking and has two children."
            rows.append(dict(model="fake", condition="contextualized", scenario="emergency_response",
                             group="gender_identity", attribute=a, agent_id=i, persona=text, status="valid"))
    d = pd.DataFrame(rows)
    d.loc[d.index[::29], "status"] = "invalid"  # an invalid persona never enters
    return d


def _gap(r, measure):
    return r["personas_audit_gaps"].set_index("measure").loc[measure]


def _values(r, measure):
    return r["personas_audit"][r["personas_audit"]["measure"] == measure].set_index("attribute")


def test_a_negative_tone_reads_lower_sentiment():
    r = persona_audit(personas(0, tone="Female"), B=1000)
    assert list(r["personas_audit"].columns) == AUDIT_COLUMNS and list(r["personas_audit_gaps"].columns) == GAP_COLUMNS
    g = _gap(r, "sentiment")
    assert g["significant"] and g["lowest"] == "Female" and g["ci_low"] > 0
    v = _values(r, "sentiment")
    assert v.loc["Female", "ci_high"] < v.drop("Female")["ci_low"].min()  # its interval below the others'
    words = r["personas_words"]
    top = set(words[words["attribute"] == "Female"].head(10)["word"])
    assert top & {"bitter", "lonely", "hates", "miserable", "angry", "afraid", "failure", "terrible", "debt", "resents"}


def test_identical_personas_read_the_lowest_diversity():
    r = persona_audit(personas(1, same="Male"), B=1000)
    v = _values(r, "diversity")
    assert v.loc["Male", "value"] == 0 and v["value"].idxmin() == "Male"
    g = _gap(r, "diversity")
    assert g["significant"] and g["lowest"] == "Male" and g["ci_low"] > 0


def test_neutral_personas_flag_nothing_in_nine_of_ten_seeds():
    flagged = [persona_audit(personas(100 + s), B=500)["personas_audit_gaps"]["significant"].any() for s in range(10)]
    assert sum(flagged) <= 1, flagged


def test_every_interval_contains_its_estimate():
    for seed in range(4):
        r = persona_audit(personas(200 + seed, n=6, tone="Male" if seed % 2 else None), B=300)
        a, g = r["personas_audit"], r["personas_audit_gaps"]
        assert ((a["ci_low"] <= a["value"] + 1e-12) & (a["value"] <= a["ci_high"] + 1e-12)).all()
        ok = g["gap"].notna()
        assert ((g.loc[ok, "ci_low"] <= g.loc[ok, "gap"] + 1e-12) & (g.loc[ok, "gap"] <= g.loc[ok, "ci_high"] + 1e-12)).all()


def test_measures_against_independent_code():
    texts = ["She is a woman who loves her children.", "He is a man; no immediate danger, he says.",
             "A nonbinary person who values personal safety.", "Dana likes trains."]
    assert [words(t) for t in texts] == [8, 9, 7, 3]
    assert restates(texts[0], "gender_identity", "Female") and not restates(texts[0], "gender_identity", "Male")
    assert restates(texts[2], "gender_identity", "Non-binary") and not restates(texts[3], "gender_identity", "Female")
    assert restates("A proud Liberal.", "us_gender_ideology", "Female | Liberal")  # a population's joint label
    assert not restates("She walks past white walls.", "race_ethnicity", "White")  # race words match as written
    patterns = load_patterns()
    assert stereotype_hits(texts[0], patterns, "emergency_response") == 1  # "children"
    assert stereotype_hits(texts[1], patterns, "emergency_response") == 1  # "no immediate"
    assert stereotype_hits(texts[2], patterns, "emergency_response") == 0  # a pattern of another scenario
    assert stereotype_hits(texts[2], patterns, "authority_compliance") == 1
    D = distances(texts)
    ref = cosine_distances(TfidfVectorizer().fit_transform(texts))
    np.fill_diagonal(ref, 0)
    assert np.allclose(D, ref)
    d = personas(2, n=8)
    r = persona_audit(d, B=200)
    v = d[d["status"] == "valid"]
    vader = SentimentIntensityAnalyzer()
    for a, g in v.groupby("attribute"):
        assert _values(r, "sentiment").loc[a, "value"] == pytest.approx(
            np.mean([vader.polarity_scores(t)["compound"] for t in g["persona"]]))
        Dall = distances(v["persona"].tolist())
        idx = np.flatnonzero((v["attribute"] == a).to_numpy())
        sub = Dall[np.ix_(idx, idx)]
        assert _values(r, "diversity").loc[a, "value"] == pytest.approx(sub.sum() / (idx.size * (idx.size - 1)))


def test_thin_cases_give_nan_not_errors():
    one_attribute = personas(4, n=5)
    r = persona_audit(one_attribute[one_attribute["attribute"] == "Male"], B=100)
    assert r["personas_audit_gaps"]["gap"].isna().all() and not r["personas_audit_gaps"]["significant"].any()
    one_text = persona_audit(personas(5, n=1), B=100)["personas_audit"]
    assert one_text.query("measure == 'diversity'")["value"].isna().all()
    assert persona_audit(personas(6).assign(status="invalid"), B=100)["personas_audit_gaps"].empty


def test_diversity_of_a_resample_leaves_out_copies_of_one_text():
    rng = np.random.default_rng(3)
    D = rng.random((5, 5))
    D = (D + D.T) / 2
    np.fill_diagonal(D, 0)
    counts = np.array([[2, 0, 1, 0, 2], [5, 0, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=float)
    for c, got in zip(counts, _diversity(counts, D)):
        drawn = np.repeat(np.arange(5), c.astype(int))  # the resampled texts, brute force
        pairs = [(i, j) for i in range(drawn.size) for j in range(drawn.size) if i != j and drawn[i] != drawn[j]]
        want = np.mean([D[drawn[i], drawn[j]] for i, j in pairs]) if pairs else np.nan
        assert (np.isnan(want) and np.isnan(got)) or got == pytest.approx(want)


def test_a_run_without_written_personas_has_nothing_to_audit(tmp_path):
    """Issue 41: under no_persona the attribute stands in for the persona ("Female"); the audit read its
    spelling as a finding ("length 1.000, significant, Female → Non-binary"). It reads only personas the
    model wrote, and says so where there is none; a run with both conditions audits the written ones."""
    import warnings

    import louder
    from louder.errors import LouderWarning

    case = {"scenarios": ["emergency_response"], "groups": ["gender_identity"], "agents": 6}
    run = louder.run({"models": ["fake:seed=1"], "simulation": {**case, "conditions": ["no_persona"]}},
                     out=tmp_path / "bare", progress=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", LouderWarning)
        tables = run.analyze(bootstrap=200)
    assert not {"personas_audit", "personas_audit_gaps", "personas_words"} & set(tables)
    assert any("persona audit: nothing to audit" in str(w.message) and "no_persona" in str(w.message) for w in seen)
    html = run.report().read_text("utf-8")
    assert "persona audit: nothing to audit" in html and "The persona step under audit" not in html
    both = louder.run({"models": ["fake:seed=1"], "simulation": {**case, "conditions": ["contextualized",
                                                                                          "no_persona"]}},
                      out=tmp_path / "both", progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LouderWarning)
        audit = both.analyze(bootstrap=200)["personas_audit"]
    assert set(audit["condition"]) == {"contextualized"}
