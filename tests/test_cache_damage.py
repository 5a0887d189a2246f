"""Issue 36: eleven kinds of damage to a run's cache. Each stops the next run in one line naming the
file and `louder repair`; the repair keeps every readable answer in a new cache, moves the damaged
file aside and says how many calls remain; the run then completes and asks the model exactly for
the answers that were lost (0 calls for those kept)."""

from __future__ import annotations

import json
import random
import sqlite3
from contextlib import closing

import pandas as pd
import pytest
from typer.testing import CliRunner

from louder.cli import app
from louder.llm.base import Reply
from louder.llm.cache import CacheDamaged, ResponseCache
from louder.llm.salvage import salvage

runner = CliRunner()
RUN = ["--model", "fake:seed=3", "--agents", "20", "-s", "emergency_response", "-g", "gender_identity"]
CALLS = 120  # 60 agents: a persona and a decision each


def sql(path, *statements):
    with closing(sqlite3.connect(path)) as db:
        for s in statements:
            db.execute(s)
        db.commit()


def page_of(path, number: int) -> tuple[int, int]:
    """(page size, rows on page ``number`` when it is a table leaf, else 0)."""
    data = path.read_bytes()
    ps = int.from_bytes(data[16:18], "big")
    start = (number - 1) * ps
    return ps, int.from_bytes(data[start + 3:start + 5], "big") if data[start] == 13 else 0


def cut_in_half(p):
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    return None  # what is kept: whatever the first half holds (checked: kept == calls not made again)


def garbled_header(p):
    data = bytearray(p.read_bytes())
    data[:100] = random.Random(1).randbytes(100)
    p.write_bytes(bytes(data))
    return CALLS  # the header is rebuilt from the pages: every answer kept


def random_page(p):
    """A random page of the table's rows (a leaf) overwritten with noise: its rows are lost, no other."""
    data = bytearray(p.read_bytes())
    ps, _ = page_of(p, 1)
    leaves = [n for n in range(2, len(data) // ps + 1) if page_of(p, n)[1]]
    number = random.Random(2).choice(leaves)
    _, rows = page_of(p, number)
    data[(number - 1) * ps: number * ps] = random.Random(3).randbytes(ps)
    p.write_bytes(bytes(data))
    return CALLS - rows


def bad_json_row(p):
    sql(p, "UPDATE replies SET reply = '{\"text\": \"cut' WHERE rowid = 7")
    return CALLS - 1


def wrong_shape_row(p):
    sql(p, "UPDATE replies SET reply = '[\"a list\", 1]' WHERE rowid = 9")
    return CALLS - 1


def missing_table(p):
    sql(p, "DROP TABLE replies", "CREATE TABLE notes (x TEXT)")
    return 0  # SQLite overwrote the dropped pages (secure_delete): nothing is left to read


def wrong_columns(p):
    sql(p, "ALTER TABLE replies RENAME COLUMN reply TO answer")
    return CALLS  # the rows are on the pages, as they were


def a_folder(p):
    p.unlink()
    p.mkdir()
    return 0


def zero_bytes(p):
    p.write_bytes(b"")
    return 0


def missing_file(p):
    p.unlink()
    return 0


def not_sqlite(p):
    p.write_text("this is a note someone saved over the cache\n" * 50)
    return 0


KINDS = [cut_in_half, garbled_header, random_page, bad_json_row, wrong_shape_row, missing_table, wrong_columns,
         a_folder, zero_bytes, missing_file, not_sqlite]


@pytest.mark.parametrize("damage", KINDS, ids=[k.__name__ for k in KINDS])
def test_damage_is_one_line_and_repair_keeps_every_readable_answer(tmp_path, damage):
    out = tmp_path / "run"
    cache = out / "cache.sqlite"
    assert runner.invoke(app, ["run", "--out", str(out), *RUN]).exit_code == 0
    before = pd.read_parquet(out / "decisions.parquet")
    expected = damage(cache)

    r = runner.invoke(app, ["run", "--out", str(out), *RUN])
    err = r.stderr.strip()
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert len(err.splitlines()) == 1 and str(cache) in err and f"louder repair {out}" in err, err

    r = runner.invoke(app, ["repair", str(out)])
    assert r.exit_code == 0, r.output
    kept = ResponseCache(cache)
    n_kept = len(kept)
    kept.close()
    line = r.stdout.strip()
    assert len(line.splitlines()) == 1 and f"kept {n_kept} answers" in line
    assert f"{CALLS - n_kept} calls remain to be made" in line and f"kept {n_kept} answers" in line, line
    if cache.with_name("cache.sqlite").exists() and damage is not missing_file:
        assert [p.name for p in out.glob("cache.sqlite.damaged-*")], list(out.iterdir())
    if expected is not None:
        assert n_kept == expected, line

    r = runner.invoke(app, ["run", "--out", str(out), *RUN])
    assert r.exit_code == 0, r.output
    m = json.loads((out / "manifest.json").read_text())
    assert m["model_calls"] == CALLS - n_kept  # every kept answer served from the cache, only the lost asked again
    after = pd.read_parquet(out / "decisions.parquet")
    pd.testing.assert_frame_equal(before.drop(columns="latency_s"), after.drop(columns="latency_s"))  # fake: same


def test_a_healthy_cache_needs_no_repair(tmp_path):
    out = tmp_path / "run"
    assert runner.invoke(app, ["run", "--out", str(out), *RUN]).exit_code == 0
    r = runner.invoke(app, ["repair", str(out)])
    assert r.exit_code == 0 and "is not damaged: nothing to repair" in r.stdout
    assert not list(out.glob("cache.sqlite.damaged-*"))


def test_opening_counts_unreadable_rows_and_salvage_keeps_the_rest(tmp_path):
    path = tmp_path / "c.sqlite"
    c = ResponseCache(path)
    for i in range(40):
        c.put(f"k{i}", Reply(text="x" * (50 + 40 * i), error=None if i % 5 else "timeout: slow", attempts=1))
    c.close()
    sql(path, "UPDATE replies SET reply = 'nope' WHERE key IN ('k1', 'k2')",
        "UPDATE replies SET reply = '{\"text\": 3, \"error\": null}' WHERE key = 'k3'")
    with pytest.raises(CacheDamaged, match="3 of its 40 rows cannot be read"):
        ResponseCache(path)
    s = salvage(path, tmp_path / "new.sqlite")
    assert (s.kept, s.unreadable, s.lost) == (37, 3, 3)
    new = ResponseCache(tmp_path / "new.sqlite")
    assert new.get("k0").error == "timeout: slow" and new.get("k0", retry_errors=True) is None  # errors stay errors
    assert new.get("k4").text == "x" * 210 and new.get("k1") is None
    new.close()


def test_the_first_answer_is_kept(tmp_path):
    c = ResponseCache(tmp_path / "c.sqlite")
    assert c.put("k", Reply(text="first")).text == "first"
    assert c.put("k", Reply(text="second")).text == "first"  # the second writer goes on with the stored answer
    c.put("e", Reply(error="timeout: slow"))
    assert c.put("e", Reply(text="late")).error == "timeout: slow"  # a plain re-run keeps the error …
    assert c.put("e", Reply(text="asked again"), replace_error=True).text == "asked again"  # … --retry-errors not
    assert c.put("e", Reply(text="third"), replace_error=True).text == "asked again"  # an answer is never replaced
    c.close()
