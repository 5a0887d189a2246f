"""A run folder that cannot lie: one writer at a time, one generation of files, a cache that is
never lost (docs/how-to/resume.md).

- ``hold(out)``: the run's exclusive lock (``OUT/.louder.lock``, an ``fcntl.flock``) for as long as a
  run writes the folder — CLI and Python API alike. A second writer fails at once in one line naming
  the holder (pid, command, start); the kernel drops the lock of a process that dies, and the next
  run takes the folder over with a notice.
- Generations: every table a run writes carries the run's generation id in its Parquet metadata (a
  CSV table: its sha256 in the manifest), and the manifest lists them. ``check_generations`` is what
  ``louder analyze`` runs first: files of two writes side by side are refused in one line.
- The cache: a missing or empty cache beside the outputs of an earlier run stops a run before any
  call (``check_cache``); ``repair`` keeps every readable answer of a damaged cache in a new one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import socket
import sys
import threading
import time
import uuid
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from louder.errors import LouderError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks; a run folder is not guarded there
    fcntl = None

LOCK_FILE = ".louder.lock"
GENERATION_KEY = b"louder_generation"
# io's temporary files: ".NAME.XXXXXXXX.tmp" (tempfile.mkstemp)
_TEMP = re.compile(r"^\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp$")

_held: dict[str, list] = {}  # resolved folder → [fd, depth, owning thread]
_guard = threading.Lock()


def command_line() -> str:
    """How this process was started, as a command to type again: ``louder …`` for the CLI."""
    from louder.llm.errors import redact  # a key typed on the command line never reaches a file

    argv = list(sys.argv) or ["python"]
    head = Path(argv[0]).name
    if head.startswith("louder") or Path(argv[0]).parts[-2:] == ("louder", "cli.py"):  # `louder` or `-m louder.cli`
        return redact(shlex.join(["louder", *argv[1:]]))
    return redact(shlex.join([Path(sys.executable).name, *argv]) + " (louder.run)")


def out_folder(out: str | Path) -> Path:
    """``out`` as a run folder, made if missing; a file there is one clear error."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise LouderError(f"--out {out}: is a file, not a folder; give the folder of a run (it is made if missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LouderError(f"--out {out}: cannot make the folder ({e.strerror}); give another path") from None
    return out


def _holder(fd: int) -> dict:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = os.read(fd, 65536)
        return json.loads(data) if data.strip() else {}
    except (OSError, ValueError):
        return {}


def _holder_of_locked(fd: int) -> dict:
    """The details of a holder that has just taken the lock: it writes them right after taking it,
    so a second run that starts at the same moment gives it a little time (a second at most)."""
    for _ in range(50):
        if found := _holder(fd):
            return found
        time.sleep(0.02)
    return {}


def describe(holder: dict) -> str:
    if not holder:
        return "a process that left no details"
    return (f"pid {holder.get('pid')} on {holder.get('host', '?')} (`{holder.get('command', '?')}`, "
            f"started {holder.get('started', '?')})")


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError, TypeError):
        return False
    return True


@contextmanager
def hold(out: str | Path, command: str | None = None):
    """The run folder's exclusive lock for the ``with`` block (re-entered freely by the thread that
    holds it). Yields the folder."""
    out = out_folder(out)
    key = str(out.resolve())
    me = threading.get_ident()
    with _guard:
        entry = _held.get(key)
        if entry is not None:
            if entry[2] != me:
                raise LouderError(f"run folder {out} is in use by another thread of this process; wait for its run "
                                  "to finish, or give another --out")
            entry[1] += 1
    if entry is not None:
        try:
            yield out
        finally:
            with _guard:
                entry[1] -= 1
        return
    fd = os.open(out / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                who = describe(_holder_of_locked(fd))
                raise LouderError(f"run folder {out} is in use by another louder run: {who}; "
                                  "wait for it to finish (or stop it), then run this command again") from None
        before = _holder(fd)
        if before and before.get("pid") != os.getpid():  # its process died holding it (the kernel let go)
            gone = "which is gone" if not _alive(before.get("pid")) else "which no longer holds it"
            warnings.warn(f"{out} was left locked by {describe(before)}, {gone}; taking the folder over",
                          RuntimeWarning, stacklevel=3)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "command": command or command_line(),
                "started": datetime.now().astimezone().isoformat(timespec="seconds")}
        data = json.dumps(info).encode()
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, data)  # over the old details, then cut: a reader never sees an empty file midway
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        raise
    with _guard:
        _held[key] = [fd, 1, me]
    try:
        yield out
    finally:
        with _guard:
            del _held[key]
        try:
            os.ftruncate(fd, 0)  # a clean exit leaves no holder behind
        finally:
            os.close(fd)  # closing drops the flock


def holder(out: str | Path) -> dict | None:
    """Who holds the run folder's lock now (None: nobody)."""
    path = Path(out) / LOCK_FILE
    if fcntl is None or not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return _holder(fd) or {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def clean_temp_files(out: Path) -> list[str]:
    """Remove what writers killed mid-write left (io's ``.NAME.XXXXXXXX.tmp``) of the files runs write:
    tables (``*.parquet``, the sequential CSVs) and manifests. Analysis outputs are left alone (an
    ``analyze`` may be writing them right now: it takes no lock)."""
    removed = []
    for p in out.iterdir():
        m = _TEMP.match(p.name)
        if m and p.is_file():
            name = m.group("name")
            if name.endswith((".parquet", "manifest.json")) or name.startswith("sequential"):
                p.unlink(missing_ok=True)
                removed.append(p.name)
    return removed


# --- generations ----------------------------------------------------------------------------------

def new_generation() -> str:
    return uuid.uuid4().hex[:16]


def fingerprint(path: Path) -> str | None:
    """What ties a file to its write: a Parquet file's generation id (its metadata), a CSV's sha256."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            meta = pq.read_schema(path).metadata or {}
        except Exception as e:  # noqa: BLE001 - pyarrow raises several types for damaged files
            raise LouderError(f"{path}: not a readable Parquet file ({e}); re-run the command that wrote it") from None
        gen = meta.get(GENERATION_KEY)
        return gen.decode() if gen else None
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def file_fingerprints(out: Path, names) -> dict[str, str | None]:
    return {n: fingerprint(out / n) for n in names}


def check_generations(run_dir: str | Path) -> dict[str, str | None]:
    """Every file a manifest of ``run_dir`` lists must be of that manifest's write, and no table may be
    left from a write no manifest records (a table an earlier run wrote and the last one did not).
    Returns what was seen (compare it after reading to catch a writer in between); one LouderError
    otherwise."""
    run_dir = Path(run_dir)
    seen: dict[str, str | None] = {}
    generations: set[str] = set()
    for m in sorted(run_dir.glob("*manifest.json")):
        try:
            manifest = json.loads(m.read_text("utf-8"))
        except (OSError, ValueError):
            continue  # analysis reads it and names the problem
        files = manifest.get("files") if isinstance(manifest, dict) else None
        if not isinstance(files, dict):
            continue  # written before generations existed
        generations.add(manifest.get("generation"))
        for name, expected in files.items():
            path = run_dir / name
            if not path.is_file():
                continue  # analysis says what is missing
            got = fingerprint(path)
            seen[name] = got
            if got != expected:
                _refuse(run_dir, name, f"is not of the write {m.name} records", manifest)
    for path in sorted(run_dir.glob("*.parquet")):
        if path.name not in seen and (got := fingerprint(path)) is not None:
            seen[path.name] = got
            if got not in generations:
                _refuse(run_dir, path.name, "is left from an earlier write that no manifest records (the last run "
                        "did not write it)", None)
    return seen


def _refuse(run_dir: Path, name: str, why: str, manifest: dict | None) -> None:
    busy = holder(run_dir)
    if busy is not None:
        raise LouderError(f"run folder {run_dir} is being written by {describe(busy)}: {name} is already of its "
                          "new write, not all its files yet; run this again when it has finished")
    if manifest is None:
        raise LouderError(f"run folder {run_dir}: {name} {why}; move it aside (or delete it), or run the command "
                          "that writes it again")
    cmd = manifest.get("command") or "the command that wrote it"
    raise LouderError(f"run folder {run_dir}: {name} {why} (a run was stopped while writing its files, or the file "
                      f"comes from another run); run `{cmd}` again: it rebuilds every file from the cache")


def check_unchanged(run_dir: str | Path, seen: dict[str, str | None]) -> None:
    """After reading: the files are still those ``check_generations`` saw (no writer came between)."""
    run_dir = Path(run_dir)
    for name, fp in seen.items():
        path = run_dir / name
        if path.is_file() and fingerprint(path) != fp:
            raise LouderError(f"run folder {run_dir}: {name} was rewritten while it was read (a run finished "
                              "meanwhile); run this again")


# --- the cache ------------------------------------------------------------------------------------

def cache_path(out: Path, cache: str | None) -> Path:
    return Path(cache) if cache else out / "cache.sqlite"


def _answers(manifest: dict) -> int:
    return int((manifest.get("model_calls") or 0) + (manifest.get("cache_hits") or 0))


def check_cache(out: Path, path: Path, manifest_file: str, planned: int) -> None:
    """A missing or empty (0-byte) cache beside the outputs of an earlier run of this kind would
    make every call again and replace answers that are on record: stop before any is made."""
    if path.is_dir() or (path.is_file() and path.stat().st_size):
        return  # a cache (or a folder in its place: opening it says so)
    try:
        manifest = json.loads((out / manifest_file).read_text("utf-8"))
    except (OSError, ValueError):
        return  # no earlier run here (or nothing readable of it): a new run
    if not isinstance(manifest, dict) or not _answers(manifest):
        return
    state = "is missing" if not path.exists() else "is empty (0 bytes)"
    raise LouderError(f"cache {path} {state}, but {out} holds the outputs of an earlier run ({manifest_file}: "
                      f"{_answers(manifest)} answers): this run would make all {planned} model calls again and replace "
                      f"them. Put the cache back, or run `louder repair {out}` to start a new cache, then run this "
                      "command again")


@dataclass(frozen=True)
class Repair:
    path: Path  # the cache
    kept: int | None  # answers in the new cache (None: nothing to repair)
    unreadable: int = 0
    aside: Path | None = None  # where the damaged file went
    remaining: int | None = None  # calls a run of the same command(s) will make

    def line(self) -> str:
        if self.kept is None:
            return f"cache {self.path} is not damaged: nothing to repair"
        moved = f"the damaged file is now {self.aside.name}" if self.aside else "there was no cache file"
        if self.remaining is None:
            left = "run the same command again"
        elif self.remaining:
            left = f"{self.remaining} calls remain to be made: run the same command again to make them"
        else:
            left = "0 calls remain to be made: run the same command again to write the files"
        return (f"repaired {self.path}: kept {self.kept} answers in a new cache ({self.unreadable} unreadable); "
                f"{moved}; {left}")


def manifests_of(run_dir: Path) -> list[dict]:
    out = []
    for m in sorted(run_dir.glob("*manifest.json")):
        try:
            d = json.loads(m.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(d, dict) and "louder_kind" in d:
            out.append(d)
    return out


def repair(run_dir: str | Path, cache: str | Path | None = None) -> Repair:
    """Keep every readable answer of the run folder's cache in a new cache, move the damaged file
    aside (``cache.sqlite.damaged-YYYYmmdd-HHMMSS``) and say how many calls remain. A healthy,
    non-empty cache is left as it is."""
    from louder.llm.cache import CacheDamaged, ResponseCache
    from louder.llm.salvage import salvage

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise LouderError(f"run folder {run_dir} does not exist; give the --out folder of a run")
    with hold(run_dir):
        manifests = manifests_of(run_dir)
        configured = next((m.get("config", {}).get("cache") for m in manifests if m.get("config", {}).get("cache")),
                          None)
        path = Path(cache) if cache else cache_path(run_dir, configured)
        if path.is_file() and path.stat().st_size:
            try:
                ResponseCache(path).close()
                return Repair(path, None)
            except CacheDamaged:
                pass
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        fresh = path.with_name(f"{path.name}.repairing-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{fresh}{suffix}").unlink(missing_ok=True)
        s = salvage(path, fresh)
        aside = None
        if path.exists():
            aside = path.with_name(f"{path.name}.damaged-{stamp}")
            os.replace(path, aside)
            for suffix in ("-wal", "-shm"):
                if Path(f"{path}{suffix}").exists():
                    os.replace(f"{path}{suffix}", f"{aside}{suffix}")
        os.replace(fresh, path)
        planned = sum(int(m.get("planned_calls") or 0) for m in manifests)
        remaining = max(planned - s.kept, s.lost or 0) if planned else s.lost
        return Repair(path, s.kept, s.unreadable, aside, remaining)
