"""Batch files: every request an experiment still needs, in the OpenAI Batch API input format
(which vLLM's offline ``run_batch`` entry point reads too), and the import of their answers.

Export runs the experiment with clients that *record* each cache miss instead of calling a model
(``Recorder``); what is recorded is exactly the next stage: personas first, then the decisions of
agents whose persona is cached, and so on. Import stores each answer in the run's cache under its
request's cache key — the ``custom_id`` — so ``louder run`` afterwards serves it like any cached
answer. Nothing here knows about experiments: a request, its key and its wire body.

Files under ``RUN_DIR/batch/``:

- ``requests-<stage>.jsonl`` (``requests-<stage>-<model>.jsonl`` with several models): the input
  lines ``{custom_id, method, url, body}``;
- ``index.jsonl``: one line per exported request — ``custom_id``, stage, request file, model label,
  and how to read its answer (chat, completion, or score with its prefix and choices). Import trusts
  only ``custom_id``s found here, so lines of another run are counted as unknown, never stored. A
  request exported again (it got no answer, or an ``error``) has a later line; the last one counts.
- ``imports.jsonl``: one line per imported result file (or batch that ended): which request files
  it answered. A request file whose results have come back no longer *awaits* them: what it still
  lacks is *unanswered*, and ``louder batch export --unanswered`` asks for it again.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from louder.llm.base import Reply, Request
from louder.llm.cache import ResponseCache
from louder.llm.errors import classify_failure
from louder.llm.openai_wire import generation_reply, request_body, score_reply


@dataclass(frozen=True)
class Pending:
    """One request a run still needs: its cache key, the request, and (score calls) prefix and choices."""

    key: str
    model: str  # the model's label in the experiment
    model_name: str  # the name the API knows it by
    json_mode: str
    request: Request
    score: tuple[str, tuple[str, ...]] | None = None
    reasoning_control: str | None = None  # how the request's reasoning level is sent (louder.llm.thinking)

    @property
    def kind(self) -> str:
        return "score" if self.score else ("chat" if self.request.messages is not None else "completion")


class Recorder:
    """Collects the requests that missed the cache, once each, in the order they were met.
    ``retry_errors``: a cached ``error`` answer counts as a miss (``louder batch export --retry-errors``)."""

    def __init__(self, retry_errors: bool = False):
        self.retry_errors = retry_errors
        self._lock = threading.Lock()
        self._pending: dict[str, Pending] = {}

    def add(self, pending: Pending) -> None:
        with self._lock:
            self._pending.setdefault(pending.key, pending)

    @property
    def pending(self) -> list[Pending]:
        with self._lock:
            return list(self._pending.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)


def batch_line(p: Pending) -> dict:
    """The OpenAI Batch API input line of one pending request."""
    path, body = request_body(p.model_name, p.request, p.json_mode, score=p.score is not None,
                              reasoning_control=p.reasoning_control)
    return {"custom_id": p.key, "method": "POST", "url": f"/v1/{path}", "body": body}


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_")[:60] or "model"


def batch_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / "batch"


def read_index(run_dir: str | Path) -> dict[str, dict]:
    """custom_id → its index entry, over every stage exported so far."""
    path = batch_dir(run_dir) / "index.jsonl"
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            out[entry["custom_id"]] = entry
    return out


def export_stage(run_dir: str | Path, pending: list[Pending], again: set[str] = frozenset()) -> tuple[int, list[Path]]:
    """Write the pending requests as the next stage; returns (stage, files written).

    Requests already exported in an earlier stage are not written again, except those in ``again``
    (no answer came in their file's results, or the answer was an ``error``).
    """
    d = batch_dir(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    index = read_index(run_dir)
    new = [p for p in pending if p.key not in index or p.key in again]
    stage = 1 + max((e["stage"] for e in index.values()), default=0)
    if not new:
        return stage - 1, []
    # A batch holds one model and one endpoint (the Batch API's rule), so files split by both.
    groups: dict[tuple[str, str], list[dict]] = {}
    for p in new:
        line = batch_line(p)
        groups.setdefault((p.model, line["url"]), []).append(line)
    files, file_of = [], {}
    for (label, url), lines in groups.items():
        endpoint = url.rsplit("/", 1)[-1]
        name = f"requests-{stage}.jsonl" if len(groups) == 1 else f"requests-{stage}-{_slug(label)}-{endpoint}.jsonl"
        path = d / name
        # Requests first, index after: an interrupted export leaves requests that are simply
        # exported again next time, never an index entry without its request line.
        path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), "utf-8")
        files.append(path)
        file_of.update((x["custom_id"], name) for x in lines)
    with open(d / "index.jsonl", "a", encoding="utf-8") as f:
        for p in new:
            f.write(json.dumps({"custom_id": p.key, "stage": stage, "file": file_of[p.key], "model": p.model,
                                "kind": p.kind,
                                "prefix": p.score[0] if p.score else None,
                                "choices": list(p.score[1]) if p.score else None}) + "\n")
    return stage, files


def request_file(entry: dict) -> str:
    """The request file an index entry was exported in (older indexes name only the stage)."""
    return entry.get("file") or f"stage {entry['stage']}"


def mark_answered(run_dir: str | Path, results: str, files: dict[str, int]) -> None:
    """Note in ``imports.jsonl`` that ``results`` brought answers for ``files`` (request file → lines;
    0 for a batch that ended with no result file at all)."""
    if files:
        with open(batch_dir(run_dir) / "imports.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps({"results": results, "files": files}) + "\n")


def answered_files(run_dir: str | Path) -> set[str]:
    """The request files whose results have been imported (in whole or in part)."""
    path = batch_dir(run_dir) / "imports.jsonl"
    if not path.exists():
        return set()
    return {name for line in path.read_text("utf-8").splitlines() if line.strip()
            for name in json.loads(line)["files"]}


def request_states(run_dir: str | Path, cache: ResponseCache) -> dict[str, tuple[str, str]]:
    """custom_id → (state, request file) for every exported request, as of its last export:

    - ``answered``: a non-error answer is cached;
    - ``awaiting``: its file's results have not come back yet (an ``error`` answer cached from an
      earlier stage included: it is being asked again);
    - ``unanswered``: its file's results came back without it (a line cut, missing or expired);
    - ``error``: its file's results came back with an ``error`` for it.

    A file counts as come back once ``imports.jsonl`` says so, or (run folders from before that
    file) once any of its requests has a non-error answer.
    """
    index = read_index(run_dir)
    flags = cache.error_flags(list(index))
    back = answered_files(run_dir) | {request_file(e) for k, e in index.items() if flags.get(k) is False}
    states = {}
    for key, entry in index.items():
        name = request_file(entry)
        if flags.get(key) is False:
            state = "answered"
        elif name not in back:
            state = "awaiting"
        else:
            state = "error" if flags.get(key) else "unanswered"
        states[key] = (state, name)
    return states


@dataclass(frozen=True)
class ImportSummary:
    """What an import did with every line of a result file; the counts add up to ``lines``."""

    lines: int
    stored: int  # answers stored in the cache (including error answers)
    errors: int  # of ``stored``: lines with an error object or a non-2xx status, stored as ``error``
    duplicates: int  # a custom_id seen earlier in this import
    already_cached: int  # answered before (an earlier import or a live run): left as it was
    unknown: int  # custom_id not exported from this run folder
    malformed: int  # not JSON (e.g. truncated mid-line) or no custom_id
    examples: dict[str, list[str]] = field(default_factory=dict)  # a few line numbers per category


def _error_text(obj: dict) -> tuple[str, str] | None:
    """(the error, its cause) of a result line, or None for a 2xx response. The cause is the one a
    live call would get (``louder.llm.errors``): ``http_STATUS`` for an HTTP error, ``batch_error`` for
    an error object without a status."""
    err = obj.get("error")
    if err:
        msg = err.get("message") if isinstance(err, dict) else str(err)
        code = err.get("code") if isinstance(err, dict) else None
        return f"batch error{f' {code}' if code else ''}: {msg}"[:2000], "batch_error"
    resp = obj.get("response")
    if not isinstance(resp, dict):
        return "batch error: line has neither response nor error", "bad_response"
    status = resp.get("status_code", 200)
    if not isinstance(status, int) or status >= 300:
        body = resp.get("body")
        msg = body.get("error", body) if isinstance(body, dict) else body
        cause = classify_failure(status, json.dumps(body)).cause if isinstance(status, int) else "bad_response"
        return f"batch error: HTTP {status}: {str(msg)[:1500]}", cause
    return None


def reply_of(obj: dict, entry: dict) -> Reply:
    """The Reply a result line stands for, read as its index entry says."""
    err = _error_text(obj)
    if err:
        return Reply(error=err[0], error_cause=err[1])
    body = obj["response"].get("body")
    if not isinstance(body, dict):
        return Reply(error=f"bad_response: batch error: response body is not a JSON object: {str(body)[:300]}",
                     error_cause="bad_response")
    if entry["kind"] == "score":
        return score_reply(body, entry["prefix"], entry["choices"])
    return generation_reply(body, entry["kind"] == "chat")


def import_results(path: str | Path, run_dir: str | Path, cache: ResponseCache) -> ImportSummary:
    """Store every answer of a batch result file in ``cache``; count and report everything else.

    Never raises for a bad line: each line is exactly one of stored, duplicate, already cached,
    unknown or malformed. A cached answer that is an ``error`` is replaced by a new answer.
    """
    index = read_index(run_dir)
    counts = dict(stored=0, errors=0, duplicates=0, already_cached=0, unknown=0, malformed=0)
    examples: dict[str, list[str]] = {}
    seen: set[str] = set()
    files: dict[str, int] = {}  # request file → lines of it this file answered
    raw = Path(path).read_bytes().decode("utf-8", errors="replace")
    lines = [ln for ln in raw.splitlines() if ln.strip()]

    def count(kind: str, lineno: int) -> None:
        counts[kind] += 1
        if len(examples.setdefault(kind, [])) < 5:
            examples[kind].append(str(lineno))

    for lineno, line in enumerate(lines, 1):
        try:
            obj = json.loads(line)
            cid = obj["custom_id"]
            if not isinstance(cid, str):
                raise TypeError
        except (json.JSONDecodeError, KeyError, TypeError):
            count("malformed", lineno)
            continue
        if cid not in index:
            count("unknown", lineno)
            continue
        if cid in seen:
            count("duplicates", lineno)
            continue
        seen.add(cid)
        name = request_file(index[cid])
        files[name] = files.get(name, 0) + 1
        if cache.get(cid, retry_errors=True) is not None:
            count("already_cached", lineno)
            continue
        reply = reply_of(obj, index[cid])
        cache.put(cid, reply, replace_error=True)  # a cached error (not an answer: checked above) is replaced
        count("stored", lineno)
        if reply.error:
            counts["errors"] += 1
    mark_answered(run_dir, Path(path).name, files)
    return ImportSummary(lines=len(lines), examples=examples, **counts)
