"""Moved to ``louder.probes.decision_test``; this old import path stays for one release."""

from louder.probes.decision_test import (  # noqa: F401
    NEITHER, DecisionTrial, decision_rows, make_decision_trial, person_schema, run_trial, yes_no_schema)
