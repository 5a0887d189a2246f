"""The shared vocabulary of louder: the model call and its answer, the answer statuses, and the
columns of every Parquet file a run writes. Import these names from here.

``Request``/``Reply``/``STATUSES`` are defined in the model layer (``louder.llm``), which must not
import anything above it; this module re-exports them next to the output contracts."""

from __future__ import annotations

from louder.llm.answers import STATUSES
from louder.llm.base import Reply, Request

__all__ = ["Request", "Reply", "STATUSES", "DECISION_COLUMNS", "PERSONA_COLUMNS", "PROBE_COLUMNS", "TWIN_COLUMNS",
           "FILES"]

# decisions.parquet: one row per agent decision of the simulation.
DECISION_COLUMNS = [
    "run_id", "model", "condition", "scenario", "group", "attribute", "agent_id", "replicate", "name", "persona",
    "decision", "target", "p_target", "rationale", "status", "raw_response", "attempts", "latency_s",
    "input_tokens", "output_tokens", "choice_mass",
]
# personas.parquet: one row per generated persona (and its prompt) of the simulation.
PERSONA_COLUMNS = [
    "run_id", "model", "condition", "scenario", "group", "attribute", "agent_id", "replicate", "name", "persona",
    "status", "prompt", "raw_response", "attempts", "latency_s", "input_tokens", "output_tokens", "reason",
]
# probes.parquet: one row per explicit-probe answer.
PROBE_COLUMNS = [
    "run_id", "probe", "model", "scenario", "group", "trial", "answer", "attribute", "rationale", "status",
    "raw_response", "attempts", "latency_s", "input_tokens", "output_tokens",
]
# twins.parquet (population runs with twins, issue 11): one row per twin and per source agent of a twin
# set (original True), then one attr_<group> column per group of the population.
TWIN_COLUMNS = [
    "run_id", "model", "condition", "scenario", "variant", "group", "twin_set", "agent_id", "attribute",
    "source_attribute", "original", "name", "persona", "decision", "target", "p_target", "status", "twin_status",
    "twin_reason", "twin_similarity", "raw_response", "attempts", "latency_s", "input_tokens", "output_tokens",
    "choice_mass",
]
# The file each kind of run writes into the run folder.
FILES = {"simulation": "decisions.parquet", "explicit": "probes.parquet", "association": "association.parquet",
         "decision": "decision_test.parquet"}
