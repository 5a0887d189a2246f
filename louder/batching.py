"""Experiments through batch engines: ``louder batch export | import | status | submit | poll``.

An experiment's calls depend on each other (a decision needs its agent's persona), so a batch
experiment takes stages: each export runs the experiment with recording clients and writes the
requests that can be asked *now* (cache misses only; with ``--unanswered``/``--retry-errors`` also
those a stage's results left without an answer or with an error); each import fills the cache;
once nothing is missing, ``louder run`` with the same config completes from the cache with ``model_calls: 0``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from louder.config import ExperimentConfig
from louder.errors import LouderError
from louder.llm.batch import (ImportSummary, Recorder, batch_dir, export_stage, import_results, mark_answered,
                               read_index, request_states)
from louder.llm.cache import ResponseCache
from louder.llm.spec import parse_spec
from louder.runfolder import hold

def _check_models(config: ExperimentConfig) -> None:
    for m in config.models:
        _, backend, _, url = parse_spec(m.spec)
        if backend != "openai" or (url and "," in url):
            raise LouderError(f"models: {m.spec} cannot be batched; batch files are for openai:MODEL (OpenAI Batch "
                              "API) or openai:MODEL@URL (vLLM run_batch) specs with one URL")


def record(config: ExperimentConfig, out: Path, kinds: list[str], retry_errors: bool = False) -> Recorder:
    """Run ``kinds`` (``louder.kinds`` names; ``simulation`` = whatever ``louder run`` runs with this
    config) with recording clients: every answer the run still needs is written down, no model is
    called, and no result file is written while anything is missing. A network run records one step
    per stage (personas, round 0, then one round of influence, since round r's prompts quote round
    r − 1's answers); an archetype run knows every prompt up front: one stage. ``retry_errors``: a
    cached ``error`` answer is needed again, as in ``louder run --retry-errors``."""
    from louder import kinds as registry
    from louder.task import execute

    resolved = [registry.resolve(k, config) for k in kinds]
    _check_models(config)
    recorder = Recorder(retry_errors)
    for kind in resolved:
        execute(kind.build(config), config, out, recorder=recorder)
    return recorder


@dataclass(frozen=True)
class BatchStatus:
    needed: int  # answers the experiment still needs right now (this stage)
    exported: int  # exported requests waiting for their file's results (retries of errors included)
    unanswered: int  # needed requests whose file's results came back without them (`export --unanswered`)
    errors: int  # exported requests whose answer came back as an error (`export --retry-errors`)
    stage: int  # the last stage exported (0: none)
    stages: dict[int, int]  # stage → requests exported in it
    awaiting_files: tuple[str, ...] = ()  # request files whose results have not come back
    unanswered_files: tuple[str, ...] = ()  # request files whose results came back incomplete
    new: int = 0  # needed requests never exported

    @property
    def next_step(self) -> str:
        nxt = self.stage + 1
        if self.new and self.unanswered:
            return (f"export stage {nxt} (`louder batch export --unanswered`): {self.new} new requests and "
                    f"{self.unanswered} that got no answer in the results of {', '.join(self.unanswered_files)}")
        if self.new:
            return f"export stage {nxt} (`louder batch export`): {self.new} new requests"
        if self.exported:
            return (f"import the results of {', '.join(self.awaiting_files)} ({self.exported} requests awaiting "
                    "them): `louder batch import FILE --out RUN_DIR`")
        if self.unanswered:
            return (f"{self.unanswered} requests got no answer in the results of {', '.join(self.unanswered_files)}: "
                    f"`louder batch export --unanswered` exports exactly those again as stage {nxt}")
        if self.errors:
            return (f"complete with {self.errors} error answers (`louder run` makes 0 model calls and counts them "
                    f"as error); `louder batch export --retry-errors` exports exactly those again as stage {nxt}")
        return "complete: `louder run` with this config makes 0 model calls"


def _cache(config: ExperimentConfig, out: Path) -> ResponseCache:
    return ResponseCache(config.cache or out / "cache.sqlite")


def _states(config: ExperimentConfig, out: Path) -> dict[str, tuple[str, str]]:
    if not read_index(out):
        return {}
    cache = _cache(config, out)
    try:
        return request_states(out, cache)
    finally:
        cache.close()


def status(config: ExperimentConfig, out: Path, kinds: list[str]) -> BatchStatus:
    recorder = record(config, out, kinds)
    states = _states(config, out)
    pending = recorder.pending
    stages: dict[int, int] = {}
    for e in read_index(out).values():
        stages[e["stage"]] = stages.get(e["stage"], 0) + 1
    awaiting = [f for s, f in states.values() if s == "awaiting"]
    lost = [states[p.key][1] for p in pending if states.get(p.key, ("",))[0] == "unanswered"]
    return BatchStatus(len(pending), len(awaiting), len(lost), sum(s == "error" for s, _ in states.values()),
                       max(stages, default=0), stages, tuple(dict.fromkeys(sorted(awaiting))),
                       tuple(dict.fromkeys(sorted(lost))), sum(p.key not in states for p in pending))


def export(config: ExperimentConfig, out: Path, kinds: list[str], unanswered: bool = False,
           retry_errors: bool = False) -> tuple[int, list[Path], int]:
    """Write the next stage; returns (stage, files, requests written).

    Every request the experiment needs now that was never exported, and besides: with
    ``unanswered``, those whose file's results came back without them; with ``retry_errors``,
    those whose answer came back as an ``error`` (and any other cached error answer the run needs).
    A request whose file's results are still awaited is never written twice.
    """
    with hold(out):  # the recording run and the stage's files: one writer throughout
        recorder = record(config, out, kinds, retry_errors=retry_errors)
        states = _states(config, out)
        again = {"unanswered"} if unanswered else set()
        if retry_errors:
            again.add("error")
        stage, files = export_stage(out, recorder.pending, {k for k, (s, _) in states.items() if s in again})
    return stage, files, sum(len(f.read_text("utf-8").splitlines()) for f in files)


def import_file(path: Path, out: Path, config: ExperimentConfig) -> ImportSummary:
    if not path.exists():
        raise LouderError(f"batch result file {path} does not exist")
    if not read_index(out):
        raise LouderError(f"{out} has no exported batch (batch/index.jsonl); run `louder batch export` first")
    with hold(out):  # answers go into the run's cache: no run may write it meanwhile
        cache = _cache(config, out)
        try:
            return import_results(path, out, cache)
        finally:
            cache.close()


# --- OpenAI Batch API: upload, create, poll, download (openai SDK) ---

def _openai_client(config: ExperimentConfig):
    import openai

    _check_models(config)
    _, _, _, url = parse_spec(config.models[0].spec)
    if not url and not os.environ.get("OPENAI_API_KEY"):
        raise LouderError("batch submit needs the OPENAI_API_KEY environment variable")
    return openai.OpenAI(base_url=url, api_key=os.environ.get("OPENAI_API_KEY") or "not-needed", max_retries=3)


def _submitted(out: Path) -> dict:
    path = batch_dir(out) / "submitted.json"
    return json.loads(path.read_text("utf-8")) if path.exists() else {}


def _save_submitted(out: Path, data: dict) -> None:
    from louder.io import write_json

    write_json(data, batch_dir(out) / "submitted.json")


def submit(config: ExperimentConfig, out: Path) -> list[tuple[str, str]]:
    """Upload every exported request file not yet submitted and create its batch; returns
    (file name, batch id) pairs. Batch ids are kept in ``batch/submitted.json`` (no key)."""
    client = _openai_client(config)
    done = _submitted(out)
    made = []
    for path in sorted(batch_dir(out).glob("requests-*.jsonl")):
        if path.name in done:
            continue
        first = json.loads(path.read_text("utf-8").splitlines()[0])
        with open(path, "rb") as f:
            uploaded = client.files.create(file=f, purpose="batch")
        batch = client.batches.create(input_file_id=uploaded.id, endpoint=first["url"], completion_window="24h")
        done[path.name] = {"batch_id": batch.id, "input_file_id": uploaded.id, "status": batch.status}
        _save_submitted(out, done)
        made.append((path.name, batch.id))
    return made


def poll(config: ExperimentConfig, out: Path) -> list[tuple[str, str, ImportSummary | None]]:
    """Check every submitted batch; download and import the results of those that ended.

    A batch that ended partially (expired, cancelled, some requests failed) is imported for what it
    has: its error file's lines become ``error`` answers, and requests with no line at all become
    *unanswered*, so ``louder batch export --unanswered`` asks for exactly those again.
    """
    client = _openai_client(config)
    done = _submitted(out)
    report = []
    for name, entry in done.items():
        if entry.get("imported"):
            report.append((name, "imported", None))
            continue
        batch = client.batches.retrieve(entry["batch_id"])
        entry["status"] = batch.status
        if batch.status not in ("completed", "expired", "cancelled", "failed"):
            report.append((name, batch.status, None))
            continue
        summaries = []
        for kind in ("output_file_id", "error_file_id"):
            fid = getattr(batch, kind, None)
            if not fid:
                continue
            target = batch_dir(out) / f"results-{name.removeprefix('requests-').removesuffix('.jsonl')}-{kind[:-8]}.jsonl"
            target.write_bytes(client.files.content(fid).content)
            summaries.append(import_file(target, out, config))
        # The batch ended: whatever its files did not answer will not come (an expired batch may
        # have no file at all), so its requests no longer await results.
        mark_answered(out, f"batch {entry['batch_id']} ({batch.status})", {name: 0})
        entry["imported"] = True
        _save_submitted(out, done)
        report.append((name, batch.status, _merge(summaries)))
    _save_submitted(out, done)
    return report


def _merge(summaries: list[ImportSummary]) -> ImportSummary | None:
    if not summaries:
        return None
    fields = ("lines", "stored", "errors", "duplicates", "already_cached", "unknown", "malformed")
    return ImportSummary(**{f: sum(getattr(s, f) for s in summaries) for f in fields})
