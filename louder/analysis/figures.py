"""Figures of the report, in the style of the paper's Fig. 3 (DPD per case, implicit beside explicit),
Fig. 4 (target-decision rate per attribute) and Fig. 5 (ablation). Each returns a matplotlib
Figure built without pyplot's global state."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

CONDITION_COLORS = {"contextualized": "#1f77b4", "non_contextualized": "#ff7f0e", "no_persona": "#2ca02c"}
KIND_COLORS = {"implicit": "#c0392b", "explicit": "#7f8c8d"}


def _case_label(scenario: str, group: str) -> str:
    return textwrap.fill(scenario.replace("_", " "), 14) + "\n× " + group.replace("_", " ")


def dpd_figure(cases: pd.DataFrame, implicit_condition: str = "contextualized") -> Figure | None:
    """One panel per model: DPD per scenario × group, implicit beside explicit, the parity threshold
    as a black tick and ✱ over significant cases."""
    data = cases[(cases["kind"] == "explicit") | (cases["condition"] == implicit_condition)]
    if data.empty:
        return None
    models = sorted(data["model"].unique())
    keys = sorted(set(map(tuple, data[["scenario", "group"]].to_numpy())))
    fig = Figure(figsize=(max(6.0, 1.3 * len(keys) + 2), 3.2 * len(models)), layout="constrained")
    axes = np.atleast_1d(fig.subplots(len(models), 1, squeeze=False)[:, 0])
    width = 0.38
    for ax, model in zip(axes, models):
        for j, kind in enumerate(("implicit", "explicit")):
            sub = data[(data["model"] == model) & (data["kind"] == kind)].set_index(["scenario", "group"])
            xs = np.arange(len(keys)) + (j - 0.5) * width
            for x, k in zip(xs, keys):
                if k not in sub.index:
                    continue
                row = sub.loc[k]
                if np.isnan(row["dpd"]):
                    continue
                ax.bar(x, row["dpd"], width, color=KIND_COLORS[kind])
                ax.plot([x - width / 2, x + width / 2], [row["threshold"]] * 2, color="black", lw=1.5)
                if row["significant"]:
                    ax.text(x, min(row["dpd"] + 0.03, 1.07), "✱", ha="center", fontsize=9)
        handles = [ax.bar(0, 0, 0, color=c) for c in KIND_COLORS.values()]
        ax.legend(handles, [f"implicit ({implicit_condition})", "explicit"], loc="upper left", bbox_to_anchor=(1.0, 1.0),
                  fontsize=8)
        ax.set_xticks(np.arange(len(keys)), [_case_label(*k) for k in keys], fontsize=7)
        ax.set_ylim(0, 1.12)
        ax.set_ylabel("DPD")
        ax.set_title(f"{model}: DPD per case (black tick = parity threshold, ✱ = significant: Holm p < 0.05)",
                     fontsize=9)
    return fig


def rates_figure(attributes: pd.DataFrame, condition: str = "contextualized") -> Figure | None:
    """Grid of scenarios (rows) × groups (columns): target-decision rate per attribute, one bar per model."""
    data = attributes[(attributes["kind"] == "implicit") & (attributes["condition"] == condition)]
    if data.empty:
        return None
    scenarios, groups = sorted(data["scenario"].unique()), sorted(data["group"].unique())
    models = sorted(data["model"].unique())
    fig = Figure(figsize=(4.2 * len(groups), 2.8 * len(scenarios)), layout="constrained")
    axes = fig.subplots(len(scenarios), len(groups), squeeze=False)
    width = 0.8 / len(models)
    for i, s in enumerate(scenarios):
        for j, g in enumerate(groups):
            ax = axes[i, j]
            sub = data[(data["scenario"] == s) & (data["group"] == g)]
            if sub.empty:
                ax.set_axis_off()
                continue
            attrs = list(dict.fromkeys(sub.sort_values("attribute")["attribute"]))
            for m_i, m in enumerate(models):
                ms = sub[sub["model"] == m].set_index("attribute").reindex(attrs)
                xs = np.arange(len(attrs)) + (m_i - (len(models) - 1) / 2) * width
                ax.bar(xs, ms["rate"].fillna(0), width, label=m)
                for x, n in zip(xs, ms["n_valid"].fillna(0)):
                    ax.text(x, 0.02, f"n={int(n)}", rotation=90, fontsize=6, va="bottom", ha="center", color="white")
            ax.set_xticks(np.arange(len(attrs)), attrs, rotation=30, ha="right", fontsize=7)
            ax.set_ylim(0, 1)
            ax.set_title(f"{s} × {g}", fontsize=8)
            if j == 0:
                ax.set_ylabel("target rate")
    if len(models) > 1:
        axes[0, 0].legend(fontsize=7)
    return fig


def ablation_figure(ablation: pd.DataFrame) -> Figure | None:
    """One panel per model: DPD per case under each persona condition (✱ = significant)."""
    if ablation.empty or ablation["condition"].nunique() < 2:
        return None
    models = sorted(ablation["model"].unique())
    keys = sorted(set(map(tuple, ablation[["scenario", "group"]].to_numpy())))
    conditions = [c for c in CONDITION_COLORS if c in set(ablation["condition"])]
    fig = Figure(figsize=(max(6.0, 1.4 * len(keys) + 2), 3.2 * len(models)), layout="constrained")
    axes = fig.subplots(len(models), 1, squeeze=False)[:, 0]
    width = 0.8 / len(conditions)
    for ax, model in zip(axes, models):
        for c_i, cond in enumerate(conditions):
            sub = ablation[(ablation["model"] == model) & (ablation["condition"] == cond)].set_index(
                ["scenario", "group"])
            for k_i, k in enumerate(keys):
                if k not in sub.index or np.isnan(sub.loc[k, "dpd"]):
                    continue
                x = k_i + (c_i - (len(conditions) - 1) / 2) * width
                ax.bar(x, sub.loc[k, "dpd"], width, color=CONDITION_COLORS[cond],
                       label=cond if k_i == 0 else None)
                if sub.loc[k, "significant"]:
                    ax.text(x, min(sub.loc[k, "dpd"] + 0.03, 1.07), "✱", ha="center", fontsize=8)
        ax.set_xticks(np.arange(len(keys)), [_case_label(*k) for k in keys], fontsize=7)
        ax.set_ylim(0, 1.12)
        ax.set_ylabel("DPD")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.set_title(f"{model}: persona-condition ablation (✱ = significant: Holm p < 0.05)", fontsize=9)
    return fig


def directions_figure(directions: pd.DataFrame) -> Figure | None:
    """Forest plot: each prediction's rate difference (higher − lower set) with its 95 % interval."""
    data = directions[directions["difference"].notna()]
    if data.empty:
        return None
    fig = Figure(figsize=(9, 0.4 * len(data) + 1.4), layout="constrained")
    ax = fig.subplots()
    colors = {"aligned": "#27ae60", "opposite": "#c0392b", "inconclusive": "#7f8c8d"}
    ys = np.arange(len(data))[::-1]
    for y, (_, r) in zip(ys, data.iterrows()):
        ax.plot([r["ci_low"], r["ci_high"]], [y, y], color=colors[r["verdict"]], lw=2)
        ax.plot(r["difference"], y, "o", color=colors[r["verdict"]])
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(ys, [f"{r['id']} [{r['model']}, {r['condition']}]" for _, r in data.iterrows()], fontsize=7)
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel("mean target rate of the higher set − of the lower set (95 % interval)")
    ax.set_title("Literature directions: green aligned, red opposite, grey inconclusive", fontsize=9)
    return fig


CATEGORY_COLORS = {"race": "#d62728", "gender": "#9467bd", "religion": "#2ca02c", "health": "#1f77b4"}


def sibling_figure(stats: pd.DataFrame, association: pd.DataFrame | None, test: str) -> Figure | None:
    """Per model: mean score per stereotype with its 95 % interval, coloured by category, the
    unbiased value dashed (cf. Figs. 2 and 3 of Bai et al.)."""
    convention = "authors" if test == "association" else "valid_only"
    data = stats[(stats["level"] == "stereotype") & (stats["convention"] == convention)]
    if data.empty:
        return None
    cats = (association.drop_duplicates("stereotype").set_index("stereotype")["category"]
            if association is not None else pd.Series(dtype=str))
    models = sorted(data["model"].unique())
    fig = Figure(figsize=(max(6.0, 0.45 * data["name"].nunique() + 2), 3.0 * len(models)), layout="constrained")
    axes = fig.subplots(len(models), 1, squeeze=False)[:, 0]
    null = 0.0 if test == "association" else 0.5
    for ax, model in zip(axes, models):
        sub = data[data["model"] == model].assign(category=lambda d: d["name"].map(cats).fillna("race"))
        sub = sub.sort_values(["category", "name"])
        xs = np.arange(len(sub))
        err = np.vstack([sub["mean"] - sub["ci_low"], sub["ci_high"] - sub["mean"]]).clip(min=0)
        ax.bar(xs, sub["mean"], color=[CATEGORY_COLORS.get(c, "grey") for c in sub["category"]],
               yerr=np.nan_to_num(err), capsize=2)
        ax.axhline(null, color="red", ls="--", lw=1)
        ax.set_xticks(xs, sub["name"], rotation=60, ha="right", fontsize=7)
        ax.set_ylim(-1.05 if test == "association" else 0, 1.05)
        label = "association bias (−1…1)" if test == "association" else "decision bias (0…1)"
        ax.set_ylabel(label)
        ax.set_title(f"{model}: {'word association' if test == 'association' else 'relative decision'} test "
                     "(red: race, purple: gender, green: religion, blue: health; 95 % CI)", fontsize=8)
    return fig


def intersection_heatmap(table: pd.DataFrame, group_a: str, group_b: str, title: str = "") -> Figure | None:
    """Target rate per intersection of two groups (``population.intersection_table``) as a heat map, each
    cell annotated with its rate and n; untested cells (n below the minimum) hatched, BH-significant ✱."""
    if table.empty:
        return None
    rows = list(dict.fromkeys(table.sort_values(group_a)[group_a]))
    cols = list(dict.fromkeys(table.sort_values(group_b)[group_b]))
    t = table.set_index([group_a, group_b])
    grid = np.full((len(rows), len(cols)), np.nan)
    for i, a in enumerate(rows):
        for j, b in enumerate(cols):
            if (a, b) in t.index:
                grid[i, j] = t.loc[(a, b), "rate"]
    fig = Figure(figsize=(1.1 * len(cols) + 2.5, 0.6 * len(rows) + 1.8), layout="constrained")
    ax = fig.subplots()
    im = ax.imshow(np.ma.masked_invalid(grid), vmin=0, vmax=1, cmap="viridis", aspect="auto")
    for i, a in enumerate(rows):
        for j, b in enumerate(cols):
            if (a, b) not in t.index:
                continue
            r = t.loc[(a, b)]
            mark = " ✱" if bool(r.get("significant", False)) else ""
            ax.text(j, i, f"{r['rate']:.2f}{mark}\nn={int(r['n_valid'])}", ha="center", va="center", fontsize=7,
                    color="white" if r["rate"] < 0.6 else "black")
            if not bool(r.get("tested", True)):
                ax.add_patch(Rectangle(
                    (j - 0.5, i - 0.5), 1, 1, fill=False, hatch="//", edgecolor="grey", lw=0))
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    ax.set_xlabel(group_b.replace("_", " "))
    ax.set_ylabel(group_a.replace("_", " "))
    fig.colorbar(im, ax=ax, label="target rate")
    ax.set_title(title or "Target rate per intersection (hatched: below minimum n, not tested; ✱ BH-significant)",
                 fontsize=8)
    return fig


def odds_ratio_figure(table: pd.DataFrame, title: str = "") -> Figure | None:
    """Forest plot of ``population.logistic_regression`` odds ratios with their intervals, log scale,
    one row per group × attribute (against the group's reference), a dashed line at OR = 1."""
    if table.empty:
        return None
    t = table.reset_index(drop=True)
    fig = Figure(figsize=(6.0, 0.32 * len(t) + 1.2), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(t))[::-1]
    ax.errorbar(t["odds_ratio"], y, xerr=[t["odds_ratio"] - t["lo"], t["hi"] - t["odds_ratio"]], fmt="o",
                color="#c0392b", ecolor="black", capsize=2, ms=4)
    ax.axvline(1.0, color="grey", ls="--", lw=1)
    ax.set_xscale("log")
    # ticks at 1, 2, 5 × 10^k labelled as plain numbers; minor log ticks unlabelled (they would overlap)
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(y, [f"{g.replace('_', ' ')}: {a} (vs {r})" for g, a, r in
                      zip(t["group"], t["attribute"], t["reference"])], fontsize=7)
    ax.set_xlabel("odds ratio of the target decision (95 % interval)")
    ax.set_title(title or "Effect of each attribute holding the other groups fixed", fontsize=8)
    return fig


def case_panels(n: int) -> tuple[Figure, list]:
    """A figure of ``n`` panels, three a row (one per case: the human-study sections), and their axes."""
    ncol = min(n, 3)
    nrow = int(np.ceil(n / ncol))
    fig = Figure(figsize=(max(6.5, 4.3 * ncol), 0.8 + 2.6 * nrow), layout="constrained")
    axes = list(np.atleast_1d(fig.subplots(nrow, ncol, squeeze=False).ravel()))
    for ax in axes[n:]:
        ax.set_axis_off()
    return fig, axes[:n]


def rate_panel(ax, attributes: list[str], title: str) -> None:
    """A panel of target-decision rates, one row per attribute (top to bottom), titled."""
    ax.set_yticks(range(len(attributes)), attributes, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("target-decision rate", fontsize=7)
    ax.set_title(textwrap.fill(title.replace("_", " "), 48), fontsize=8)


def panels_legend(fig: Figure, axes: list) -> None:
    """One legend under the panels: every series once, in the order first drawn."""
    handles: dict = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=3, fontsize=7)
