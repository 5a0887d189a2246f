"""WEAT on embeddings (``louder probe weat``, issue 14) beside the word association scores:
``weat.csv`` and ``weat_association_correlation.csv``. The statistics are ``louder.analysis.stats.weat``'."""

from __future__ import annotations

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Column, Figure, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.weat import correlation


def build(a) -> dict[str, pd.DataFrame]:
    out = {"weat": a.weat}
    if "association_stats" in a.tables:
        out["weat_association_correlation"] = correlation(a.weat, a.tables["association_stats"])
    return out


def report_section(a) -> str:
    t = a.tables
    w, assoc = t["weat"], t.get("association_stats")
    if assoc is not None:
        means = assoc[(assoc["level"] == "stereotype")].pivot_table(index="name", columns=["model", "convention"],
                                                                   values="mean")
        means.columns = [f"association {m} ({c})" for m, c in means.columns]
        w = w.merge(means, left_on="stereotype", right_index=True, how="left")
    return section("WEAT (embeddings) beside the association scores",
                   note("WEAT effect size d (Caliskan et al. 2017): stigma vs default group tokens against stigma vs "
                        "default words, cosine similarity of sentence embeddings; d &gt; 0 is the stereotypical "
                        "direction, like a positive association score. p: one-sided permutation test over "
                        "partitions of the tokens (exact where few). The correlation is across stereotypes."),
                   a.figure("effects", w), table(w, scroll=True), table(t.get("weat_association_correlation")))


def weat_figure(a, w: pd.DataFrame):
    """Per stereotype: the WEAT effect size d (✱ one-sided p < 0.05), coloured by category; beside it, each
    model's mean association score when the folder has the word association test."""
    from matplotlib.figure import Figure as MplFigure

    from louder.analysis.report import palette as P
    from louder.analysis.report.draw import CATEGORY_COLORS

    w = w[w["effect_size"].notna()].reset_index(drop=True)
    if w.empty:
        return None
    assoc = [c for c in w.columns if c.startswith("association ")]
    fig = MplFigure(figsize=(8.0 if assoc else 5.5, 0.28 * len(w) + 1.3), layout="constrained")
    axes = fig.subplots(1, 2 if assoc else 1, squeeze=False, sharey=True)[0]
    y = -np.arange(len(w))
    axes[0].barh(y, w["effect_size"], color=[CATEGORY_COLORS.get(c, P.GREY) for c in w["category"]])
    for yi, (_, r) in zip(y, w.iterrows()):
        if r["p_value"] < 0.05:
            axes[0].text(r["effect_size"], yi, " ✱", va="center", fontsize=8)
    axes[0].axvline(0, color=P.BLACK, lw=0.8)
    axes[0].set_yticks(y, w["stereotype"], fontsize=7)
    axes[0].set_xlabel("WEAT effect size d (> 0: stereotypical)", fontsize=8)
    for i, c in enumerate(assoc):
        axes[1].plot(w[c], y, "o", color=P.series(i), label=c.replace("association ", ""), ms=4)
    if assoc:
        axes[1].axvline(0, color=P.BLACK, lw=0.8)
        axes[1].set_xlabel("mean association score", fontsize=8)
        axes[1].legend(fontsize=6, loc="lower right")
    fig.suptitle("WEAT on embeddings beside the word association test (✱ one-sided p < 0.05)", fontsize=9)
    return fig


register(Measure(
    "weat", "WEAT effect sizes of embeddings, and their correlation with the word association scores",
    tables=(
        Table("weat", "`weat.parquet` as CSV, columns as there:", (
            Column(("stereotype", "category", "effect_size", "statistic", "p_value", "exact", "n_x", "n_y", "n_a",
                    "n_b", "embeddings"), "as in `weat.parquet`"),)),
        Table("weat_association_correlation", "Per model and convention, across stereotypes (with "
                                              "`louder probe association` in the same folder).", (
            Column(("model", "convention"), "as in `association_stats.csv`"),
            Column("n_stereotypes", "stereotypes with both scores"),
            Column(("pearson", "spearman"), "correlation across stereotypes of WEAT d and the association score")))),
    build=build, inputs=(Input("weat", raw=True, doc="weat.parquet (louder probe weat)"),), needs=("weat",),
    after=("bai",), section=report_section, position=165,
    figures=(Figure("effects", weat_figure, "Bars per stereotype: the WEAT effect size of the embeddings, coloured by "
                  "category, with significant ones marked; beside them each model's mean word-association score."),)))
