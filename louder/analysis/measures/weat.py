"""WEAT on embeddings (``louder probe weat``, issue 14) beside the word association scores:
``weat.csv`` and ``weat_association_correlation.csv``. The statistics are ``louder.analysis.weat``'."""

from __future__ import annotations

import pandas as pd

from louder.analysis.html import note, section, table
from louder.analysis.registry import Column, Input, Measure, Table, register
from louder.analysis.weat import correlation


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
                   table(w, scroll=True), table(t.get("weat_association_correlation")))


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
    after=("bai",), section=report_section, position=165))
