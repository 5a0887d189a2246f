"""Implicit vs explicit (sections 5.1/5.3): ``contrast.csv`` per model, ``contrast_cases.csv`` per case —
each implicit case beside the explicit probe of its scenario × group (``louder.analysis.stats.contrast``)."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Column, Figure, Finding, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.contrast import contrast, contrast_cases


def build(a) -> dict[str, pd.DataFrame]:
    cases = a.tables["cases"]
    if a.decisions is not None and a.probes is not None:  # implicit and explicit pair by case
        sim = set(map(tuple, a.decisions[["model", "scenario", "group"]].drop_duplicates().to_numpy()))
        exp = set(map(tuple, a.probes[["model", "scenario", "group"]].drop_duplicates().to_numpy()))
        for m, s, g in sorted(sim - exp):
            a.missing.append(f"explicit probes: none for {m} × {s} × {g}, which the simulation has")
    return {"contrast": contrast(cases, beliefs=a.tables.get("voices")),
            "contrast_cases": contrast_cases(cases, a.tables["attributes"], B=a.bootstrap, seed=a.seed)}


TITLE = "Implicit vs explicit (section 5.1)"


def contrast_section(a) -> str:
    return section(TITLE,
                   note("Per model: mean DPD over implicit (contextualized) and explicit cases, and Welch's t-test. "
                        "With beliefs (<code>louder probe beliefs</code>): the mean belief DPD and Welch's t-test of "
                        "implicit vs belief (t_belief, p_value_belief) — does the model act more biased than it "
                        "believes people are? Implicit and belief DPDs are both differences of rates of choosing the "
                        "target; the explicit DPD is a difference of shares of answers (next section)."),
                   a.figure("contrast"),
                   table(a.tables["contrast"]),
                   *([note("Per case: each implicit case beside the explicit probe of its scenario × group, and the "
                           "difference implicit − explicit with an interval that contains it (conservative: it holds "
                           "both cases' intervals at once). A case with one side only says in <i>note</i> what adds "
                           "the other."),
                      table(a.tables["contrast_cases"], scroll=True)] if len(a.tables.get("contrast_cases", ())) else []))


def contrast_figure(a):
    """Per case: the agents' DPD beside the explicit probe's, each with its interval (left), and their
    difference implicit − explicit with its interval (right), a dashed line at 0."""
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.lines import Line2D

    from louder.analysis.report import palette as P
    from louder.analysis.report.draw import interval

    t = a.tables.get("contrast_cases")
    if t is None or t.empty:
        return None
    t = t.reset_index(drop=True)
    both = t["difference"].notna().any()
    fig = MplFigure(figsize=(8.4 if both else 6.0, 0.3 * len(t) + 1.4), layout="constrained")
    axes = fig.subplots(1, 2 if both else 1, squeeze=False, sharey=True)[0]
    y = -np.arange(len(t), dtype=float)
    for yi, (_, r) in zip(y, t.iterrows()):
        if pd.notna(r["implicit_dpd"]):
            interval(axes[0], r["implicit_dpd"], yi + 0.12, r["implicit_ci_low"], r["implicit_ci_high"],
                     color=P.IMPLICIT, ms=4)
        if pd.notna(r["explicit_dpd"]):
            interval(axes[0], r["explicit_dpd"], yi - 0.12, r["explicit_ci_low"], r["explicit_ci_high"],
                     color=P.EXPLICIT, marker="s", ms=4)
        if both and pd.notna(r["difference"]):
            lo, hi = r["diff_ci_low"], r["diff_ci_high"]
            color = P.UP if lo > 0 else P.DOWN if hi < 0 else P.NEUTRAL
            interval(axes[1], r["difference"], yi, lo, hi, color=color, marker="D", ms=4)
    several = t["model"].nunique() > 1
    labels = [textwrap.shorten(f"{r['scenario']} × {r['group']}" + (
        f" · {r['condition']}" if isinstance(r["condition"], str) and r["condition"] else "") + (
        f" · {r['model']}" if several else ""), 70) for _, r in t.iterrows()]
    axes[0].set_yticks(y, labels, fontsize=7)
    axes[0].set_xlim(-0.02, 1.02)
    axes[0].set_xlabel("DPD (95 % interval)", fontsize=8)
    fig.legend(handles=[Line2D([], [], color=P.IMPLICIT, marker="o", label="implicit (agents)"),
                        Line2D([], [], color=P.EXPLICIT, marker="s", label="explicit (asked directly)")],
               fontsize=7, loc="outside lower center", ncol=2, frameon=False)
    if both:
        axes[1].axvline(0, color=P.GREY, ls="--", lw=1)
        axes[1].set_xlabel("implicit − explicit (95 % interval)", fontsize=8)
    fig.suptitle("Implicit beside explicit, per case", fontsize=9)
    return fig


def findings(a) -> list[Finding]:
    """Per model: do the agents act more unequally than the model says when asked (Welch's test)?"""
    c = a.tables.get("contrast")
    if c is None or c.empty:
        return []
    out = []
    for _, r in c.iterrows():
        if not (r["n_implicit"] > 0 and r["n_explicit"] > 0):
            continue
        means = (f"the agents' DPDs average {r['mean_implicit']:.2f} over {int(r['n_implicit'])} case(s), the model's "
                 f"answers when asked {r['mean_explicit']:.2f} over {int(r['n_explicit'])}")
        if pd.isna(r["p_value"]):
            verdict = "too few cases for Welch's test"
        elif r["p_value"] < 0.05:
            verdict = (f"the agents act more unequally than the model says (Welch's t-test p = {r['p_value']:.4f}: the "
                       "paper's implicit ≫ explicit)" if r["mean_implicit"] > r["mean_explicit"] else
                       f"the model says more unequal things than its agents do (Welch's t-test p = {r['p_value']:.4f})")
        else:
            verdict = f"no difference shown (Welch's t-test p = {r['p_value']:.4f})"
        out.append(Finding(f"Implicit against explicit: {means}; {verdict}.", TITLE, str(r["model"])))
    return out


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
    build=build, inputs=(Input("decisions"), Input("probes")), after=("cases", "attributes", "voices"), section=contrast_section, position=50,
    figures=(Figure("contrast", contrast_figure, "Per case: the agents' DPD beside the explicit probe's, each a point "
                  "with its 95 % interval, and their difference implicit − explicit with its interval."),),
    findings=findings))
