"""Preflight: what a remote endpoint accepts, found with a few tiny requests before a run starts.

Servers that speak "the OpenAI API" differ: llama_cpp.server rejects ``response_format: json_schema``
(HTTP 500 with a validation message) but takes a schema inside ``json_object``; some return no
log-probs; some serve one model under any name, others answer 404 for a wrong one. The preflight
reaches the endpoint, lists its models, sends one tiny structured request per JSON mode (through
the very backend a run uses) and one log-prob request, and reports what works. ``negotiate`` runs it
at the start of a run (cached per endpoint in the run folder) and resolves ``json_mode: auto``.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import httpx
from pydantic import BaseModel, ValidationError

from louder.errors import LouderError
from louder.llm.base import Reply, Request
from louder.llm.errors import TRANSIENT, classify_exception, fix_for, redact, server_message
from louder.llm.retry import call_with_retries
from louder.llm.spec import ModelConfig, build_backend, parse_spec
from louder.llm.tls import context as tls_context

# Best first: a JSON schema enforced by the server, then a schema inside json_object
# (llama_cpp.server), then plain JSON mode, then the prompt alone.
MODES = ("json_schema", "json_object_schema", "json_object", "off")
# A request-shape rejection: the next mode may pass. Any other failure ends the preflight.
REJECTED = {"http_400_invalid_request", "http_422_validation", "http_500_validation"}
# The probe's wording carries "louder preflight" so test servers can tell it from a run's calls.
PROBE_PROMPT = 'louder preflight check. Is water wet? Reply with JSON only: {"answer": <a string, "yes" or "no">}'
PROBE_PREFIX = '"answer": "'
DEFAULT_ROOTS = {"openai": "https://api.openai.com/v1", "ollama": "http://localhost:11434"}


class ProbeAnswer(BaseModel):
    answer: Literal["yes", "no"]


class PreflightError(LouderError):
    """The endpoint cannot serve a run as configured; the message names the cause and the fix."""


@dataclass(frozen=True)
class Capability:
    name: str  # reachable | model_name | completion | json_schema | … | off | logprobs
    status: str  # yes | no | untested
    detail: str


@dataclass(frozen=True)
class Preflight:
    spec: str
    root: str
    model: str
    models: tuple[str, ...] | None  # None: the server lists none
    capabilities: tuple[Capability, ...]
    json_mode: str | None  # the best accepted mode; None when none was accepted
    seconds: float

    def status(self, name: str) -> str:
        return next((c.status for c in self.capabilities if c.name == name), "untested")

    def detail(self, name: str) -> str:
        return next((c.detail for c in self.capabilities if c.name == name), "")

    @property
    def logprobs(self) -> bool:
        return self.status("logprobs") == "yes"

    def suggestion(self) -> str | None:
        """The served model name closest to the one asked for (None when it is served)."""
        if not self.models or _listed(self.model, self.models):
            return None
        close = difflib.get_close_matches(self.model, self.models, n=1, cutoff=0.3)
        return close[0] if close else (self.models[0] if len(self.models) == 1 else None)

    def config_line(self) -> str:
        spec = self.spec
        if (name := self.suggestion()) is not None:
            spec = spec.replace(f":{self.model}", f":{name}", 1)
        return f"models: [{{spec: '{spec}', json_mode: {self.json_mode or 'off'}}}]"

    def summary(self, json_mode: str, source: str) -> dict:
        """What the manifest records: the mode used, where it came from, and every capability."""
        return {"json_mode": json_mode, "json_mode_source": source, "root": self.root,
                "model_listed": None if self.models is None else _listed(self.model, self.models),
                "capabilities": {c.name: c.status for c in self.capabilities}, "preflight_s": self.seconds}

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Preflight:
        return cls(d["spec"], d["root"], d["model"], None if d["models"] is None else tuple(d["models"]),
                   tuple(Capability(**c) for c in d["capabilities"]), d["json_mode"], d["seconds"])


def _listed(model: str, models: tuple[str, ...]) -> bool:
    return model in models or f"{model}:latest" in models  # Ollama tags untagged names :latest


def _said(reply: Reply) -> str:
    """The server's words from an error reply, short and on one line."""
    text = redact(reply.error or "")
    m = re.search(r"Input should be [^\"\\]+", text)  # pydantic's request-validation message
    if m:
        return m.group(0).strip()
    text = text.split(": ", 2)[-1]  # drop "cause: kind: "
    return re.sub(r"(\\n|\s)+", " ", text).strip()[:200]


def _list_models(backend: str, root: str, timeout_s: float) -> tuple[tuple[str, ...] | None, Capability]:
    path = "api/tags" if backend == "ollama" else "models"
    key = os.environ.get("OPENAI_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if backend == "openai" and key else {}

    def get() -> dict:
        r = httpx.get(f"{root}/{path}", headers=headers, timeout=min(timeout_s, 30.0), verify=tls_context())
        r.raise_for_status()
        return r.json()

    try:
        data, _ = call_with_retries(get, attempts=2, max_wait_s=2.0)
    except Exception as e:  # noqa: BLE001 - every failure is classified and reported
        failure = classify_exception(e)
        if failure.cause in ("http_401_unauthorized", "http_403_forbidden"):
            raise PreflightError(f"{root} refused the API key ({failure.cause}: {redact(server_message(e))}); "
                                 f"{fix_for(failure.cause)}") from None
        if failure.transient:
            raise PreflightError(f"cannot reach {root} ({failure.cause}: {type(e).__name__}); is the server "
                                 "running, and is the base URL in the model spec right?") from None
        return None, Capability("reachable", "yes", f"GET /{path}: no model list ({failure.cause})")
    try:
        items = data["models"] if backend == "ollama" else data["data"]
        models = tuple(str(m["name"] if backend == "ollama" else m["id"]) for m in items)
    except (KeyError, TypeError):
        return None, Capability("reachable", "yes", f"GET /{path}: answered, but not a model list")
    return models, Capability("reachable", "yes", f"GET /{path}: {len(models)} model(s) listed")


def _json_detail(text: str) -> str:
    try:
        ProbeAnswer.model_validate(json.loads(text))
        return "accepted; answer is valid JSON for the schema"
    except (ValueError, ValidationError):
        return "accepted; answer is not valid JSON for the schema"


def _fatal(pf_root: str, spec: str, model: str, models, reply: Reply, attempts: int) -> PreflightError:
    """A failure no other JSON mode can avoid, as one line naming the cause and the fix."""
    cause = reply.error_cause or "other"
    if cause == "http_404_not_found" and models:
        close = difflib.get_close_matches(model, models, n=1, cutoff=0.3)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return PreflightError(f"{spec}: model {model!r} is not served at {pf_root} ({cause}); served: "
                              f"{', '.join(models[:10])}{hint}")
    if cause in TRANSIENT:
        return PreflightError(f"{spec}: the test request got no answer ({cause} after {reply.attempts} of "
                              f"{attempts} tries: {_said(reply)}); is the server up, and timeout_s long enough?")
    return PreflightError(f"{spec}: the test request failed ({cause}: {_said(reply)}). Fix: {fix_for(cause)}")


def run_preflight(cfg: ModelConfig, modes: tuple[str, ...] = MODES, first_only: bool = False,
                  logprobs: bool = True) -> Preflight:
    """Probe the endpoint of ``cfg.spec``: its model list, each of ``modes`` (all, or up to the first
    accepted one with ``first_only``) and, with ``logprobs``, a first-token log-prob request.

    Raises PreflightError for what no setting can work around: unreachable, key refused, model not
    served, no answer. A mode the server rejects is recorded as ``no``, not raised.
    """
    start = time.perf_counter()
    api, backend_name, model, url = parse_spec(cfg.spec)
    if backend_name not in DEFAULT_ROOTS:
        raise LouderError(f"{cfg.spec}: `louder check` probes OpenAI-compatible and Ollama endpoints (openai:, "
                          "ollama: specs); this backend has no preflight")
    spec = cfg.spec.removeprefix("completion:")
    attempts = min(cfg.max_attempts, 3)  # a preflight should not wait out a long retry budget
    probe_cfg = cfg.model_copy(update={"spec": spec, "max_attempts": attempts})
    backend = build_backend(spec, probe_cfg)  # a missing OPENAI_API_KEY fails here, in one line
    root = (url or DEFAULT_ROOTS[backend_name]).rstrip("/")
    models, reachable = _list_models(backend_name, root, cfg.timeout_s)
    caps = [reachable]
    if models is not None:
        listed = _listed(model, models)
        caps.append(Capability("model_name", "yes" if listed else "no", f"{model!r} is listed" if listed else
                               f"{model!r} is not listed; served: {', '.join(models[:10])}"))
    if api == "completion":
        r = backend.generate(Request(prompt=PROBE_PROMPT, temperature=0.0, max_tokens=8))
        if r.error is not None and r.error_cause not in REJECTED:
            raise _fatal(root, cfg.spec, model, models, r, attempts)
        caps.append(Capability("completion", "yes" if r.error is None else "no",
                               "accepted" if r.error is None else f"{r.error_cause}: {_said(r)}"))
    chosen = None
    request = Request(messages=(("user", PROBE_PROMPT),), schema=ProbeAnswer, temperature=0.0, max_tokens=24)
    for mode in MODES:
        if mode not in modes or (first_only and chosen):
            caps.append(Capability(mode, "untested", "not needed" if chosen else "not asked for"))
            continue
        backend.json_mode = mode
        r = backend.generate(request)
        if r.error is None:
            chosen = chosen or mode
            caps.append(Capability(mode, "yes", _json_detail(r.text)))
        elif r.error_cause in REJECTED:
            caps.append(Capability(mode, "no", f"{r.error_cause}: {_said(r)}"))
        else:
            raise _fatal(root, cfg.spec, model, models, r, attempts)
    if logprobs:
        backend.json_mode = chosen or modes[0]
        r = backend.score(request, PROBE_PREFIX, ["yes", "no"])
        values = (json.loads(r.text).get("logprobs") or {}) if r.error is None else {}
        if any(v is not None for v in values.values()):
            caps.append(Capability("logprobs", "yes", "first-token log-probs returned"))
        else:
            caps.append(Capability("logprobs", "no", f"{r.error_cause}: {_said(r)}" if r.error else
                                   "no log-probs for the answer's first token"))
    return Preflight(cfg.spec, root, model, models, tuple(caps), chosen, round(time.perf_counter() - start, 3))


def negotiate(cfg: ModelConfig, cache_path: Path | None, logprobs: bool = False,
              chat: bool = True) -> tuple[ModelConfig, Preflight | None]:
    """``cfg`` with ``json_mode: auto`` resolved to the best mode the endpoint accepts, and the
    preflight behind it. An explicit json_mode is obeyed; the preflight only checks that the server
    takes it. ``chat=False`` (a completion model with its own extractor) probes no JSON mode.

    Results are cached in ``cache_path`` (JSON, keyed by spec and client), so a resumed run sends
    nothing. Raises PreflightError, in one line, when the run could not work.
    """
    from louder.llm.registry import backend_info

    if not backend_info(parse_spec(cfg.spec)[1]).preflight:  # the embedded model, the fake, LangChain, outside
        return cfg, None
    explicit = cfg.json_mode != "auto"
    modes = (cfg.json_mode,) if explicit else MODES if chat else ()
    key = f"{cfg.spec}|{cfg.client}"
    store = _read(cache_path)
    pf = Preflight.from_dict(store[key]) if key in store else None
    if pf is None or any(pf.status(m) == "untested" for m in modes[:1]) or (logprobs and
                                                                            pf.status("logprobs") == "untested"):
        pf = run_preflight(cfg, modes=modes, first_only=True, logprobs=logprobs)
    if explicit and pf.status(cfg.json_mode) == "no":
        raise PreflightError(f"{cfg.spec}: the server rejects json_mode: {cfg.json_mode} "
                             f"({pf.detail(cfg.json_mode)}); use json_mode: auto, or the mode "
                             f"`louder check --model {cfg.spec}` suggests")
    mode = cfg.json_mode if explicit else pf.json_mode
    if mode is None and modes:
        tried = "; ".join(f"{m}: {pf.detail(m)}" for m in modes)
        raise PreflightError(f"{cfg.spec}: the server rejects every JSON mode ({tried})")
    if cache_path is not None:
        store[key] = pf.to_dict()
        cache_path.write_text(json.dumps(store, indent=1), encoding="utf-8")
    mode = mode or "json_schema"
    return cfg.model_copy(update={"json_mode": mode}), pf


def _read(path: Path | None) -> dict:
    if path is None or not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # a damaged cache only costs a fresh preflight
