"""``--dry-run``: what a run will cost before any model is called.

Counting is each kind's own: a kind's ``Task`` carries its plan, the model calls of every item
(``louder.task.Calls``), and the run executes that same plan. Here those calls are priced: tokens
are estimated (prompts counted at ``chars_per_token``; outputs a typical length capped by
``max_tokens``, with ``max_tokens`` itself as the upper bound) and, for hosted models listed in
``louder/data/prices.yaml``, turned into USD. The numbers live in ``louder/data/estimates.yaml``.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import pandas as pd
import yaml

from louder.config import ExperimentConfig
from louder.llm.registry import backend_info
from louder.llm.spec import parse_spec

STAND_IN_NAME = "Alex Morgan"  # where a plan renders an agent's prompt before any name is written


@cache
def numbers() -> dict:
    """louder/data/estimates.yaml: characters per token and typical output lengths."""
    return yaml.safe_load((resources.files("louder") / "data" / "estimates.yaml").read_text("utf-8"))


@cache
def stand_in_persona() -> str:
    """A persona of typical length, where a plan renders a decision prompt before any persona exists."""
    return "x" * (numbers()["typical_output_tokens"]["persona"] * numbers()["chars_per_token"])


def tokens(text: str) -> int:
    return max(1, len(text) // numbers()["chars_per_token"])


def prices() -> dict:
    return yaml.safe_load((resources.files("louder") / "data" / "prices.yaml").read_text("utf-8"))


def price(calls, config: ExperimentConfig) -> pd.DataFrame:
    """One row per model of ``config``: calls, estimated input / output tokens (typical and max) and,
    where priced, cost in USD, summed over ``calls`` (a plan's ``louder.task.Calls``).

    input = Σ n · tokens(prompt); output = Σ n · min(typical, max_tokens); output_max = Σ n · max_tokens;
    cost = (input · price_in + output · price_out) / 10⁶ (0 for local models and servers of your own)."""
    table, rows = prices(), []
    typical = numbers()["typical_output_tokens"]
    for m in config.models:
        mine = [c for c in calls if c.model == m.label]
        n = sum(c.n for c in mine)
        tin = sum(c.n * tokens(c.prompt) for c in mine)
        tout = sum(c.n * min(typical.get(c.output, c.max_tokens), c.max_tokens) for c in mine)
        tmax = sum(c.n * c.max_tokens for c in mine)
        _, backend, model, url = parse_spec(m.spec)
        info = backend_info(backend)
        rate = table["models"].get(model) if info.priced and not url else None
        local = info.local or url is not None
        cost = lambda o: round((tin * rate["input"] + o * rate["output"]) / 1e6, 2) if rate else (  # noqa: E731
            0.0 if local else None)
        rows.append(dict(model=m.label, calls=n, input_tokens=tin, output_tokens=tout, output_tokens_max=tmax,
                         cost_usd=cost(tout), cost_usd_max=cost(tmax),
                         price=("local: free" if local else f"{rate['input']}/{rate['output']} USD per 1M tokens "
                                f"({table['as_of']})" if rate else "not in louder/data/prices.yaml")))
    return pd.DataFrame(rows)
