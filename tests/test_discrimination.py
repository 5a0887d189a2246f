"""discrim-eval's discrimination score (issue 37, item 1) against direct statsmodels fits, on null
data over many seeds and with a planted bias of known size; degenerate data give a status."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy.special import expit, logit
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests

from louder.analysis.stats.discrimination import COLUMNS, discrimination_table
from louder.errors import LouderError

ATTRS = ["Male", "Female", "Non-binary"]  # the group's order: Male is the reference
BIAS = float(logit(0.8) - logit(0.5))  # the fake model's bias=female:0.8 on the logit scale


def simulated(seed, bias=0.0, n=60, scenarios=("evacuate", "comply"), noise=0.5, mode="score", wordings=("as_written",),
              model="fake"):
    """Agents of ``ATTRS`` deciding each scenario with logit p = scenario base + bias·[Female] + N(0, noise)."""
    rng = np.random.default_rng(seed)
    rows = []
    for s_i, s in enumerate(scenarios):
        for w_i, w in enumerate(wordings):
            base = [-0.4, 0.5, 0.1, -0.1][s_i % 4] + 0.2 * w_i
            for a in ATTRS:
                p = expit(base + (bias if a == "Female" else 0.0) + rng.normal(0, noise, n))
                rows.append(pd.DataFrame(dict(model=model, condition="contextualized", scenario=s, wording=w,
                                              group="gender_identity", attribute=a, status="valid",
                                              p_target=p if mode == "score" else np.nan, target=rng.random(n) < p)))
    d = pd.concat(rows, ignore_index=True)
    d.loc[d.index[::37], "status"] = "invalid"  # invalid answers never enter
    return d


def _responses(d):
    v = d[d["status"] == "valid"].copy()
    v["y"] = logit(v["p_target"].clip(1e-4, 1 - 1e-4))
    return v


FEMALE = "C(attribute, Treatment('Male'))[T.Female]"
NONBINARY = "C(attribute, Treatment('Male'))[T.Non-binary]"


def test_score_mode_equals_statsmodels_mixedlm_and_recovers_the_bias():
    d = simulated(0, bias=BIAS)
    t = discrimination_table(d).set_index("attribute")
    assert list(discrimination_table(d).columns) == ["model", *COLUMNS]
    v = _responses(d)
    ref = smf.mixedlm("y ~ C(attribute, Treatment('Male'))", v, groups=v["scenario"]).fit(reml=True)
    for attr, term in (("Female", FEMALE), ("Non-binary", NONBINARY)):
        assert t.loc[attr, "coef"] == pytest.approx(ref.fe_params[term], abs=1e-3)
        assert t.loc[attr, "p_value"] == pytest.approx(ref.pvalues[term], rel=1e-3, abs=1e-12)
        lo, hi = ref.conf_int().loc[term]
        assert (t.loc[attr, "ci_low"], t.loc[attr, "ci_high"]) == (pytest.approx(lo, abs=1e-3), pytest.approx(hi, abs=1e-3))
    f = t.loc["Female"]
    assert f["method"] == "mixedlm" and f["reference"] == "Male" and f["n"] == len(v)
    assert f["ci_low"] > 0 and f["significant"] and f["ci_low"] < BIAS < f["ci_high"]  # the planted size inside
    assert not t.loc["Non-binary", "significant"]


@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.ConvergenceWarning")  # the reference fit's
def test_random_slopes_equal_statsmodels():
    d = simulated(1, bias=BIAS, scenarios=("a", "b", "c", "d"), n=40)
    t = discrimination_table(d, random_slopes=True).set_index("attribute")
    v = _responses(d)
    ref = smf.mixedlm("y ~ C(attribute, Treatment('Male'))", v, groups=v["scenario"],
                      re_formula="~C(attribute, Treatment('Male'))").fit(reml=True)
    assert t.loc["Female", "coef"] == pytest.approx(ref.fe_params[FEMALE], abs=1e-3)
    assert t.loc["Female", "method"] == "mixedlm_slopes" and t.loc["Female", "ci_low"] > 0


def test_sample_mode_equals_the_logistic_glm_with_scenario_fixed_effects():
    d = simulated(2, bias=BIAS, mode="sample", n=150)
    t = discrimination_table(d).set_index("attribute")
    v = d[d["status"] == "valid"].assign(y=lambda x: x["target"].astype(float))
    ref = smf.glm("y ~ C(attribute, Treatment('Male')) + C(scenario)", v, family=sm.families.Binomial()).fit()
    for attr, term in (("Female", FEMALE), ("Non-binary", NONBINARY)):
        assert t.loc[attr, "coef"] == pytest.approx(ref.params[term], abs=1e-3)
        assert t.loc[attr, "ci_high"] - t.loc[attr, "ci_low"] == pytest.approx(
            np.diff(ref.conf_int().loc[term].to_numpy())[0], abs=1e-3)
    assert t.loc["Female", "method"] == "logit" and t.loc["Female", "ci_low"] > 0


def test_wordings_that_vary_make_scenario_by_wording_units():
    d = simulated(3, bias=BIAS, wordings=("as_written", "plain"), n=30)
    t = discrimination_table(d).set_index("attribute")
    v = _responses(d)
    ref = smf.mixedlm("y ~ C(attribute, Treatment('Male'))", v, groups=v["scenario"] + " × " + v["wording"]).fit(reml=True)
    assert t.loc["Female", "coef"] == pytest.approx(ref.fe_params[FEMALE], abs=1e-3)


def test_population_run_fits_every_group_in_one_model():
    rng = np.random.default_rng(4)
    n = 1500
    g = rng.choice(ATTRS, n, p=[0.45, 0.45, 0.1])
    ide = rng.choice(["Conservative", "Moderate", "Liberal"], n)
    sc = rng.choice(["evacuate", "comply"], n)
    g[0], ide[0] = "Male", "Conservative"  # the first attribute seen is each group's reference
    p = expit(0.2 * (sc == "comply") + BIAS * (g == "Female") + 0.5 * (ide == "Liberal") + rng.normal(0, 0.5, n))
    d = pd.DataFrame(dict(model="fake", condition="contextualized", scenario=sc, variant="base", status="valid",
                          attr_gender_identity=g, attr_political_ideology=ide, p_target=p))
    t = discrimination_table(d).set_index(["group", "attribute"])
    v = d.assign(y=logit(d["p_target"].clip(1e-4, 1 - 1e-4)))
    ref = smf.mixedlm("y ~ C(attr_gender_identity, Treatment('Male')) + "
                      "C(attr_political_ideology, Treatment('Conservative'))", v, groups=v["scenario"]).fit(reml=True)
    assert len(t) == 4 and set(t["n"]) == {n}
    for (group, attr), r in t.iterrows():
        term = f"C(attr_{group}, Treatment('{r['reference']}'))[T.{attr}]"
        assert r["coef"] == pytest.approx(ref.fe_params[term], abs=1e-3)
    assert t.loc[("gender_identity", "Female"), "significant"] and t.loc[("political_ideology", "Liberal"), "significant"]
    assert not t.loc[("political_ideology", "Moderate"), "significant"]


def test_null_flags_nothing_in_nine_of_ten_seeds():
    for mode in ("score", "sample"):
        flagged = [discrimination_table(simulated(100 + s, mode=mode, n=80 if mode == "sample" else 60))["significant"].any()
                   for s in range(10)]
        assert sum(flagged) <= 1, (mode, flagged)


def test_holm_across_every_coefficient_of_the_run():
    d = pd.concat([simulated(5, bias=0.3, model="a"), simulated(6, model="b")])
    t = discrimination_table(d)
    assert len(t) == 4 and list(t["model"]) == ["a", "a", "b", "b"]
    assert np.allclose(t["p_holm"], multipletests(t["p_value"], method="holm")[1])
    assert (t["significant"] == (t["p_holm"] < 0.05)).all()


def test_degenerate_data_give_a_status_never_a_traceback():
    one = discrimination_table(simulated(7, bias=BIAS, scenarios=("only",)))
    v = _responses(simulated(7, bias=BIAS, scenarios=("only",)))
    ols = smf.ols("y ~ C(attribute, Treatment('Male'))", v).fit()
    assert set(one["method"]) == {"ols"} and one.iloc[0]["coef"] == pytest.approx(ols.params[FEMALE], abs=1e-6)
    single = simulated(8)
    single = single[single["attribute"] == "Female"]
    assert discrimination_table(single)["status"].tolist() == ["one attribute"]
    flat = simulated(9).assign(p_target=0.5)
    assert discrimination_table(flat)["status"].tolist() == ["no variation"]
    exact = simulated(10, bias=BIAS, noise=0.0)  # a deterministic model: nothing to test
    r = discrimination_table(exact)
    assert r["status"].tolist() == ["no residual variance"] and r["coef"].isna().all() and not r["significant"].any()
    sep = simulated(11, mode="sample", n=100)
    sep.loc[sep["attribute"] == "Female", "target"] = True
    assert discrimination_table(sep)["status"].tolist() == ["separation"]
    assert discrimination_table(simulated(12).assign(status="error"))["status"].tolist() == []
    few = simulated(13, n=3)
    assert discrimination_table(few)["status"].tolist() == ["too few data"]
    with pytest.raises(LouderError, match="reference 'Woman' is not an attribute"):
        discrimination_table(simulated(14), reference={"gender_identity": "Woman"})
    two = pd.concat([simulated(15), simulated(16).assign(condition="no_persona")])
    with pytest.raises(LouderError, match="several conditions"):
        discrimination_table(two)
    by = discrimination_table(two, by=("model", "condition"))
    assert list(by["condition"].unique()) == ["contextualized", "no_persona"]


def test_reference_can_be_set():
    t = discrimination_table(simulated(17, bias=BIAS), reference={"gender_identity": "Female"}).set_index("attribute")
    assert set(t.index) == {"Male", "Non-binary"} and (t["reference"] == "Female").all()
    assert t.loc["Male", "coef"] < 0 and t.loc["Male", "significant"]


def _row_level_logit(v, factors, refs, units):
    """statsmodels' Logit (Newton) on one row per decision: y ~ treatment dummies of ``factors`` + unit
    fixed effects, scenarios without variation left out first (as the fixed-effects logit does)."""
    v = v.assign(y=v["target"].astype(float), unit=units)
    v = v[v.groupby("unit")["y"].transform("nunique") > 1]
    rhs = " + ".join([f"C({f}, Treatment({refs[f]!r}))" for f in factors] + ["C(unit)"])
    return smf.logit(f"y ~ {rhs}", v).fit(disp=0, tol=1e-12, maxiter=100), len(v)


def _unbalanced_population(seed):
    """A population run: two groups in one model, unequal cells, four scenarios of which one every agent
    answered the same way (it carries no information and is left out)."""
    rng = np.random.default_rng(seed)
    n = 4000
    g = rng.choice(ATTRS, n, p=[0.5, 0.4, 0.1])
    ide = rng.choice(["Conservative", "Moderate", "Liberal"], n, p=[0.2, 0.3, 0.5])
    sc = rng.choice(["evacuate", "comply", "share", "flat"], n)
    g[0], ide[0] = "Male", "Conservative"
    p = expit(-0.3 + 0.6 * (sc == "comply") + 0.7 * (g == "Female") - 0.4 * (ide == "Liberal"))
    return pd.DataFrame(dict(model="fake", condition="contextualized", scenario=sc, status="valid",
                             attr_gender_identity=g, attr_political_ideology=ide,
                             target=(rng.random(n) < p) | (sc == "flat")))


@pytest.mark.parametrize("case", ["two scenarios", "scenario × wording", "null, three scenarios", "reference set",
                                  "population, two groups"])
def test_sample_mode_fit_on_counts_equals_the_row_level_logit(case):
    """Sample mode fits the logit on (attributes, unit, y) counts: the same estimates, standard errors,
    p-values and intervals as statsmodels' Logit on one row per decision. (The coefficients agree to
    ~1e-12; the GLM's se, from the weights of its last IRLS step, to ~1e-7 — as the row-level GLM's did.)"""
    reference = None
    if case == "two scenarios":
        d = simulated(20, bias=BIAS, mode="sample", n=400)
    elif case == "scenario × wording":
        d = simulated(21, bias=0.4, mode="sample", n=150, scenarios=("a", "b", "c"), wordings=("as_written", "plain"))
    elif case == "null, three scenarios":
        d = simulated(22, mode="sample", n=300, scenarios=("a", "b", "c"), noise=1.0)
    elif case == "reference set":
        d = simulated(23, bias=-0.5, mode="sample", n=250)
        reference = {"gender_identity": "Non-binary"}
    else:
        d = _unbalanced_population(24)
    t = discrimination_table(d, mode="sample", reference=reference)
    assert (t["status"] == "ok").all() and (t["method"] == "logit").all()
    v = d[d["status"] == "valid"]
    if case == "population, two groups":
        factors = ["attr_gender_identity", "attr_political_ideology"]
        refs = {"attr_gender_identity": "Male", "attr_political_ideology": "Conservative"}
        units = v["scenario"]
    else:
        factors, refs = ["attribute"], {"attribute": (reference or {}).get("gender_identity", "Male")}
        units = v["scenario"] + (" × " + v["wording"] if v["wording"].nunique() > 1 else "")
    ref, n = _row_level_logit(v, factors, refs, units)
    assert set(t["n"]) == {n}
    if case == "population, two groups":
        assert n < len(v)  # the scenario without variation was left out
    z = float(norm.ppf(0.975))
    for r in t.itertuples():
        factor = f"attr_{r.group}" if case == "population, two groups" else "attribute"
        term = f"C({factor}, Treatment({r.reference!r}))[T.{r.attribute}]"
        se = (r.ci_high - r.ci_low) / (2 * z)
        assert r.coef == pytest.approx(ref.params[term], rel=1e-6)
        assert se == pytest.approx(ref.bse[term], rel=1e-6)
        # p through its normal quantile: far in the tail a 1e-7 change of z moves p by ~z²·1e-7 relative
        assert norm.isf(r.p_value / 2) == pytest.approx(norm.isf(ref.pvalues[term] / 2), rel=1e-6)
        lo, hi = ref.conf_int().loc[term]
        assert (r.ci_low, r.ci_high) == (pytest.approx(lo, rel=1e-6), pytest.approx(hi, rel=1e-6))


def test_logit_on_counts_takes_the_same_steps_as_on_every_row():
    """The engine's GLM with frequency weights (one row per pattern and outcome) against the same GLM
    on every row: IRLS starts and stops alike, so the two agree to rounding, far below 1e-9."""
    from louder.analysis.stats import regression as R

    for seed in range(3):
        d = simulated(30 + seed, bias=0.3 * seed, mode="sample", n=200, scenarios=("a", "b", "c"))
        d = d[d["status"] == "valid"]
        y = d["target"].astype(float)
        X, terms = R.treatment_design(d, ["attribute"], {"attribute": "Male"})
        rows = R.logit_glm(y.to_numpy(), X, terms, nuisance=R.dummies(d["scenario"], "scenario"))
        cells = R.outcome_counts(d, ["attribute", "scenario"], y)
        assert len(cells) <= 2 * 3 * 3 and cells["count"].sum() == len(d)
        Xc, terms_c = R.treatment_design(cells, ["attribute"], {"attribute": "Male"})
        counts = R.logit_glm(cells["y"].to_numpy(), Xc, terms_c, nuisance=R.dummies(cells["scenario"], "scenario"),
                             counts=cells["count"].to_numpy())
        assert counts.status == rows.status == "ok" and counts.n == rows.n == len(d) and counts.terms == rows.terms
        for a, b in ((counts.coef, rows.coef), (counts.se, rows.se), (counts.p_value, rows.p_value)):
            np.testing.assert_allclose(a, b, rtol=1e-9)


def test_irls_logit_is_statsmodels_glm_step_for_step():
    """``regression.irls_logit`` (numpy alone, so that an analysis need not import statsmodels) against
    statsmodels' ``GLM(Binomial, freq_weights)`` on random designs — rows and counts, rare and common
    outcomes, separated and collinear designs: the same β, se and convergence, to rounding."""
    import warnings

    from statsmodels.genmod.families import Binomial
    from statsmodels.genmod.generalized_linear_model import GLM

    from louder.analysis.stats.regression import irls_logit

    for seed in range(60):
        rng = np.random.default_rng(seed)
        n, k = int(rng.integers(15, 300)), int(rng.integers(1, 5))
        X = np.column_stack([np.ones(n), (rng.random((n, k)) < rng.uniform(0.1, 0.6)).astype(float)])
        if seed % 5 == 3:
            X[:, -1] = X[:, 1]  # collinear: the pseudo-inverse's minimum-norm answer, as statsmodels'
        y = (rng.random(n) < expit(X @ rng.normal(rng.choice([-3, 0]), 1.5, k + 1))).astype(float)
        if seed % 7 == 6:
            y = X[:, 1].copy()  # separated: the first indicator predicts y perfectly
        counts = rng.integers(1, 20, n).astype(float) if seed % 2 else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = GLM(y, X, family=Binomial(), freq_weights=counts).fit()
            beta, cov, converged = irls_logit(y, X, counts)
        assert converged == ref.converged, seed
        np.testing.assert_allclose(beta, ref.params, rtol=1e-9, atol=1e-9, err_msg=str(seed))
        np.testing.assert_allclose(np.sqrt(np.diag(cov)), ref.bse, rtol=1e-9, atol=1e-9, err_msg=str(seed))
