"""What ``louder analyze`` and the report make of a sequential run (issue 20).

A sequential run looked at its data after every wave and stopped when its test decided, so the
fixed-N bootstrap of ``louder analyze`` (threshold, p-value, interval, power) is not valid for it:
optional stopping inflates its false positives. For the cases the run tested, the cases table takes
the interval and p-value of the confidence sequence instead — the state after the case's last wave,
which uses every answer the table counts (valid at any time, so also after a test decided while its
item went on) — and its verdict (``stop_reason``) and ``waves``; ``interval_method`` says which
method a row's interval and p-value come from, and bootstrap columns that cannot be valid are left
empty (``with_sequential``, ``with_sequential_groups``: the cases and population measures apply
them). This measure writes no table of its own: the run wrote ``sequential.csv`` and
``sequential_waves.csv``; it prints and reports them. Statistics: ``louder.analysis.sequential``.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from louder.analysis import stats
from louder.analysis.html import note, png, section, table
from louder.analysis.keys import CASE_KEYS, POPULATION_KEYS, present, signals_as_conditions, variants_as_scenarios
from louder.analysis.registry import Measure, Show, View, key, register

BOOTSTRAP = "bootstrap"
SEQUENTIAL = "confidence sequence"
NOT_VALID = "none: a fixed-N bootstrap is not valid under optional stopping"
NOTE = ("sequential run: intervals and p-values of its cases come from the anytime-valid confidence sequence "
        "(interval_method); the fixed-N bootstrap columns are left empty — they are not valid under optional "
        "stopping")


def case_keys(df: pd.DataFrame) -> list[str]:
    """A tested case's columns (``signal``: a run with several signals tests each as a case of its own)."""
    return present(df, [*POPULATION_KEYS, "signal"])


def last_waves(final: pd.DataFrame, waves: pd.DataFrame) -> pd.DataFrame:
    """Per tested case: its state after the last wave it saw, with its ``stop_reason`` and ``waves`` run."""
    keys = case_keys(final)
    last = waves.sort_values("wave").groupby(keys, sort=False, dropna=False).tail(1)
    return last.drop(columns=["verdict"], errors="ignore").merge(final[keys + ["stop_reason"]], on=keys).assign(
        waves=lambda d: d["wave"] + 1)


def with_sequential(cases: pd.DataFrame, seq: tuple[pd.DataFrame, pd.DataFrame] | None, score: bool) -> pd.DataFrame:
    """The implicit cases table of a sequential run with the confidence sequence's interval and p-value
    (score mode: in the probability-DPD columns, the quantity the run tested) and its verdict; the
    bootstrap columns that cannot be valid are emptied; ``significant`` follows from these p-values
    with the run's Holm adjustment (``cases.with_holm``, applied after this). A fixed run's rows get
    ``interval_method`` bootstrap and nothing else changes."""
    out = cases.copy()
    out["interval_method"] = BOOTSTRAP
    if seq is None or out.empty:
        return out
    # a policy variant reads as its own scenario and a signal other than stated as its own condition, as in the cases
    last = variants_as_scenarios(signals_as_conditions(last_waves(*seq)))
    implicit = out["kind"] == "implicit"
    m = out[CASE_KEYS].merge(last, how="left", on=CASE_KEYS) if set(CASE_KEYS) <= set(last.columns) else \
        out[CASE_KEYS].assign(stop_reason=np.nan)
    tested = implicit & m["stop_reason"].notna().to_numpy()
    boot = ["threshold", "p_value", "ci_low", "ci_high", "ci_low_p", "ci_high_p", "p_value_p", "mdd", "p_independence"]
    out.loc[implicit, boot] = np.nan
    out.loc[implicit, "underpowered"] = False
    out.loc[implicit, "interval_method"] = NOT_VALID
    cols = ("ci_low_p", "ci_high_p", "p_value_p") if score else ("ci_low", "ci_high", "p_value")
    for c, src in zip(cols, ("cs_low", "cs_high", "p_value")):
        out.loc[tested, c] = m.loc[tested, src].to_numpy(dtype=float)
    out.loc[tested, "interval_method"] = SEQUENTIAL
    out["stop_reason"] = m["stop_reason"].where(tested, None).to_numpy()
    out["waves"] = pd.array(m["waves"].where(tested).to_numpy(), dtype="Int64") if "waves" in m else pd.NA
    return out


def with_sequential_groups(groups: pd.DataFrame, seq: tuple[pd.DataFrame, pd.DataFrame] | None) -> pd.DataFrame:
    """``population_groups`` of a sequential population run: per case × group the tested (unweighted)
    DPD with its confidence sequence, p-value and verdict beside the weighted DPD, whose bootstrap
    threshold, p-value and interval are emptied (not valid under optional stopping). ``p_holm`` is
    then Holm across the table's rows of the anytime-valid p-value (``p_sequential``) and
    ``significant`` the run's rule on it (``stats.significant``)."""
    if seq is None or groups.empty:
        return groups
    last = signals_as_conditions(last_waves(*seq))
    key = present(last, POPULATION_KEYS)
    m = groups[key].merge(last, how="left", on=key)
    out = groups.copy()
    tested = m["stop_reason"].notna().to_numpy()
    out[["threshold", "p_value", "ci_low", "ci_high"]] = np.nan
    out["interval_method"] = np.where(tested, SEQUENTIAL, NOT_VALID)
    out["stop_reason"] = m["stop_reason"].to_numpy()
    out["waves"] = pd.array(m["waves"].to_numpy(), dtype="Int64")
    out["dpd_unweighted"], out["cs_low"], out["cs_high"], out["p_sequential"] = (
        m[c].to_numpy(dtype=float) for c in ("dpd", "cs_low", "cs_high", "p_value"))
    out["p_holm"] = stats.holm(out["p_sequential"].to_numpy())
    out["significant"] = stats.significant(out["p_holm"].to_numpy())
    return out


# --- the report section and the console --------------------------------------------------------------

MAX_PANELS = 12
STOP_COLORS = {"disparity": "#c0392b", "undecided": "#7f8c8d"}  # parity within D: green


def sequence_figure(waves: pd.DataFrame, final: pd.DataFrame, precision: float) -> Figure | None:
    """One panel per tested case: the DPD confidence sequence (band) and the DPD (line) after each
    wave against agents per attribute, with 0 and the precision D, and the stop marked."""
    from matplotlib.figure import Figure

    if waves.empty:
        return None
    keys = case_keys(final)
    cases = final.head(MAX_PANELS)
    cols = min(3, len(cases))
    rows = -(-len(cases) // cols)
    fig = Figure(figsize=(4.2 * cols, 2.8 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, (_, case) in zip(axes, cases.iterrows()):
        w = waves
        for k in keys:
            w = w[w[k] == case[k]]
        color = STOP_COLORS.get(case["stop_reason"], "#27ae60")
        x = w["agents_per_attribute"].to_numpy()
        ax.fill_between(x, w["cs_low"], w["cs_high"], step=None, color=color, alpha=0.25, lw=0)
        ax.plot(x, w["dpd"], color=color, lw=1.2, marker="o", ms=2.5)
        ax.axhline(0, color="black", lw=0.8)
        ax.axhline(precision, color="black", lw=0.8, ls="--")
        ax.axvline(case["agents_per_attribute"], color=color, lw=1, ls=":")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("agents per attribute", fontsize=8)
        ax.set_ylabel("DPD", fontsize=8)
        label = " · ".join(str(case[k]) for k in keys if k not in ("model", "condition"))
        ax.set_title(textwrap.fill(f"{label}: {case['stop_reason']} after {case['waves']} waves", 48), fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes[len(cases):]:
        ax.set_visible(False)
    return fig


def _settings(a) -> dict:
    return (a.manifests.get("simulation") or {}).get("sequential", {})


def report_section(a) -> str:
    """The section, when the run folder holds a sequential run."""
    final, waves = a.sequential
    s = _settings(a)
    m = a.manifests.get("simulation") or {}
    precision = float(s.get("precision", 0.1))
    more = f" ({len(final) - MAX_PANELS} more cases in the tables)" if len(final) > MAX_PANELS else ""
    return section(
        "Sequential run: stop when it is decided",
        note(f"Each case ran in waves of {s.get('wave')} agents per attribute (population runs: drawn agents), up to "
             f"{s.get('budget')}. After every wave an anytime-valid test looked: a betting confidence sequence for "
             f"every pair of attributes (Waudby-Smith &amp; Ramdas 2023), each at level α/S = "
             f"{s.get('pair_level', float('nan')):.2g} (Bonferroni over the run's S = {s.get('pairs')} pairs), "
             f"projected onto the DPD. A case stopped at <b>disparity</b> when the DPD's lower bound left 0, at "
             f"<b>parity within {precision:g}</b> when its upper bound fell below {precision:g}, and is "
             f"<b>undecided</b> at the budget. Every verdict of the run is wrong with probability at most "
             f"α = {s.get('alpha')}, however often it looked. The run made {m.get('model_calls')} model calls of "
             f"the {m.get('planned_calls')} its budget allowed. {NOTE}; other fixed-N p-values and intervals of "
             f"this report (regression, intersections, ablation, directions) assume a fixed N too. "
             "p_value is the case's sequential p-value, p_adjusted its run-wide Bonferroni one."),
        table(final, scroll=True),
        note(f"The DPD confidence sequence after each wave (band), the DPD (line), 0 and the precision D = "
             f"{precision:g} (dashed); the dotted line marks where the case stopped{more}."),
        png(sequence_figure(waves, final, precision)),
        table(waves, scroll=True))


def console_title(s: dict) -> str:
    return (f"Sequential: waves of {s['wave']} up to {s['budget']}, α = {s['alpha']} for every verdict of the run "
            f"(Bonferroni over {s['pairs']} pairs of attributes); p = run-wide sequential p-value")


COLUMNS = (*(key(k) for k in POPULATION_KEYS),
           Show("stop", "stop_reason", priority=1),
           Show("waves", lambda r: str(r["waves"]), number=True),
           Show("agents", lambda r: str(r["agents_per_attribute"]), number=True, priority=1,
                name="agents_per_attribute"),
           Show("DPD", lambda r: f"{r['dpd']:.3f}", number=True, priority=1, name="dpd"),
           Show("CS", lambda r: f"[{r['cs_low']:.3f}, {r['cs_high']:.3f}]", number=True, priority=1, name="cs"),
           Show("p", lambda r: f"{r['p_adjusted']:.3g}", number=True, priority=1, name="p_adjusted"))


register(Measure(
    "sequential", "a sequential run's verdicts: the anytime-valid confidence sequence of every tested case",
    tables=(), build=lambda a: {}, needs=("sequential",),
    views=(View("sequential", lambda a: console_title(_settings(a)), COLUMNS, position=60,
                source=lambda a: a.sequential[0] if a.sequential is not None else None),),
    section=report_section, position=20, leads_to=lambda a: [NOTE] if a.sequential is not None else []))
