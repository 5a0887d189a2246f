"""Moved to ``louder.analysis.bai_stats``; this old import path stays for one release."""

from louder.analysis.bai_stats import (  # noqa: F401
    STAT_COLUMNS, association_decision_link, association_stats, decision_stats, mean_interval, one_sample)
