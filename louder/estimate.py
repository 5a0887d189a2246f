"""``--dry-run``: what an experiment will cost before any model is called.

Calls are counted exactly. Tokens are estimated: prompts are rendered and counted at 4 characters
per token; outputs are assumed to be a typical length (persona 250, decision 80, name 15, explicit
answer 60 tokens) capped by ``max_tokens``, with ``max_tokens`` itself as the upper bound.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd
import yaml

from louder.config import ExperimentConfig
from louder.llm.spec import parse_spec
from louder.probes.explicit import trials_for
from louder.prompts import Prompts
from louder.scenarios import load_group, load_scenario

TYPICAL = {"persona": 250, "decision": 80, "name": 15, "explicit": 60}
CHARS_PER_TOKEN = 4


def _tokens(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)


def prices() -> dict:
    return yaml.safe_load((resources.files("louder") / "data" / "prices.yaml").read_text("utf-8"))


def _calls(config: ExperimentConfig, api: str, probes: bool) -> list[tuple[int, int, int, int]]:
    """(calls, input tokens, typical output tokens, max output tokens) per kind of call."""
    prompts, out = Prompts(), []
    persona_text = "x" * (TYPICAL["persona"] * CHARS_PER_TOKEN)
    extra = 2 if api == "completion" else 1  # the completion path adds an extraction call
    for sid in config.scenarios:
        s = load_scenario(sid)
        for gid in config.groups:
            g = load_group(gid)
            if probes:
                n = trials_for(config, g)
                p = prompts.explicit(s, g, config.paper_faithful, "chat")
                out.append((n * extra, n * _tokens(p) * extra, n * TYPICAL["explicit"] * extra,
                            n * config.explicit.max_tokens * extra))
                continue
            for c in config.conditions:
                for a in g.attributes:
                    n = config.agents
                    first = prompts.persona(a, c, s, config.paper_faithful, "chat")
                    kind = "name" if c == "no_persona" else "persona"
                    k = 1 if c == "no_persona" else extra
                    out.append((n * k, n * _tokens(first) * k, n * min(TYPICAL[kind], config.persona.max_tokens) * k,
                                n * config.persona.max_tokens * k))
                    act = prompts.action("Alex Morgan", persona_text if c != "no_persona" else a, s, "chat")
                    out.append((n * extra, n * _tokens(act) * extra,
                                n * min(TYPICAL["decision"], config.decision.max_tokens) * extra,
                                n * config.decision.max_tokens * extra))
    return out


def estimate(config: ExperimentConfig, probes: bool = False) -> pd.DataFrame:
    """One row per model: calls, estimated tokens and, where priced, estimated cost in USD."""
    table, rows = prices(), []
    for m in config.models:
        api, backend, model, url = parse_spec(m.spec)
        parts = _calls(config, api, probes)
        calls, tin, tout, tmax = (sum(p[i] for p in parts) for i in range(4))
        price = table["models"].get(model) if backend == "openai" and not url else None
        local = backend == "embedded" or url is not None
        cost = lambda o: round((tin * price["input"] + o * price["output"]) / 1e6, 2) if price else (  # noqa: E731
            0.0 if local else None)
        rows.append(dict(model=m.label, calls=calls, input_tokens=tin, output_tokens=tout, output_tokens_max=tmax,
                         cost_usd=cost(tout), cost_usd_max=cost(tmax),
                         price=("local: free" if local else f"{price['input']}/{price['output']} USD per 1M tokens "
                                f"({table['as_of']})" if price else "not in louder/data/prices.yaml")))
    return pd.DataFrame(rows)
