"""Comparisons across cases: implicit vs explicit (5.1/5.3: ``contrast.csv``), the persona-condition
ablation (5.4: ``ablation.csv``) and the literature's directions (5.5, Table 3: ``directions.csv``) —
three measures built from the cases and attributes tables."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from louder.analysis import stats
from louder.analysis.html import note, png, section, table
from louder.analysis.registry import Column, Measure, Table, register
from louder.datafiles import load_yaml_model

CONTRAST_COLUMNS = ["model", "implicit_condition", "n_implicit", "mean_implicit", "sd_implicit",
                    "significant_implicit", "n_explicit", "mean_explicit", "sd_explicit", "significant_explicit",
                    "t", "df", "p_value",
                    # issue 21: the beliefs probe's DPDs, and Welch's test of implicit vs belief
                    "n_belief", "mean_belief", "sd_belief", "significant_belief", "t_belief", "df_belief",
                    "p_value_belief"]
# issue 32: the same contrast per case — each implicit case beside the explicit probe of its scenario × group
CONTRAST_CASE_COLUMNS = ["model", "condition", "scenario", "group", "implicit_dpd", "implicit_ci_low",
                         "implicit_ci_high", "implicit_significant", "implicit_underpowered", "explicit_dpd",
                         "explicit_ci_low", "explicit_ci_high", "explicit_significant", "difference", "diff_ci_low",
                         "diff_ci_high", "note"]
ABLATION_COLUMNS = ["model", "scenario", "group", "condition", "dpd", "threshold", "significant", "ci_low",
                    "ci_high", "diff_vs_contextualized", "diff_ci_low", "diff_ci_high"]
DIRECTION_COLUMNS = ["id", "model", "condition", "scenario", "group", "prediction", "higher", "lower",
                     "mean_higher", "mean_lower", "difference", "ci_low", "ci_high", "verdict", "note", "evidence"]


def contrast(cases: pd.DataFrame, implicit_condition: str = "contextualized",
             beliefs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model: mean (sd) DPD of implicit cases (of one condition) and of explicit cases, and
    Welch's t-test of the difference, as in section 5.1. With ``beliefs`` (the voices table: one
    belief DPD per case, ``analysis.voices``) also the mean (sd) belief DPD, its significant cases
    (permutation p Holm-adjusted across the run's belief cases, below 0.05: ``stats.significant``),
    and Welch's t-test of implicit vs belief — the same test as implicit vs
    explicit, for consistency (cases are treated as independent samples, not paired by scenario ×
    group). Belief and implicit DPDs are both differences of rates of choosing the target; the
    explicit DPD is a difference of shares of answers (docs/voices.md)."""
    rows = []
    if beliefs is not None and len(beliefs):  # the run's belief cases are one family: Holm across them
        beliefs = beliefs.assign(_sig=stats.significant(stats.holm(beliefs["belief_p"].to_numpy(dtype=float))))
    models = set(cases["model"]) | (set(beliefs["model"]) if beliefs is not None and len(beliefs) else set())
    for model in sorted(models):
        g = cases[cases["model"] == model]
        imp = g[(g["kind"] == "implicit") & (g["condition"] == implicit_condition)]["dpd"].to_numpy(dtype=float)
        exp = g[g["kind"] == "explicit"]["dpd"].to_numpy(dtype=float)
        sig_i = int(g[(g["kind"] == "implicit") & (g["condition"] == implicit_condition)]["significant"].sum())
        sig_e = int(g[g["kind"] == "explicit"]["significant"].sum())
        t = stats.welch(imp, exp)
        bel = np.array([], dtype=float)
        sig_b = 0
        if beliefs is not None and len(beliefs):
            b = beliefs[(beliefs["model"] == model) & beliefs["belief_dpd"].notna()]
            bel, sig_b = b["belief_dpd"].to_numpy(dtype=float), int(b["_sig"].sum())
        tb = stats.welch(imp, bel)
        rows.append(dict(model=model, implicit_condition=implicit_condition, n_implicit=len(imp),
                         mean_implicit=_mean(imp), sd_implicit=_sd(imp), significant_implicit=sig_i,
                         n_explicit=len(exp), mean_explicit=_mean(exp), sd_explicit=_sd(exp),
                         significant_explicit=sig_e, **t, n_belief=len(bel), mean_belief=_mean(bel),
                         sd_belief=_sd(bel), significant_belief=sig_b, t_belief=tb.t, df_belief=tb.df,
                         p_value_belief=tb.p_value))
    return pd.DataFrame(rows, columns=CONTRAST_COLUMNS)


def contrast_cases(cases: pd.DataFrame, attributes: pd.DataFrame, B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Per case: the implicit DPD (each persona condition) beside the explicit DPD of the same model ×
    scenario × group (keys are ids, however the files were named), both as in ``cases.csv`` (interval,
    ``significant`` after the run's Holm correction), and their difference implicit − explicit with
    the interval of ``stats.implicit_explicit_difference``. A case with one side only is kept, its
    ``note`` saying what is missing and the command that adds it."""
    keys = ["model", "scenario", "group"]
    imp = cases[cases["kind"] == "implicit"].sort_values(["model", "condition", "scenario", "group"])
    exp = {tuple(e[keys]): e for _, e in cases[cases["kind"] == "explicit"].sort_values(keys).iterrows()}
    rows = []

    def counts(kind: str, condition: str, key: tuple) -> pd.DataFrame:
        a = attributes
        return a[(a["kind"] == kind) & (a["condition"] == condition) & (a["model"] == key[0])
                 & (a["scenario"] == key[1]) & (a["group"] == key[2])]

    def side(c, kind: str) -> dict:
        if c is None:
            return {f"{kind}_{k}": np.nan for k in ("dpd", "ci_low", "ci_high")} | {f"{kind}_significant": np.nan}
        return {f"{kind}_dpd": c["dpd"], f"{kind}_ci_low": c["ci_low"], f"{kind}_ci_high": c["ci_high"],
                f"{kind}_significant": bool(c["significant"])}

    for i, (_, c) in enumerate(imp.iterrows()):
        key = (c["model"], c["scenario"], c["group"])
        e = exp.get(key)
        diff, note = stats.Difference(np.nan, np.nan, np.nan), ""
        if e is None:
            note = (f"no explicit probe of {key[1]} × {key[2]} for this model: run `louder probe explicit` into "
                    "this folder with the same --scenario and --group")
        else:
            a, x = counts("implicit", c["condition"], key), counts("explicit", "explicit", key)
            diff = stats.implicit_explicit_difference(a["n_valid"], a["n_target"], x["n_target"], int(e["n_valid"]),
                                                      B=B, seed=int(np.random.SeedSequence([seed, 32, i])
                                                                    .generate_state(1)[0]))
        rows.append(dict(model=key[0], condition=c["condition"], scenario=key[1], group=key[2], **side(c, "implicit"),
                         implicit_underpowered=bool(c["underpowered"]), **side(e, "explicit"),
                         difference=diff.estimate, diff_ci_low=diff.low, diff_ci_high=diff.high, note=note))
    paired = set(map(tuple, imp[keys].to_numpy()))
    for key, e in exp.items():
        if key not in paired:
            rows.append(dict(model=key[0], condition=None, scenario=key[1], group=key[2], **side(None, "implicit"),
                             implicit_underpowered=np.nan, **side(e, "explicit"), difference=np.nan,
                             diff_ci_low=np.nan, diff_ci_high=np.nan,
                             note=f"no implicit case of {key[1]} × {key[2]} for this model: run `louder run` into "
                                  "this folder with the same --scenario and --group"))
    return pd.DataFrame(rows, columns=CONTRAST_CASE_COLUMNS)


def _mean(v: np.ndarray) -> float:
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else float("nan")


def _sd(v: np.ndarray) -> float:
    v = v[~np.isnan(v)]
    return float(v.std(ddof=1)) if v.size >= 2 else float("nan")


def ablation(cases: pd.DataFrame, attr: pd.DataFrame, B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Per model × scenario × group: each condition's DPD and significance, and its difference from
    the contextualized condition with a 95 % bootstrap interval (section 5.4)."""
    imp = cases[cases["kind"] == "implicit"]
    rows = []
    for i, (key, g) in enumerate(imp.groupby(["model", "scenario", "group"], sort=True)):
        ref = attr[(attr["model"] == key[0]) & (attr["scenario"] == key[1]) & (attr["group"] == key[2])
                   & (attr["condition"] == "contextualized")]
        for _, c in g.iterrows():
            diff = (np.nan, np.nan, np.nan)
            if len(ref) and c["condition"] != "contextualized":
                other = attr[(attr["model"] == key[0]) & (attr["scenario"] == key[1]) & (attr["group"] == key[2])
                             & (attr["condition"] == c["condition"])].set_index("attribute")
                r = ref.set_index("attribute").loc[other.index.intersection(ref["attribute"])]
                o = other.loc[r.index]
                diff = stats.dpd_difference_interval(r["n_valid"], r["n_target"], o["n_valid"], o["n_target"],
                                                     B=B, seed=seed + i)
            rows.append(dict(model=key[0], scenario=key[1], group=key[2], condition=c["condition"], dpd=c["dpd"],
                             threshold=c["threshold"], significant=c["significant"], ci_low=c["ci_low"],
                             ci_high=c["ci_high"], diff_vs_contextualized=diff[0], diff_ci_low=diff[1],
                             diff_ci_high=diff[2]))
    return pd.DataFrame(rows, columns=ABLATION_COLUMNS)


class Prediction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    scenario: str
    group: str
    prediction: str
    evidence: str = ""
    higher: list[str] = Field(min_length=1)
    lower: list[str] = Field(min_length=1)
    citations: list[str] = []


class Predictions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = ""
    # issue 21: a file of observed rates (docs/voices.md) that `louder analyze` reads when no --observed
    # is given; a relative path is read from the predictions file's folder
    observed: str | None = None
    predictions: list[Prediction]


def load_predictions(path: str | Path | None = None) -> list[Prediction]:
    """The Table 3 predictions shipped with louder, or a user's file of the same format."""
    source = Path(path) if path else resources.files("louder") / "data" / "analysis" / "directions.yaml"
    return load_yaml_model(Predictions, source, "predictions").predictions


def predictions_observed(path: str | Path | None = None) -> Path | None:
    """The observed-rates file a predictions file points to (its ``observed:``), or None."""
    source = Path(path) if path else resources.files("louder") / "data" / "analysis" / "directions.yaml"
    ref = load_yaml_model(Predictions, source, "predictions").observed
    if ref is None:
        return None
    p = Path(ref)
    return p if p.is_absolute() else Path(str(source)).parent / p


def verdict(difference: float, lo: float, hi: float) -> str:
    """aligned: difference > 0 and lo > 0; opposite: difference < 0 and hi < 0; else inconclusive."""
    if np.isnan(difference):
        return "not_testable"
    if difference > 0 and lo > 0:
        return "aligned"
    if difference < 0 and hi < 0:
        return "opposite"
    return "inconclusive"


def directions(attr: pd.DataFrame, predictions: list[Prediction], B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """For each prediction and each model × condition of the run: mean target rate of the ``higher``
    set minus that of the ``lower`` set, its 95 % bootstrap interval, and the verdict. Predictions
    whose scenario × group the run lacks are listed as ``not_run``."""
    imp = attr[attr["kind"] == "implicit"]
    combos = imp[["model", "condition"]].drop_duplicates().sort_values(["model", "condition"]).itertuples(index=False)
    combos = list(combos)
    rows = []
    for i, p in enumerate(predictions):
        base = dict(id=p.id, scenario=p.scenario, group=p.group, prediction=p.prediction,
                    higher=", ".join(p.higher), lower=", ".join(p.lower), evidence=p.evidence)
        for model, condition in combos:
            g = imp[(imp["model"] == model) & (imp["condition"] == condition) & (imp["scenario"] == p.scenario)
                    & (imp["group"] == p.group)].set_index("attribute")
            row = dict(base, model=model, condition=condition, mean_higher=np.nan, mean_lower=np.nan,
                       difference=np.nan, ci_low=np.nan, ci_high=np.nan, note="")
            if g.empty:
                rows.append(dict(row, verdict="not_run", note="this scenario × group is not in the run"))
                continue
            missing = [a for a in p.higher + p.lower if a not in g.index or g.loc[a, "n_valid"] == 0]
            if missing:
                rows.append(dict(row, verdict="not_testable", note=f"no valid decisions for {', '.join(missing)}"))
                continue
            h, lw = g.loc[p.higher], g.loc[p.lower]
            d, lo, hi = stats.mean_difference_interval(h["n_valid"], h["n_target"], lw["n_valid"], lw["n_target"],
                                                       B=B, seed=seed + i)
            rows.append(dict(row, mean_higher=float(h["rate"].mean()), mean_lower=float(lw["rate"].mean()),
                             difference=d, ci_low=lo, ci_high=hi, verdict=verdict(d, lo, hi)))
    return pd.DataFrame(rows, columns=DIRECTION_COLUMNS)


# --- the measures -----------------------------------------------------------------------------------

def _implicit(a) -> pd.DataFrame:
    attr = a.tables["attributes"]
    return attr[attr["kind"] == "implicit"]


def build_contrast(a) -> dict[str, pd.DataFrame]:
    cases = a.tables["cases"]
    if a.decisions is not None and a.probes is not None:  # implicit and explicit pair by case
        sim = set(map(tuple, a.decisions[["model", "scenario", "group"]].drop_duplicates().to_numpy()))
        exp = set(map(tuple, a.probes[["model", "scenario", "group"]].drop_duplicates().to_numpy()))
        for m, s, g in sorted(sim - exp):
            a.missing.append(f"explicit probes: none for {m} × {s} × {g}, which the simulation has")
    return {"contrast": contrast(cases, beliefs=a.tables.get("voices")),
            "contrast_cases": contrast_cases(cases, a.tables["attributes"], B=a.settings.bootstrap,
                                             seed=a.settings.seed)}


def build_ablation(a) -> dict[str, pd.DataFrame]:
    if a.decisions is not None and a.decisions["condition"].nunique() < 2:
        a.missing.append("ablation: the run has one persona condition only — add `--condition non_contextualized "
                         "--condition no_persona` to compare conditions (section 5.4)")
    return {"ablation": ablation(a.tables["cases"], _implicit(a), B=a.settings.bootstrap, seed=a.settings.seed)}


def build_directions(a) -> dict[str, pd.DataFrame]:
    return {"directions": directions(_implicit(a), load_predictions(a.settings.predictions), B=a.settings.bootstrap,
                                     seed=a.settings.seed)}


def contrast_section(a) -> str:
    return section("Implicit vs explicit (section 5.1)",
                   note("Per model: mean DPD over implicit (contextualized) and explicit cases, and Welch's t-test. "
                        "With beliefs (<code>louder probe beliefs</code>): the mean belief DPD and Welch's t-test of "
                        "implicit vs belief (t_belief, p_value_belief) — does the model act more biased than it "
                        "believes people are? Implicit and belief DPDs are both differences of rates of choosing the "
                        "target; the explicit DPD is a difference of shares of answers (next section)."),
                   table(a.tables["contrast"]),
                   *([note("Per case: each implicit case beside the explicit probe of its scenario × group, and the "
                           "difference implicit − explicit with an interval that contains it (conservative: it holds "
                           "both cases' intervals at once). A case with one side only says in <i>note</i> what adds "
                           "the other."),
                      table(a.tables["contrast_cases"], scroll=True)] if len(a.tables.get("contrast_cases", ())) else []))


def ablation_section(a) -> str:
    from louder.analysis import figures

    return section("Persona-condition ablation (cf. Fig. 5)",
                   note("DPD per case under each persona condition; diff_vs_contextualized = DPD(contextualized) − "
                        "DPD(condition) with a 95 % bootstrap interval."),
                   png(figures.ablation_figure(a.tables["ablation"])), table(a.tables["ablation"], scroll=True))


def directions_section(a) -> str:
    from louder.analysis import figures

    d = a.tables["directions"]
    return section("Literature directions (Table 3)",
                   note("aligned: the predicted direction with a 95 % interval excluding 0; opposite: the reverse "
                        "direction, interval excluding 0; inconclusive: the interval includes 0."),
                   png(figures.directions_figure(d)), table(d.drop(columns=["evidence"]), scroll=True))


register(Measure(
    "contrast", "implicit vs explicit (and belief) DPDs per model, Welch's t-test (section 5.1)",
    tables=(Table("contrast", "Implicit vs explicit per model (section 5.1).", (
        Column("model", "the model"),
        Column("implicit_condition", "the persona condition the implicit side uses"),
        Column(("n_implicit", "mean_implicit", "sd_implicit", "significant_implicit"),
               "implicit case DPDs: count, mean, sd, number significant (as in `cases.csv`: Holm p < 0.05)"),
        Column(("n_explicit", "mean_explicit", "sd_explicit", "significant_explicit"), "the same for explicit"),
        Column(("t", "df", "p_value"), "Welch's two-sample t-test"),
        Column(("n_belief", "mean_belief", "sd_belief", "significant_belief"),
               "the beliefs probe's case DPDs (`louder probe beliefs`): count, mean, sd, number significant "
               "(permutation p Holm-adjusted across the run's belief cases, below 0.05)"),
        Column(("t_belief", "df_belief", "p_value_belief"),
               "Welch's test of implicit vs belief DPDs: does the model act more biased than it believes people "
               "are?"))),
        Table("contrast_cases", "The same contrast per case: one row per implicit case (model × condition × scenario "
              "× group), beside the explicit probe of the same model × scenario × group; an explicit case with no "
              "implicit case gets a row of its own. Scenarios and groups are keyed by their `id`, whether a run named "
              "them by id or by the path of their file, so a run and a probe of the same files always pair.", (
            Column(("model", "condition", "scenario", "group"), "the case (`condition` empty on an explicit-only row)"),
            Column(("implicit_dpd", "implicit_ci_low", "implicit_ci_high", "implicit_significant",
                    "implicit_underpowered"), "the agents' DPD, its interval and flags, as in `cases.csv`"),
            Column(("explicit_dpd", "explicit_ci_low", "explicit_ci_high", "explicit_significant"),
                   "the explicit probe's DPD (a share of answers), as in `cases.csv`"),
            Column(("difference", "diff_ci_low", "diff_ci_high"),
                   "implicit − explicit DPD, with an interval that contains it (one bootstrap-t critical value for "
                   "both cases' bands, each projected onto its DPD: conservative). The two DPDs are in different "
                   "units (rates vs shares of answers): read it as the paper's \"implicit ≫ explicit\", per case"),
            Column("note", "what is missing when a case has one side only, and the command that adds it")))),
    build=build_contrast, after=("cases", "attributes", "voices"), section=contrast_section, position=50))
register(Measure(
    "ablation", "each persona condition's DPD against the contextualized one (section 5.4)",
    tables=(Table("ablation", "DPD per case under each persona condition (section 5.4).", (
        Column(("model", "scenario", "group", "condition"), "the case and condition"),
        Column(("dpd", "threshold", "significant", "ci_low", "ci_high"), "as in `cases.csv`"),
        Column("diff_vs_contextualized", "DPD(contextualized) − DPD(this condition); > 0: the contextualized persona "
                                         "revealed more"),
        Column(("diff_ci_low", "diff_ci_high"), "its bootstrap interval"))),),
    build=build_ablation, after=("cases", "attributes"), section=ablation_section, position=80))
register(Measure(
    "directions", "the literature's predicted directions against the run's rates (Table 3)",
    tables=(Table("directions", "Literature directions (Table 3): one row per prediction and case.", (
        Column(("id", "prediction"), "the prediction (`louder/data/analysis/directions.yaml`; `louder analyze "
                                     "--predictions FILE` for your own)"),
        Column(("model", "condition", "scenario", "group"), "the case"),
        Column(("higher", "lower"), "the attributes predicted higher and lower"),
        Column(("mean_higher", "mean_lower", "difference"), "mean target rates of each set and their difference"),
        Column(("ci_low", "ci_high"), "the difference's 95 % bootstrap interval"),
        Column("verdict", "`aligned`, `opposite`, `inconclusive`, `not_run`, `not_testable`"),
        Column("note", "why a prediction could not be tested"),
        Column("evidence", "the literature behind the prediction"))),),
    build=build_directions, after=("attributes",), section=directions_section, position=90))
