"""Population runs, policy variants and counterfactual twins (issue 11): three measures — the
population's per-group DPDs, regression, intersections and overall rate; each policy variant against
base; the twins' flips and paired DPD — their report sections and console tables.

Each table function takes the run's tidy tables and returns tidy DataFrames, one row per case × …;
the statistics are the small functions of ``louder.analysis.population`` (formulas there). A case
is model × condition × scenario × variant for a population run; for a plain run with variants it
is model × condition × scenario × group, the variant being what is compared.
"""

from __future__ import annotations

import html
import itertools
import zlib

import numpy as np
import pandas as pd

from louder.analysis import population as P
from louder.analysis import stats as S
from louder.analysis.html import note, png, section, table
from louder.analysis.keys import CASE_KEYS, POPULATION_CASE, base_scenarios
from louder.analysis.measures.sequential import with_sequential_groups
from louder.analysis.rates import rates as rate_table
from louder.analysis.registry import Column, Measure, Show, Table, View, key, number, register
from louder.status import status_table

POP_CASE = POPULATION_CASE


def attr_groups(decisions: pd.DataFrame) -> list[str]:
    """The ``attr_<group>`` columns of a population run, in the population's group order."""
    return [c for c in decisions.columns if c.startswith("attr_")]


def _gname(col: str) -> str:
    return col.removeprefix("attr_")


def _seed(seed: int, *parts) -> int:
    # crc32, not hash(): str hashes change between processes, and the analysis must be reproducible
    return int(np.random.SeedSequence([seed, *[zlib.crc32(str(p).encode()) for p in parts]]).generate_state(1)[0])


def group_tables(decisions: pd.DataFrame, B: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per case × group: the population-weighted DPD with its parity bootstrap (``P.group_dpd``), p_holm
    across the table's rows and significant ⇔ p_holm < 0.05 (``stats.significant``); and per case ×
    group × attribute the weighted rate, n_eff and every status count."""
    cols = attr_groups(decisions)
    dpd_rows, rate_frames = [], []
    for i, (key, d) in enumerate(decisions.groupby(POP_CASE, sort=True)):
        for col in cols:
            r = P.group_dpd(d, col, B=B, seed=_seed(seed, i, col))
            dpd_rows.append(dict(zip(POP_CASE, key), group=_gname(col), n_valid=r.n_valid, dpd=r.dpd,
                                 threshold=r.threshold, p_value=r.p_value, significant=r.significant,
                                 ci_low=r.lo, ci_high=r.hi))
            t = rate_table(d, [col], weight="weight").rename(columns={col: "attribute"})
            rate_frames.append(t.assign(**dict(zip(POP_CASE, key)), group=_gname(col)))
    dpd = pd.DataFrame(dpd_rows)
    if len(dpd):  # the run's multiplicity control: Holm across every case × group of the table
        dpd.insert(dpd.columns.get_loc("p_value") + 1, "p_holm", S.holm(dpd["p_value"].to_numpy(dtype=float)))
        dpd["significant"] = S.significant(dpd["p_holm"].to_numpy())
    rates = pd.concat(rate_frames, ignore_index=True) if rate_frames else pd.DataFrame()
    if len(rates):
        rates = rates[POP_CASE + ["group", "attribute", "n_valid", "n_target", "rate", "n_eff", "n_invalid",
                                  "n_refused", "n_error"]]
    return dpd, rates


def intersection_tables(decisions: pd.DataFrame, min_n: int = 30) -> pd.DataFrame:
    """Per case × pair of groups: ``P.intersection_table`` (rate and n per cell, Fisher test of cells
    with ≥ ``min_n`` valid decisions, Benjamini–Hochberg across the pair's tested cells)."""
    cols, frames = attr_groups(decisions), []
    for key, d in decisions.groupby(POP_CASE, sort=True):
        for a, b in itertools.combinations(cols, 2):
            t = P.intersection_table(d, a, b, min_n=min_n).rename(columns={a: "attribute_a", b: "attribute_b"})
            frames.append(t.assign(**dict(zip(POP_CASE, key)), group_a=_gname(a), group_b=_gname(b)))
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    return out[POP_CASE + ["group_a", "group_b", "attribute_a", "attribute_b", "n_valid", "n_target", "rate",
                           "n_eff", "tested", "p_value", "p_bh", "significant"]]


def regression_tables(decisions: pd.DataFrame, min_n: int = 10) -> pd.DataFrame:
    """Per case: the logistic regression on every group (``P.logistic_regression``). Agents with an
    attribute the model cannot estimate — fewer than ``min_n`` valid decisions, or all of them the same
    decision (separation) — are left out first and named in ``dropped``; a case the data still cannot
    support gets one row with its status and no odds ratio."""
    cols, frames = attr_groups(decisions), []
    for key, d in decisions.groupby(POP_CASE, sort=True):
        v = P.valid(d)
        keep = pd.Series(True, index=d.index)
        dropped = []
        for col in cols:
            stats = v.groupby(col)["y"].agg(["size", "mean"])
            bad = stats[(stats["size"] < min_n) | (stats["mean"] == 0) | (stats["mean"] == 1)].index
            dropped += [f"{_gname(col)}={a}" for a in bad]
            keep &= ~d[col].isin(bad)
        r = P.logistic_regression(d[keep], cols)
        t = r.table if len(r.table) else pd.DataFrame([{c: np.nan for c in P.REGRESSION_COLUMNS}])
        frames.append(t.assign(**dict(zip(POP_CASE, key)), status=r.status, n=r.n, dropped="; ".join(dropped)))
    out = pd.concat(frames, ignore_index=True)
    out["group"] = out["group"].map(lambda g: _gname(g) if isinstance(g, str) else g)
    return out[POP_CASE + ["status", "n", "dropped", *P.REGRESSION_COLUMNS]]


def overall_table(decisions: pd.DataFrame) -> pd.DataFrame:
    """Per case: the population's weighted target rate with its Wilson interval (``P.weighted_rate``)
    and every status count."""
    rows = []
    counts = status_table(decisions, POP_CASE).set_index(POP_CASE)
    for key, d in decisions.groupby(POP_CASE, sort=True):
        r = P.weighted_rate(d)
        rows.append(dict(zip(POP_CASE, key), rate=r.rate, ci_low=r.lo, ci_high=r.hi, n_eff=r.n_eff,
                         **{c: int(n) for c, n in counts.loc[key].items()}))
    return pd.DataFrame(rows)


def variant_tables(decisions: pd.DataFrame, B: int, seed: int) -> dict[str, pd.DataFrame]:
    """Policy variants against ``base``, per case (without the variant) × group: rate per variant and
    attribute; each variant's effect per attribute with its interval; the change of DPD (Δ > 0 widens)."""
    if "variant" not in decisions or decisions["variant"].nunique() < 2:
        return {}
    cols = attr_groups(decisions) or ["attribute"]
    keys = ["model", "condition", "scenario"] + ([] if attr_groups(decisions) else ["group"])
    variants = list(dict.fromkeys(decisions["variant"]))
    base = "base" if "base" in variants else variants[0]
    rates, effects, dpds = [], [], []
    for i, (key, d) in enumerate(decisions.groupby(keys, sort=True)):
        case = {k: v for k, v in zip(keys, key) if k != "group"}  # group: the analysed group, set below
        for col in cols:
            g = _gname(col) if col != "attribute" else key[-1]
            r = P.variant_rates(d, col)
            counts = pd.concat([status_table(d, ["variant"]).assign(attribute="(all)"),
                                status_table(d, ["variant", col]).rename(columns={col: "attribute"})])
            counts = counts.drop(columns="n_valid")
            rates.append(r.merge(counts, on=["variant", "attribute"], how="left").assign(**case, group=g))
            for v in variants:
                if v == base:
                    continue
                s = _seed(seed, i, col, v)
                effects.append(P.variant_effects(d, col, base, v, B=B, seed=s).assign(**case, group=g, variant=v,
                                                                                       base=base))
                diff, lo, hi = P.variant_dpd_difference(d, col, base, v, B=B, seed=s)
                dpds.append(dict(case, group=g, variant=v, base=base, dpd_difference=diff, ci_low=lo, ci_high=hi,
                                 verdict="widens" if lo > 0 else "narrows" if hi < 0 else "inconclusive"))
    out_keys = CASE_KEYS
    rt = pd.concat(rates, ignore_index=True)
    rt = rt[out_keys + [c for c in rt.columns if c not in out_keys]]
    rt[[c for c in rt.columns if c.startswith("n_") and c != "n_eff"]] = rt.filter(regex="^n_(?!eff)").fillna(0)
    ef = pd.concat(effects, ignore_index=True) if effects else pd.DataFrame()
    if len(ef):
        ef = ef[out_keys + ["variant", "base"] + [c for c in ef.columns if c not in out_keys + ["variant", "base"]]]
    return {"variant_rates": rt, "variant_effects": ef, "variant_dpd": pd.DataFrame(dpds)}


def twin_tables(twins: pd.DataFrame, decisions: pd.DataFrame, B: int, seed: int) -> dict[str, pd.DataFrame]:
    """Counterfactual twins per case × group: flip rate and exact McNemar test per attribute pair
    (``P.twin_flips``), the paired DPD (same personas) beside the unpaired one (the drawn agents,
    ``P.group_dpd``), and the twins' answer and check accounting."""
    keys = POP_CASE + ["group"]
    flips, dpds = [], []
    for i, (key, t) in enumerate(twins.groupby(keys, sort=True)):
        case = dict(zip(keys, key))
        f = P.twin_flips(t)
        flips.append(f.assign(**case))
        paired, lo, hi = P.paired_dpd(t, B=B, seed=_seed(seed, i))
        d = decisions[(decisions[POP_CASE] == pd.Series(key[:4], index=POP_CASE)).all(axis=1)]
        u = P.group_dpd(d, f"attr_{case['group']}", B=B, seed=_seed(seed, i, "unpaired"))
        n_sets = t["twin_set"].nunique()
        dpds.append(dict(case, n_sets=n_sets, n_complete=len(P.complete_twin_sets(t)), paired_dpd=paired,
                         paired_ci_low=lo, paired_ci_high=hi, unpaired_dpd=u.dpd, unpaired_ci_low=u.lo,
                         unpaired_ci_high=u.hi,
                         paired_to_unpaired=paired / u.dpd if u.dpd and np.isfinite(u.dpd) and u.dpd > 0 else np.nan))
    made = twins[~twins["original"].astype(bool)]
    status = status_table(made, keys)
    checks = made.groupby(keys)["twin_status"].value_counts().unstack(fill_value=0).reset_index()
    checks.columns = [c if c in keys else f"twin_{c}" for c in checks.columns]
    accounting = status.merge(checks, on=keys, how="left")
    flip_cols = keys + ["attribute_a", "attribute_b", "n_sets", "a_only", "b_only", "flip_rate", "p_mcnemar"]
    return {"twin_flips": pd.concat(flips, ignore_index=True)[flip_cols] if flips else pd.DataFrame(),
            "twin_dpd": pd.DataFrame(dpds), "twin_accounting": accounting}


# --- the measures -------------------------------------------------------------------------------------

def _decisions(a) -> pd.DataFrame:
    """The population and variant tables key on the variant, not on the case tables' "scenario [variant]"."""
    return base_scenarios(a.decisions)


def build_population(a) -> dict[str, pd.DataFrame]:
    d, B, seed = _decisions(a), a.settings.bootstrap, a.settings.seed
    if not (attr_groups(d) and "variant" in d):
        return {}
    groups, rates = group_tables(d, B, seed)
    return {"population_groups": with_sequential_groups(groups, a.sequential), "population_rates": rates,
            "population_intersections": intersection_tables(d), "population_regression": regression_tables(d),
            "population_overall": overall_table(d)}


def build_variants(a) -> dict[str, pd.DataFrame]:
    return variant_tables(_decisions(a), a.settings.bootstrap, a.settings.seed)


def build_twins(a) -> dict[str, pd.DataFrame]:
    if not len(a.twins):
        return {}
    return twin_tables(a.twins, _decisions(a), a.settings.bootstrap, a.settings.seed)


# --- the report sections ------------------------------------------------------------------------------

MAX_HEATMAPS = 12  # intersection heat maps drawn (the table has every cell of every case)


def _population(a) -> str:
    from louder.analysis import figures

    from louder.populations.fit import fit_errors

    t = a.tables
    if "population_groups" not in t:
        return ""
    m = (a.manifests.get("simulation") or {}).get("population") or {}
    parts = []
    if m:
        parts.append(note(f"Population <b>{html.escape(str(m.get('id')))}</b> ({html.escape(str(m.get('path')))}): "
                          f"{m.get('n')} agents drawn in {m.get('cells_drawn')} cells of "
                          f"{html.escape(' × '.join(m.get('groups', [])))}. Fit: {fit_errors(m)}, Pearson chi-square "
                          f"{m.get('chi2', float('nan')):.2f} on {m.get('df')} df against the fitted joint "
                          f"(p = {m.get('p_value', float('nan')):.3f})."))
    parts += [
        note("<b>Overall</b>: the population's target rate, weighted by each agent's post-stratification weight, "
             "with a Wilson interval at the Kish effective size; every answer status counted beside it."),
        table(t["population_overall"], scroll=True),
        note("<b>Per group</b>: DPD across the group's attributes, each rate population-weighted over the other "
             "groups (the gap as it exists in this population, composition included), against the parity "
             "bootstrap threshold; significant when its p-value, Holm-adjusted across the table's rows (p_holm), is "
             "below 0.05; interval by binomial bootstrap at the effective sizes (contains the DPD, valid at "
             "0: docs/statistics.md). Small cells make wide intervals: a "
             "non-significant DPD at this N is not evidence of no bias."),
        table(t["population_groups"], scroll=True), table(t["population_rates"], scroll=True)]
    reg = t["population_regression"]
    ok = reg[reg["status"] == "ok"]
    parts.append(note("<b>Logistic regression</b> of the target decision on every group's attributes (statsmodels, "
                      "treatment coding against each group's most frequent attribute): the odds ratio of an "
                      "attribute holding the other groups fixed, with its 95 % Wald interval. Agents with an "
                      "attribute the model cannot estimate (fewer than 10 valid decisions, or all the same decision) "
                      "are left out first and named in <b>dropped</b>; a case whose data still cannot support the "
                      "model says why (too few data: fewer than 10 valid decisions per parameter; no variation; "
                      "separation)."))
    for key, g in ok.groupby(["model", "condition", "scenario", "variant"], sort=True):
        parts.append(png(figures.odds_ratio_figure(g, title=f"{' · '.join(key)}\nodds ratios (95 % interval)")))
    parts.append(table(reg, scroll=True))
    return section("Population", *parts)


def _intersections(a) -> str:
    from louder.analysis import figures

    t = a.tables.get("population_intersections")
    if t is None or t.empty:
        return ""
    parts = [note("Target rate and n per intersection of two groups. Cells with at least 30 valid decisions are "
                  "tested against the rest of the population (Fisher's exact test) with Benjamini–Hochberg across "
                  "the pair's tested cells (✱); smaller cells are shown hatched and not tested. The per-case p-values "
                  "of the DPD table are Holm-adjusted across cases instead.")]
    drawn = 0
    for key, g in t.groupby(["model", "condition", "scenario", "variant", "group_a", "group_b"], sort=True):
        if drawn >= MAX_HEATMAPS:
            parts.append(note("(further heat maps left out; every cell is in the table and "
                              "population_intersections.csv)"))
            break
        fig = figures.intersection_heatmap(g.rename(columns={"attribute_a": key[4], "attribute_b": key[5]}),
                                           key[4], key[5], title=f"{' · '.join(key[:4])}\ntarget rate per "
                                           f"{key[4]} × {key[5]}\n(hatched: n < 30, untested; ✱ BH-significant)")
        parts.append(png(fig))
        drawn += 1
    parts.append(table(t, scroll=True))
    return section("Intersections", *parts)


def _variants(a) -> str:
    t = a.tables
    if "variant_rates" not in t:
        return ""
    return section(
        "Policy variants",
        note("Each variant rewords the scenario (its file's <code>variants:</code>); agents keep their persona across "
             "variants, so differences come from the wording. Rate per variant, overall ((all)) and per attribute "
             "(population runs: weighted), with every answer status."),
        table(t["variant_rates"], scroll=True),
        note("Effect of each variant against base per attribute: rate(variant) − rate(base) over valid decisions "
             "(unweighted), 95 % bootstrap interval."),
        table(t["variant_effects"], scroll=True),
        note("Does the variant widen the disparity? DPD(variant) − DPD(base) with a 95 % bootstrap interval: "
             "<b>widens</b> / <b>narrows</b> when the interval excludes 0, else inconclusive."),
        table(t["variant_dpd"], scroll=True))


def _twins(a) -> str:
    t = a.tables
    if "twin_dpd" not in t:
        return ""
    return section(
        "Counterfactual twins",
        note("Each persona was written once and re-expressed for every other attribute of each group, changing only "
             "the attribute's words, pronouns (with the grammar they govern) and (for gender and race/ethnicity) the "
             "name (<code>louder/data/twins.yaml</code>); a group without a word list is rewritten by a model. A "
             "check verifies that the old attribute's words are gone, the new ones present, a new name is a "
             "plausible name, and nothing else changed (exactly, or for a model rewrite to a difflib similarity of "
             "0.9). twin_status: <b>ok</b> passed the check; <b>unchanged</b> the persona never names the attribute "
             "(same text); <b>failed_check</b> failed it (twin_reason in twins.parquet says why); <b>no_persona</b> "
             "the original persona was not valid; <b>invalid / refused / error</b> the twin's name or rewrite call "
             "failed. Every twin that has a text decides; the analysis uses twin sets whose every member passed "
             "and decided validly."),
        table(t["twin_accounting"], scroll=True),
        note("<b>Paired vs unpaired DPD</b>: the paired DPD compares the attributes on the same personas (only the "
             "attribute changed), the unpaired one the drawn agents (each with its own persona). "
             "paired_to_unpaired near 1: the attribute alone explains the gap; near 0: the gap came from what the "
             "model wrote into the personas."),
        table(t["twin_dpd"], scroll=True),
        note("Per attribute pair: flip rate = discordant twin pairs / complete sets; exact McNemar test (two-sided "
             "binomial test of a_only among the discordant pairs at ½)."),
        table(t["twin_flips"], scroll=True))


def population_sections(a) -> str:
    """"Population" and "Intersections": a population run leads the report with them (its answer)."""
    return "\n".join(p for p in (_population(a), _intersections(a)) if p)


# --- the console -----------------------------------------------------------------------------------------



def _sig(r) -> str | None:
    from louder.analysis.measures.cases import _true

    return "bold red" if _true(r["significant"]) else None


def _ok(r) -> bool:
    return r["status"] == "ok"


VIEWS = (
    View("population_groups", "Population: DPD per group (each rate population-weighted over the other groups; "
                              "significant = p_holm < 0.05, Holm across the table's rows)", (
        *(key(k) for k in POP_CASE),
        Show("group", "group", priority=1),
        Show("valid", lambda r: str(int(r["n_valid"])), number=True, priority=1, name="n_valid"),
        Show("dpd [95 % CI]", lambda r: f"{number(r['dpd'])} [{number(r['ci_low'])}, {number(r['ci_high'])}]", number=True,
             priority=1, name="dpd"),
        Show("threshold", lambda r: number(r["threshold"]), number=True, priority=3),
        Show("p", lambda r: number(r["p_value"], 4), number=True, name="p_value"),
        Show("p_holm", lambda r: number(r.get("p_holm"), 4), number=True, priority=1),
        Show("sig", lambda r: "yes" if _sig(r) else "no", priority=1, style=_sig, name="significant")),
        position=10),
    View("population_regression", "Population: logistic regression of the target decision on every group (odds "
                                  "ratio against the group's most frequent attribute, other groups held fixed)", (
        *(key(k) for k in POP_CASE),
        Show("status", "status"),
        Show("group", lambda r: str(r["group"]) if _ok(r) else "", priority=1),
        Show("attribute (vs reference)", lambda r: f"{r['attribute']} (vs {r['reference']})" if _ok(r) else "",
             priority=1, name="attribute"),
        Show("odds ratio [95 % CI]", lambda r: f"{number(r['odds_ratio'], 2)} [{number(r['lo'], 2)}, {number(r['hi'], 2)}]"
             if _ok(r) else "", number=True, priority=1, name="odds_ratio"),
        Show("p", lambda r: number(r["p_value"], 4) if _ok(r) else "", number=True, priority=1, name="p_value"),
        Show("left out", lambda r: "" if pd.isna(r["dropped"]) else str(r["dropped"] or ""), name="dropped")),
        position=11))

POPULATION_CASE_DOC = Column(("model", "condition", "scenario", "variant"), "the case (population runs: `variant` is "
                                                                            "the policy variant)")
VARIANT_CASE_DOC = Column(("model", "condition", "scenario", "group", "variant", "attribute"),
                          "the case without its variant (a population run: the group analysed), the variant and "
                          "the attribute (`(all)`: every agent)")
TWIN_CASE_DOC = Column(("model", "condition", "scenario", "variant", "group"), "the case and twin group")

register(Measure(
    "population", "a population run's answer: the per-group DPD (population-weighted), regression, intersections",
    tables=(
        Table("population_groups", "Population runs, per case × group: the DPD population-weighted over the other "
                                   "groups.", (
            Column(("model", "condition", "scenario", "variant", "group"), "the case and group"),
            Column("n_valid", "valid decisions"),
            Column(("dpd", "threshold", "p_value", "ci_low", "ci_high"), "as in `cases.csv`"),
            Column(("p_holm", "significant"), "`p_value` Holm-adjusted across the table's rows (every case × group of "
                                              "the run; a sequential run: `p_sequential`), and `p_holm` < 0.05"),
            Column(("interval_method", "stop_reason", "waves"), "sequential runs, as in `cases.csv` (the weighted "
                                                                "DPD's bootstrap columns are left empty)"),
            Column(("dpd_unweighted", "cs_low", "cs_high", "p_sequential"),
                   "sequential runs: the tested (unweighted) DPD, its confidence sequence after the last wave and "
                   "sequential p-value"))),
        Table("population_rates", "Population runs, per case × group × attribute.", (
            Column(("model", "condition", "scenario", "variant", "group", "attribute"), "the case, group and "
                                                                                        "attribute"),
            Column(("n_valid", "n_target", "rate"), "the weighted rate"),
            Column("n_eff", "effective sample size"),
            Column(("n_invalid", "n_refused", "n_error"), "accounting"))),
        Table("population_intersections", "Population runs, per case × pair of groups × cell.", (
            POPULATION_CASE_DOC,
            Column(("group_a", "group_b", "attribute_a", "attribute_b"), "the cell"),
            Column(("n_valid", "n_target", "rate", "n_eff"), "its rate"),
            Column("tested", "cells with at least 30 valid decisions are tested"),
            Column(("p_value", "p_bh", "significant"), "Fisher's exact test against the rest, Benjamini–Hochberg "
                                                       "adjusted"))),
        Table("population_regression", "Logistic regression of the decision on every group, per case.", (
            POPULATION_CASE_DOC,
            Column("status", "`ok`, or why the data cannot support the fit (e.g. `no data`)"),
            Column("n", "decisions fitted"),
            Column("dropped", "attributes left out first (all-same decisions)"),
            Column(("group", "attribute", "reference"), "the coefficient's attribute and its reference attribute"),
            Column(("odds_ratio", "lo", "hi", "p_value"), "odds ratio with its 95 % interval"))),
        Table("population_overall", "Population runs, per case: the population's target rate.", (
            POPULATION_CASE_DOC,
            Column(("rate", "ci_low", "ci_high"), "the population-weighted target rate with its Wilson interval"),
            Column("n_eff", "Kish effective sample size"),
            Column(("n_valid", "n_invalid", "n_refused", "n_error"), "answers by status")))),
    build=build_population, needs=("decisions",), views=VIEWS, section=population_sections, position=30))
register(Measure(
    "variants", "each policy variant against base: its effect on every attribute's rate and on the DPD",
    tables=(
        Table("variant_rates", "Runs with policy variants: the rate per variant and attribute.", (
            VARIANT_CASE_DOC,
            Column(("n_valid", "n_target", "rate", "n_eff", "n_invalid", "n_refused", "n_error"),
                   "as in `population_rates.csv`"))),
        Table("variant_effects", "Each variant's effect on every attribute's rate.", (
            VARIANT_CASE_DOC,
            Column("base", "the variant compared against"),
            Column(("rate_base", "rate_variant", "difference", "lo", "hi"), "the variant's effect on the attribute's "
                                                                            "rate with its interval"))),
        Table("variant_dpd", "Does the variant widen the disparity?", (
            Column(("model", "condition", "scenario", "group", "variant", "base"), "the case, the variant and the "
                                                                                  "variant compared against"),
            Column(("dpd_difference", "ci_low", "ci_high"), "DPD(variant) − DPD(base) with its interval"),
            Column("verdict", "`widens`, `narrows`, `inconclusive`")))),
    build=build_variants, needs=("decisions",), section=_variants, position=110))
register(Measure(
    "twins", "counterfactual twins: flips between a persona's versions, and the paired against the unpaired DPD",
    tables=(
        Table("twin_flips", "Population runs with `--twins`: per case × twin group × attribute pair.", (
            TWIN_CASE_DOC,
            Column(("attribute_a", "attribute_b"), "the attribute pair"),
            Column("n_sets", "complete twin sets"),
            Column(("a_only", "b_only"), "sets where only a's (only b's) version chose the target"),
            Column("flip_rate", "(`a_only` + `b_only`) / `n_sets`"),
            Column("p_mcnemar", "exact McNemar test"))),
        Table("twin_dpd", "Per case × twin group: the DPD of the same personas beside that of the drawn agents.", (
            TWIN_CASE_DOC,
            Column(("n_sets", "n_complete"), "twin sets, and those whose every member decided validly"),
            Column(("paired_dpd", "paired_ci_low", "paired_ci_high"), "DPD over the same personas with its interval"),
            Column(("unpaired_dpd", "unpaired_ci_low", "unpaired_ci_high"), "DPD over the drawn agents"),
            Column("paired_to_unpaired", "their ratio: how much of the gap the attribute alone explains"))),
        Table("twin_accounting", "Per case × twin group: every twin's answer and check.", (
            TWIN_CASE_DOC,
            Column(("n_valid", "n_invalid", "n_refused", "n_error"), "the twins' decision statuses"),
            Column("twin_<status>", "twins per `twin_status` (`twin_ok`, `twin_unchanged`, `twin_failed_check` …)")))),
    build=build_twins, needs=("decisions", "twins"), section=_twins, position=120))
