"""The shared vocabulary of louder: the model call and its answer, the answer statuses, the case
keys, and the columns and dtypes of every Parquet file a run writes. Import these names from here.

``Request``/``Reply``/``STATUSES`` are defined in the model layer (``louder.llm``), which must not
import anything above it; this module re-exports them next to the output contracts."""

from __future__ import annotations

import pandas as pd

from louder.llm.answers import STATUSES
from louder.llm.base import Reply, Request

__all__ = ["Request", "Reply", "STATUSES", "CASE_KEYS", "DECISION_COLUMNS", "PERSONA_COLUMNS", "PROBE_COLUMNS",
           "TWIN_COLUMNS", "NETWORK_COLUMNS", "DTYPES", "typed"]

# A case of the analysis: one DPD is computed per case (model × condition × scenario × group).
CASE_KEYS = ["model", "condition", "scenario", "group"]

# decisions.parquet: one row per agent decision of the simulation.
DECISION_COLUMNS = [
    "run_id", *CASE_KEYS, "attribute", "agent_id", "replicate", "name", "persona",
    "decision", "target", "p_target", "rationale", "status", "raw_response", "attempts", "latency_s",
    "input_tokens", "output_tokens", "choice_mass",
    # a reasoning model's thinking (apart from its answer), the tokens it took where reported, and the
    # reasoning level the decision was asked at (default: none sent; docs/how-to/reasoning-models.md)
    "thinking", "reasoning_tokens", "reasoning",
    # the prompt intervention the decision was asked under (none: the paper's prompt; docs/how-to/test-a-mitigation.md)
    "intervention",
    # how the scenario was presented (docs/robustness.md): the labels as shown joined with "|", the
    # wording (as_written: the file's own text) and the identity signal (stated | names)
    "choice_order", "wording", "signal",
]
# personas.parquet: one row per generated persona (and its prompt) of the simulation.
PERSONA_COLUMNS = [
    "run_id", *CASE_KEYS, "attribute", "agent_id", "replicate", "name", "persona",
    "status", "prompt", "raw_response", "attempts", "latency_s", "input_tokens", "output_tokens", "reason",
    "thinking", "reasoning_tokens",
]
# probes.parquet: one row per explicit-probe answer.
PROBE_COLUMNS = [
    "run_id", "probe", "model", "scenario", "group", "trial", "answer", "attribute", "rationale", "status",
    "raw_response", "attempts", "latency_s", "input_tokens", "output_tokens",
    "choice_order",  # the options as shown, joined with "|" (Unknown last; docs/robustness.md)
    "thinking", "reasoning_tokens",  # a reasoning model's thinking, apart from its answer
    "intervention",  # the prompt intervention the answer was asked under (none: the paper's prompt)
]
# twins.parquet (population runs with twins, issue 11): one row per twin and per source agent of a twin
# set (original True), then one attr_<group> column per group of the population.
TWIN_COLUMNS = [
    "run_id", "model", "condition", "scenario", "variant", "group", "twin_set", "agent_id", "attribute",
    "source_attribute", "original", "name", "persona", "decision", "target", "p_target", "status", "twin_status",
    "twin_reason", "twin_similarity", "raw_response", "attempts", "latency_s", "input_tokens", "output_tokens",
    "choice_mass",
    "written_name",  # issue 32: the model's name for the twin where it did not fit the new attribute and was replaced
]
# decisions.parquet of a network run: DECISION_COLUMNS, then these.
NETWORK_COLUMNS = ["round", "node", "neighbours", "neighbours_valid", "neighbour_share", "changed"]

# The one dtype of every column a run writes (nullable where rows can be null), so every run's
# Parquet schema is the same whatever its rows hold.
DTYPES = {
    "agent_id": "int64", "replicate": "int64", "target": "boolean", "p_target": "Float64", "attempts": "int64",
    "latency_s": "float64", "choice_mass": "Float64", "input_tokens": "Int64", "output_tokens": "Int64",
    "name": "string", "persona": "string", "decision": "string", "rationale": "string", "raw_response": "string",
    "status": "string", "variant": "string", "cell_id": "int64", "weight": "float64", "twin_status": "string",
    "original": "bool", "round": "int64", "node": "int64", "neighbours": "int64", "neighbours_valid": "Int64",
    "neighbour_share": "Float64", "changed": "boolean", "trial": "int64", "answer": "string", "prompt": "string",
    "twin_reason": "string", "twin_similarity": "Float64", "reason": "string", "wave": "int64", "written_name": "string",
    "choice_order": "string", "wording": "string", "signal": "string",
    "thinking": "string", "reasoning_tokens": "Int64", "reasoning": "string",
    "intervention": "string",
    "respondent": "string",  # a human study's respondent of a paired agent (louder.humans)
    "grounding": "string",  # grounded studies: attribute | grounded | unlabelled (louder.humans)
}


def typed(df: pd.DataFrame, **extra: str) -> pd.DataFrame:
    """``df`` with ``DTYPES`` (and ``extra`` column → dtype) applied to the columns it has."""
    types = {**DTYPES, **extra}
    return df.astype({c: t for c, t in types.items() if c in df.columns})
