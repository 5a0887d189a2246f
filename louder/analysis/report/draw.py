"""Figures of the report: the DPD per case as a forest plot (the paper's Fig. 3: implicit beside
explicit, each with its interval, the parity threshold and the run's Holm marks), the target rate per
attribute with its interval (Fig. 4), the ablation (Fig. 5), and the figures several measures share.
Each returns a matplotlib Figure built without pyplot's global state, in the palette of
``louder.analysis.report.palette``; every interval is drawn around its estimate (``interval``)."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from louder.analysis.report import palette as P

CONDITION_COLORS = {"contextualized": P.VERMILLION, "non_contextualized": P.ORANGE, "no_persona": P.SKY}
KIND_COLORS = {"implicit": P.IMPLICIT, "explicit": P.EXPLICIT}
MARK = "✱"  # significant: Holm-adjusted p < 0.05, the run's one rule


def interval(ax, est: float, y: float, lo: float = np.nan, hi: float = np.nan, color: str = P.BLACK,
             marker: str = "o", ms: float = 5, horizontal: bool = True, hollow: bool = False, label=None, **kw):
    """One estimate at ``y`` with its interval [lo, hi] as error bars (none when the interval is missing).
    The interval must contain the estimate (a float's last digit aside): one that does not is a bug of
    its statistic, and matplotlib refuses to draw it."""
    err = None
    if np.isfinite(lo) and np.isfinite(hi):
        err = np.array([[est - lo], [hi - est]], dtype=float)
        err[(err < 0) & (err > -1e-9)] = 0.0
    style = dict(fmt=marker, color=color, ecolor=color, capsize=2, ms=ms, label=label,
                 mfc=P.WHITE if hollow else color, elinewidth=1.2, **kw)
    return ax.errorbar(est, y, xerr=err, **style) if horizontal else ax.errorbar(y, est, yerr=err, **style)


def _case_label(scenario: str, group: str) -> str:
    return textwrap.fill(scenario.replace("_", " "), 14) + "\n× " + group.replace("_", " ")


def _short(text: str) -> str:
    return str(text).replace("_", " ")


def dpd_figure(cases: pd.DataFrame, probability: bool = False) -> Figure | None:
    """A forest plot per model: each case's DPD with its 95 % interval, implicit (every persona condition)
    beside explicit, grouped by scenario × group; the paper's parity threshold as a black tick, ✱ when the
    case is significant (Holm). ``probability``: the implicit rows show the probability DPD (``dpd_p``, the
    test a score-mode run of argmax picks rests on: ``cases.headline``) and the sampled DPD beside it as a
    hollow mark."""
    from louder.analysis.stats.cases import headline

    if cases.empty:
        return None
    data = cases if "h_dpd" in cases.columns else headline(cases, probability)
    data = data[data["h_dpd"].notna()]
    if data.empty:
        return None
    models = sorted(data["model"].unique())
    heights = [len(data[data["model"] == m]) + data.loc[data["model"] == m, ["scenario", "group"]].drop_duplicates()
               .shape[0] for m in models]
    fig = Figure(figsize=(8.4, 0.24 * sum(heights) + 1.1 * len(models) + 0.6), layout="constrained")
    axes = fig.subplots(len(models), 1, squeeze=False, height_ratios=[max(h, 2) for h in heights])[:, 0]
    probability_shown = explicit_shown = tick_shown = sig_shown = False
    for ax, model in zip(axes, models):
        sub = data[data["model"] == model]
        several = sub.loc[sub["kind"] == "implicit", "condition"].nunique() > 1  # else the row says "agents"
        y, ticks, labels = 0.0, [], []
        for (scenario, group), g in sub.groupby(["scenario", "group"], sort=True):
            g = g.assign(_k=(g["kind"] == "explicit").astype(int)).sort_values(["_k", "condition"])
            for _, r in g.iterrows():
                y -= 1
                kind = r["kind"]
                color = KIND_COLORS.get(kind, P.BLACK)
                test = r.get("test", "sampled")
                interval(ax, r["h_dpd"], y, r["h_ci_low"], r["h_ci_high"], color=color,
                         marker="s" if kind == "explicit" else "o")
                explicit_shown |= kind == "explicit"
                if test == "probability":
                    probability_shown = True
                    if pd.notna(r["dpd"]):
                        ax.plot(r["dpd"], y, "o", color=P.GREY, mfc=P.WHITE, mec=P.GREY, ms=5)
                elif pd.notna(r.get("threshold", np.nan)):
                    ax.plot(r["threshold"], y, marker="|", color=P.BLACK, ms=11, mew=1.6)
                    tick_shown = True
                if bool(r["h_significant"]):
                    sig_shown = True
                    ax.text(1.035, y, MARK, ha="center", va="center", fontsize=9, color=P.SIGNIFICANT)
                ticks.append(y)
                labels.append(f"{_short(scenario)} × {_short(group)} · " + (
                    "asked directly" if kind == "explicit" else _short(r["condition"]) if several else "agents"))
            y -= 0.6
        ax.set_yticks(ticks, labels, fontsize=7)
        ax.set_ylim(y + 0.2, 0.2 - 0.6)
        ax.set_xlim(-0.02, 1.07)
        ax.axvline(0, color=P.LIGHT, lw=0.8, zorder=0)
        ax.grid(axis="x", color=P.GRID, lw=0.6)
        ax.set_axisbelow(True)
        ax.set_title(f"{model}: DPD per case, 95 % interval", fontsize=9, loc="left")
    shown = [(data["kind"] == "implicit").any(), probability_shown, explicit_shown, tick_shown, sig_shown]
    handles = [h for h, on in zip([
        Line2D([], [], color=P.IMPLICIT, marker="o", ls="-", label="implicit (agents)"),
        Line2D([], [], color=P.GREY, marker="o", mfc=P.WHITE, ls="", label="sampled DPD of the argmax picks"),
        Line2D([], [], color=P.EXPLICIT, marker="s", ls="-", label="explicit (asked directly)"),
        Line2D([], [], color=P.BLACK, marker="|", ls="", ms=10, mew=1.6, label="parity threshold"),
        Line2D([], [], color=P.SIGNIFICANT, marker="$✱$", ls="", label="significant (Holm p < 0.05)")], shown) if on]
    axes[-1].set_xlabel("DPD: largest − smallest rate across the attributes" +
                        (" (implicit: probability DPD, dpd_p)" if probability_shown else ""))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=7, frameon=False)
    return fig


def forest(panels: list[tuple[str, pd.DataFrame]], series: list[dict], label, xlabel: str = "",
           ref: float | None = 0.0, xlim: tuple[float, float] | None = None, title: str = "",
           width: float = 7.5) -> Figure | None:
    """Forest plots, one panel per (title, rows): each row of a panel a line with one mark per series —
    ``series``: dicts of ``est`` (its column), optional ``lo`` / ``hi`` (its interval's columns), ``color``
    (a colour, or a function of the row), ``marker``, ``label`` (the legend) and ``hollow``; ``label``: the
    row's label (a column, or a function of the row); ``ref``: a dashed reference line (None: none)."""
    panels = [(t, rows.reset_index(drop=True)) for t, rows in panels if len(rows)]
    if not panels:
        return None
    heights = [len(rows) for _, rows in panels]
    fig = Figure(figsize=(width, 0.26 * sum(heights) + 0.75 * len(panels) + 0.7), layout="constrained")
    axes = fig.subplots(len(panels), 1, squeeze=False, height_ratios=[max(h, 1.5) for h in heights])[:, 0]
    step = 0.5 / max(1, len(series))
    for ax, (name, rows) in zip(axes, panels):
        for i, (_, r) in enumerate(rows.iterrows()):
            for j, sr in enumerate(series):
                est = r.get(sr["est"], np.nan)
                if pd.isna(est):
                    continue
                color = sr["color"](r) if callable(sr.get("color")) else sr.get("color", P.BLACK)
                lo = r.get(sr["lo"], np.nan) if sr.get("lo") else np.nan
                hi = r.get(sr["hi"], np.nan) if sr.get("hi") else np.nan
                interval(ax, float(est), -i - (j - (len(series) - 1) / 2) * step, float(lo), float(hi), color=color,
                         marker=sr.get("marker", "o"), ms=4, hollow=sr.get("hollow", False))
        ax.set_yticks(-np.arange(len(rows)), [label(r) if callable(label) else str(r[label])
                                              for _, r in rows.iterrows()], fontsize=7)
        ax.set_ylim(-len(rows) + 0.4, 0.6)
        if ref is not None:
            ax.axvline(ref, color=P.GREY, ls="--", lw=1)
        if xlim is not None:
            ax.set_xlim(*xlim)
        ax.grid(axis="x", color=P.GRID, lw=0.6)
        ax.set_axisbelow(True)
        if name:
            ax.set_title(name, fontsize=8, loc="left")
    axes[-1].set_xlabel(xlabel, fontsize=8)
    handles = [Line2D([], [], color=s["color"] if isinstance(s.get("color"), str) else P.BLACK,
                      marker=s.get("marker", "o"), mfc=P.WHITE if s.get("hollow") else None, label=s["label"])
               for s in series if s.get("label")]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=7, frameon=False)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def wilson(x, n, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of each rate x/n (statsmodels ``proportion_confint``; it contains x/n; NaN
    where n is 0)."""
    from statsmodels.stats.proportion import proportion_confint

    x, n = np.asarray(x, dtype=float), np.asarray(n, dtype=float)
    lo, hi = np.full(x.shape, np.nan), np.full(x.shape, np.nan)
    ok = n > 0
    if ok.any():
        lo[ok], hi[ok] = proportion_confint(x[ok], n[ok], alpha=1 - level, method="wilson")
    return lo, hi


def rates_figure(attributes: pd.DataFrame, condition: str = "contextualized") -> Figure | None:
    """A panel per scenario × group: the target-decision rate of each attribute with its Wilson 95 %
    interval and its n, one colour per model (the agents, persona condition ``condition`` — else the
    first the run has)."""
    data = attributes[attributes["kind"] == "implicit"]
    if data.empty:
        return None
    if condition not in set(data["condition"]):
        condition = sorted(data["condition"].unique())[0]
    data = data[data["condition"] == condition]
    panels = sorted(set(map(tuple, data[["scenario", "group"]].to_numpy())))
    models = sorted(data["model"].unique())
    ncol = min(3, len(panels))
    nrow = -(-len(panels) // ncol)
    tallest = max(data[(data["scenario"] == s) & (data["group"] == g)]["attribute"].nunique() for s, g in panels)
    fig = Figure(figsize=(3.4 * ncol + 0.4, nrow * (0.22 * tallest * len(models) + 1.0) + 0.5), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_axis_off()
    step = 0.8 / len(models)
    for ax, (s, g) in zip(axes.flat, panels):
        sub = data[(data["scenario"] == s) & (data["group"] == g)]
        attrs = sorted(sub["attribute"].unique())
        for m_i, m in enumerate(models):
            ms = sub[sub["model"] == m].set_index("attribute").reindex(attrs)
            lo, hi = wilson(ms["n_target"].fillna(0), ms["n_valid"].fillna(0))
            for a_i, a in enumerate(attrs):
                if not ms.loc[a, "n_valid"] > 0:
                    continue
                y = -a_i - (m_i - (len(models) - 1) / 2) * step
                interval(ax, ms.loc[a, "rate"], y, lo[a_i], hi[a_i], color=P.series(m_i), ms=4,
                         label=m if a_i == 0 else None)
                ax.text(1.02, y, f"n={int(ms.loc[a, 'n_valid'])}", fontsize=6, va="center", color=P.GREY,
                        transform=ax.get_yaxis_transform())
        ax.set_yticks(-np.arange(len(attrs)), attrs, fontsize=7)
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-len(attrs) + 0.5, 0.5)
        ax.set_title(f"{_short(s)} × {_short(g)}", fontsize=8, loc="left")
        ax.grid(axis="x", color=P.GRID, lw=0.6)
        ax.set_axisbelow(True)
    for ax in axes[-1]:
        if ax.axison:
            ax.set_xlabel("target rate (Wilson 95 % interval)", fontsize=7)
    if len(models) > 1:
        fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="outside lower center", ncol=len(models),
                   fontsize=7, frameon=False)
    fig.suptitle(f"Target-decision rate per attribute ({_short(condition)} personas)", fontsize=9)
    return fig


def choices_figure(choices: pd.DataFrame, most: int = 12) -> Figure | None:
    """A panel per case (the first ``most``): each attribute's valid decisions split by choice, as stacked
    bars of shares (a three-choice scenario is not reduced to target vs the rest)."""
    if choices is None or choices.empty:
        return None
    cases = sorted(set(map(tuple, choices[["model", "condition", "scenario", "group"]].to_numpy())))[:most]
    labels = list(dict.fromkeys(choices.sort_values(["scenario", "choice"])["choice"]))
    colors = {c: P.series(i) for i, c in enumerate(labels)}
    ncol = min(3, len(cases))
    nrow = -(-len(cases) // ncol)
    tallest = max(choices[(choices["scenario"] == k[2]) & (choices["group"] == k[3])]["attribute"].nunique()
                  for k in cases)
    fig = Figure(figsize=(3.4 * ncol + 0.4, nrow * (0.22 * tallest + 1.1) + 0.6), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False)
    for ax in axes.flat[len(cases):]:
        ax.set_axis_off()
    used: dict[str, None] = {}
    for ax, k in zip(axes.flat, cases):
        sub = choices[(choices["model"] == k[0]) & (choices["condition"] == k[1]) & (choices["scenario"] == k[2])
                      & (choices["group"] == k[3])]
        wide = sub.pivot_table(index="attribute", columns="choice", values="rate", fill_value=0.0)
        attrs = list(wide.index)
        left = np.zeros(len(attrs))
        for c in [c for c in labels if c in wide.columns]:
            ax.barh(-np.arange(len(attrs)), wide[c].to_numpy(), left=left, color=colors[c], height=0.7,
                    label=c if c not in used else None)
            used[c] = None
            left += wide[c].to_numpy()
        ax.set_yticks(-np.arange(len(attrs)), attrs, fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_title(f"{_short(k[2])} × {_short(k[3])} · {_short(k[1])}", fontsize=8, loc="left")
    fig.legend(loc="outside lower center", ncol=min(6, len(used)), fontsize=7, frameon=False)
    fig.suptitle("Share of each choice among the valid decisions" +
                 (f" (the first {most} cases)" if len(set(map(tuple, choices[["model", "condition", "scenario",
                                                                              "group"]].to_numpy()))) > most else ""),
                 fontsize=9)
    return fig


def ablation_figure(ablation: pd.DataFrame) -> Figure | None:
    """A forest plot per model: each case's DPD under each persona condition with its 95 % interval
    (✱ = significant: Holm p < 0.05)."""
    if ablation.empty or ablation["dpd"].isna().all():
        return None
    models = sorted(ablation["model"].unique())
    conditions = [c for c in CONDITION_COLORS if c in set(ablation["condition"])] + sorted(
        set(ablation["condition"]) - set(CONDITION_COLORS))
    colors = {c: CONDITION_COLORS.get(c, P.series(i + 3)) for i, c in enumerate(conditions)}
    keys = sorted(set(map(tuple, ablation[["scenario", "group"]].to_numpy())))
    rows = len(keys) * (len(conditions) + 0.6)
    fig = Figure(figsize=(7.5, (0.22 * rows + 1.0) * len(models) + 0.4), layout="constrained")
    axes = fig.subplots(len(models), 1, squeeze=False)[:, 0]
    for ax, model in zip(axes, models):
        y, ticks, labels = 0.0, [], []
        for k in keys:
            sub = ablation[(ablation["model"] == model) & (ablation["scenario"] == k[0]) & (ablation["group"] == k[1])]
            for c in conditions:
                r = sub[sub["condition"] == c]
                y -= 1
                if r.empty or pd.isna(r["dpd"].iloc[0]):
                    continue
                r = r.iloc[0]
                interval(ax, r["dpd"], y, r["ci_low"], r["ci_high"], color=colors[c], ms=4,
                         label=_short(c) if c not in labels else None)
                if bool(r["significant"]):
                    ax.text(1.035, y, MARK, ha="center", va="center", fontsize=8, color=P.SIGNIFICANT)
            ticks.append(y + (len(conditions) - 1) / 2)
            labels.append(f"{_short(k[0])} × {_short(k[1])}")
            y -= 0.6
        ax.set_yticks(ticks, labels, fontsize=7)
        ax.set_xlim(-0.02, 1.07)
        ax.grid(axis="x", color=P.GRID, lw=0.6)
        ax.set_axisbelow(True)
        ax.set_title(f"{model}: DPD per persona condition, 95 % interval (✱ Holm p < 0.05)", fontsize=9, loc="left")
    handles = [Line2D([], [], color=colors[c], marker="o", label=_short(c)) for c in conditions]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=7, frameon=False)
    axes[-1].set_xlabel("DPD")
    return fig


def directions_figure(directions: pd.DataFrame) -> Figure | None:
    """Forest plot: each prediction's rate difference (higher − lower set) with its 95 % interval."""
    data = directions[directions["difference"].notna()]
    if data.empty:
        return None
    fig = Figure(figsize=(9, 0.4 * len(data) + 1.4), layout="constrained")
    ax = fig.subplots()
    colors = {"aligned": P.GREEN, "opposite": P.VERMILLION, "inconclusive": P.GREY}
    ys = np.arange(len(data))[::-1]
    for y, (_, r) in zip(ys, data.iterrows()):
        interval(ax, r["difference"], y, r["ci_low"], r["ci_high"], color=colors.get(r["verdict"], P.GREY))
    ax.axvline(0, color=P.BLACK, lw=0.8)
    ax.set_yticks(ys, [f"{r['id']} [{r['model']}, {r['condition']}]" for _, r in data.iterrows()], fontsize=7)
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel("mean target rate of the higher set − of the lower set (95 % interval)")
    ax.set_title("Literature directions: green aligned, vermillion opposite, grey inconclusive", fontsize=9)
    return fig


CATEGORY_COLORS = {"race": P.VERMILLION, "gender": P.PURPLE, "religion": P.GREEN, "health": P.BLUE}


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
        ax.bar(xs, sub["mean"], color=[CATEGORY_COLORS.get(c, P.GREY) for c in sub["category"]], alpha=0.35)
        for x, (_, r) in zip(xs, sub.iterrows()):
            interval(ax, r["mean"], x, r["ci_low"], r["ci_high"], color=CATEGORY_COLORS.get(r["category"], P.GREY),
                     ms=3, horizontal=False)
        ax.axhline(null, color=P.BLACK, ls="--", lw=1)
        ax.set_xticks(xs, sub["name"], rotation=60, ha="right", fontsize=7)
        ax.set_ylim(-1.05 if test == "association" else 0, 1.05)
        label = "association bias (−1…1)" if test == "association" else "decision bias (0…1)"
        ax.set_ylabel(label)
        ax.set_title(f"{model}: {'word association' if test == 'association' else 'relative decision'} test "
                     "(vermillion: race, purple: gender, green: religion, blue: health; 95 % CI)", fontsize=8)
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
                    color=P.WHITE if r["rate"] < 0.6 else P.BLACK)
            if not bool(r.get("tested", True)):
                ax.add_patch(Rectangle(
                    (j - 0.5, i - 0.5), 1, 1, fill=False, hatch="//", edgecolor=P.GREY, lw=0))
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
    for yi, (_, r) in zip(y, t.iterrows()):
        interval(ax, r["odds_ratio"], yi, r["lo"], r["hi"], color=P.VERMILLION, ms=4)
    ax.axvline(1.0, color=P.GREY, ls="--", lw=1)
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
