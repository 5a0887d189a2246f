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
from louder.prices import lookup, prices

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


def _budget(info, model: str, configured: str | None, level: str) -> int:
    """The thinking budget louder adds to max_tokens at ``level`` (Anthropic's ``budget`` control), else 0."""
    from louder.llm.registry import reasoning_control
    from louder.llm.thinking import CONTROLS

    if not model.startswith("anthropic:") or reasoning_control(info, model, configured) != "budget":
        return 0
    value = CONTROLS["budget"].get(level, 0)
    return value if isinstance(value, int) else 0


def reasoning_tokens_per_call(info, entry: dict | None, level: str) -> int:
    """Typical thinking tokens of one call at ``level`` (estimates.yaml ``typical_reasoning_tokens``): none
    for a backend without a reasoning control; at ``default`` only for a model prices.yaml marks
    ``reasoning: true``."""
    if not info.reasoning_controls or level == "off":
        return 0
    if level == "default" and not (entry or {}).get("reasoning"):
        return 0
    return int(numbers().get("typical_reasoning_tokens", {}).get(level, 0))


def price(calls, config: ExperimentConfig) -> pd.DataFrame:
    """One row per model of ``config``: calls, estimated input / output tokens (typical and max) and,
    where priced, cost in USD, summed over ``calls`` (a plan's ``louder.task.Calls``).

    input = Σ n · tokens(prompt); output = Σ n · min(typical + thinking, max_tokens);
    output_max = Σ n · max_tokens;
    cost = (input · price_in + output · price_out) / 10⁶ (0 for local models and servers of your own).
    thinking (``reasoning_tokens``) = Σ n · min(``reasoning_tokens_per_call``, max_tokens): reasoning
    tokens are billed as output and counted within max_tokens — except a thinking budget (Anthropic through
    ``langchain:``), which louder adds to max_tokens: there the thinking is not capped and output_max adds
    the budget."""
    table, rows = prices(), []
    typical = numbers()["typical_output_tokens"]
    for m in config.models:
        mine = [c for c in calls if c.model == m.label]
        _, backend, model, url = parse_spec(m.spec)
        info = backend_info(backend)
        entry = lookup(table["models"], model) if info.priced and not url else None
        think = {lv: reasoning_tokens_per_call(info, entry, lv) for lv in {c.reasoning for c in mine}}
        budget = {lv: _budget(info, model, m.reasoning_control, lv) for lv in think}
        n = sum(c.n for c in mine)
        tin = sum(c.n * tokens(c.prompt) for c in mine)
        cap = {id(c): c.max_tokens + budget[c.reasoning] for c in mine}
        tout = sum(c.n * min(typical.get(c.output, c.max_tokens) + think[c.reasoning], cap[id(c)]) for c in mine)
        treason = sum(c.n * min(think[c.reasoning], cap[id(c)]) for c in mine)
        tmax = sum(c.n * cap[id(c)] for c in mine)
        rate = entry
        local = info.local or url is not None
        cost = lambda o: round((tin * rate["input"] + o * rate["output"]) / 1e6, 2) if rate else (  # noqa: E731
            0.0 if local else None)
        rows.append(dict(model=m.label, calls=n, input_tokens=tin, output_tokens=tout, output_tokens_max=tmax,
                         reasoning_tokens=treason, cost_usd=cost(tout), cost_usd_max=cost(tmax),
                         price=("local: free" if local else f"{rate['input']}/{rate['output']} USD per 1M tokens "
                                f"({rate.get('as_of', table['as_of'])})" if rate
                                else "not in louder/data/prices.yaml")))
    return pd.DataFrame(rows)
