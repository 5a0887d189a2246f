"""What one model needs while an experiment runs: its clients, API, prompts and config.

Above ``louder.llm`` on purpose: it joins the model clients with the experiment config and prompts,
which the llm layer must not know about."""

from __future__ import annotations

from dataclasses import dataclass, field

from louder.config import ExperimentConfig
from louder.sections import GenerationParams
from louder.llm.answers import Classified, classify
from louder.llm.base import Reply, Request, stable_seed
from louder.llm.client import Client
from louder.llm.thinking import TRUNCATED_MARK
from louder.prompts import Prompts

CUT_MARK = "[cut at max_tokens]"


@dataclass
class Outcome:
    """A finished (possibly two-step) model exchange, summed over its calls."""

    text: str
    reply: Reply  # the reply whose text is classified (the extraction's, on the completion path)
    attempts: int = 1
    latency_s: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    raw: str = ""  # the first model's own words (completion text on the completion path)
    thinking: str | None = None  # a reasoning model's thinking, apart from its answer (louder.llm.thinking)
    reasoning_tokens: int | None = None


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


@dataclass
class ModelSession:
    label: str
    api: str  # "chat" | "completion"
    client: Client
    extractor: Client  # chat client for the completion path's JSON extraction
    prompts: Prompts
    config: ExperimentConfig
    extra: dict = field(default_factory=dict)
    rewriter: Client | None = None  # `twin_rewriter:`; None: the chat client (``extractor``)

    @property
    def twin_rewriter(self) -> Client:
        """The chat client that rewrites twins of groups without a word list: ``twin_rewriter`` when the
        config names one, else the model under test (its chat client on the completion path)."""
        return self.rewriter or self.extractor

    def ask_chat(self, client: Client, prompt: str, schema, params: GenerationParams, seed: int,
                 replicate: str, reasoning: str | None = None, system: str | None = None) -> Outcome:
        """One JSON call to ``client`` (a chat model); ``reasoning``: the level asked for (None: default);
        ``system``: a system message before the prompt (None: the prompt alone, as the paper asks)."""
        messages = ((("system", system),) if system else ()) + (("user", prompt),)
        r = client.call(Request(messages=messages, schema=schema, temperature=params.temperature,
                                max_tokens=params.max_tokens, seed=seed, replicate=replicate, reasoning=reasoning))
        raw = r.text or r.error or ""
        if r.thinking_truncated:  # no answer at all: the thinking ran into max_tokens
            raw = f"{raw}\n{TRUNCATED_MARK}" if raw else TRUNCATED_MARK
        elif r.finish_reason == "length":  # its own reason in the raw record: the answer was cut, not closed
            raw += f"\n{CUT_MARK}"
        return Outcome(r.text, r, r.attempts, r.latency_s, r.input_tokens, r.output_tokens, raw=raw,
                       thinking=r.thinking, reasoning_tokens=r.reasoning_tokens)

    def ask(self, prompt: str, schema, params: GenerationParams, seed: int, replicate: str,
            completion_prompt: str | None = None, completion_params: GenerationParams | None = None,
            extraction_prompt=None, reasoning: str | None = None, system: str | None = None) -> Outcome:
        """Chat: one JSON call. Completion: a plain completion, then a chat model extracts the JSON
        from the completion's final answer (its thinking stays in ``Outcome.thinking``).

        ``extraction_prompt`` maps the completion text to the extraction prompt; ``system`` (a system
        message) goes before the chat prompt, and before the completion prompt as a paragraph of its own.
        """
        if self.api == "chat" or completion_prompt is None:
            return self.ask_chat(self.client, prompt, schema, params, seed, replicate, reasoning, system)
        cp = completion_params or params
        if system:
            completion_prompt = f"{system}\n\n{completion_prompt}"
        first = self.client.call(Request(prompt=completion_prompt, temperature=cp.temperature,
                                         max_tokens=cp.max_tokens, seed=seed, replicate=replicate,
                                         reasoning=reasoning))
        if first.error or first.thinking_truncated:
            return Outcome("", first, first.attempts, first.latency_s, first.input_tokens, first.output_tokens,
                           raw=first.error or TRUNCATED_MARK, thinking=first.thinking,
                           reasoning_tokens=first.reasoning_tokens)
        ep = self.config.simulation.extraction
        second = self.extractor.call(Request(messages=(("user", extraction_prompt(first.text)),), schema=schema,
                                             temperature=ep.temperature, max_tokens=ep.max_tokens, seed=seed,
                                             replicate=replicate))
        return Outcome(second.text, second, first.attempts + second.attempts, first.latency_s + second.latency_s,
                       _add(first.input_tokens, second.input_tokens), _add(first.output_tokens, second.output_tokens),
                       raw=first.text, thinking="\n".join(t for t in (first.thinking, second.thinking) if t) or None,
                       reasoning_tokens=_add(first.reasoning_tokens, second.reasoning_tokens))

    def ask_choice(self, prompt: str, schema, params: GenerationParams, seed: int, replicate: str,
                   labels: list[str], field: str, **completion) -> tuple[Outcome, Classified]:
        """``ask`` and classify the answer's ``field`` against ``labels``. An ``invalid`` or
        ``refused`` answer is re-asked (fresh seed) up to ``simulation.reask`` more times; ``attempts``
        and ``latency_s`` add up over every try, and the last answer is the one recorded."""
        attempts, latency = 0, 0.0
        for k in range(self.config.simulation.reask + 1):
            out = self.ask(prompt, schema, params, seed if k == 0 else stable_seed(seed, "reask", k),
                           replicate if k == 0 else f"{replicate}|reask{k}", **completion)
            verdict = classify(out.reply, labels, field, self.prompts.refusal_markers)
            attempts, latency = attempts + out.attempts, latency + out.latency_s
            if verdict.status in ("valid", "error"):
                break
        out.attempts, out.latency_s = attempts, latency
        return out, verdict
