"""Implicit vs explicit (sections 5.1/5.3): ``contrast.csv`` per model, ``contrast_cases.csv`` per case —
each implicit case beside the explicit probe of its scenario × group (``louder.analysis.contrast``)."""

from __future__ import annotations

import pandas as pd

from louder.analysis.contrast import contrast, contrast_cases
from louder.analysis.html import note, section, table
from louder.analysis.registry import Column, Input, Measure, Table, register


def build(a) -> dict[str, pd.DataFrame]:
    cases = a.tables["cases"]
    if a.decisions is not None and a.probes is not None:  # implicit and explicit pair by case
        sim = set(map(tuple, a.decisions[["model", "scenario", "group"]].drop_duplicates().to_numpy()))
        exp = set(map(tuple, a.probes[["model", "scenario", "group"]].drop_duplicates().to_numpy()))
        for m, s, g in sorted(sim - exp):
            a.missing.append(f"explicit probes: none for {m} × {s} × {g}, which the simulation has")
    return {"contrast": contrast(cases, beliefs=a.tables.get("voices")),
            "contrast_cases": contrast_cases(cases, a.tables["attributes"], B=a.bootstrap, seed=a.seed)}


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
    build=build, inputs=(Input("decisions"), Input("probes")), after=("cases", "attributes", "voices"), section=contrast_section, position=50))
