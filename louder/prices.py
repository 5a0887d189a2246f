"""What model calls cost: the prices of hosted models (``louder/data/prices.yaml``) and what a run's
recorded tokens cost at them. ``--dry-run`` prices a plan with them (``louder.cost``); the report's
design card prices the tokens a run recorded (``louder.analysis.report.findings``)."""

from __future__ import annotations

from importlib import resources

import yaml

from louder.llm.registry import backend_info
from louder.llm.spec import parse_spec


def prices() -> dict:
    return yaml.safe_load((resources.files("louder") / "data" / "prices.yaml").read_text("utf-8"))


def lookup(models: dict, model: str) -> dict | None:
    """A model's prices: by its name, or (``langchain:openai:MODEL``) by the name after ``openai:``."""
    if model in models:
        return models[model]
    provider, _, name = model.partition(":")
    return models.get(name) if provider == "openai" and name else None


def spent(spec: str, input_tokens: int, output_tokens: int) -> float | None:
    """What a run's recorded tokens of model ``spec`` cost in USD at louder/data/prices.yaml's prices:
    (input · price_in + output · price_out) / 10⁶; 0 for a local model or a server of your own, None for
    a hosted model the file does not price."""
    _, backend, model, url = parse_spec(spec)
    info = backend_info(backend)
    if info.local or url is not None:
        return 0.0
    rate = lookup(prices()["models"], model) if info.priced else None
    return None if rate is None else (input_tokens * rate["input"] + output_tokens * rate["output"]) / 1e6
