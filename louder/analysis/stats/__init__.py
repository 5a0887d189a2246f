"""The statistics: small pure functions over arrays and tidy frames, each with its formula in its
docstring, returning frozen dataclasses or tidy DataFrames. They know no measure and no run folder.

``core`` holds the basic ones every other module builds on (the DPD, its parity bootstrap and
interval, Wilson's interval, Holm's adjustment, the seeded substreams) and this package re-exports them
(``from louder.analysis.stats import dpd``); ``intervals``, ``power``, ``prob_dpd``, ``regression``,
``rates`` (the grouped-rate engine) and ``keys`` (the case keys and the one valid-answer filter) are
the shared machinery; each other module is the statistics of one measure of
``louder.analysis.measures`` (``voices``, ``robustness``, ``anchoring``, …: the same name there)."""

from louder.analysis.stats.core import (  # noqa: F401  (the package's face: every public name of core)
    ALPHA,
    CACHE_CELLS,
    NAN,
    DictLike,
    Difference,
    Interval,
    ParityTest,
    TTest,
    TupleLike,
    dpd,
    dpd_confidence_interval,
    dpd_difference_interval,
    each_case,
    explicit_dpd,
    explicit_dpd_confidence_interval,
    explicit_parity_bootstrap,
    holm,
    implicit_explicit_difference,
    level_alpha,
    log_odds_dirichlet,
    mean_difference_interval,
    multinomial_pair_variance,
    named_seed,
    parity_bootstrap,
    permuted_rows,
    significant,
    substream,
    welch,
    wilson,
)
