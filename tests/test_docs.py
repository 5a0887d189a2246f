"""Issue 22: the documentation site, and docs that cannot lie.

- The site builds with ``mkdocs build --strict`` (a broken link, a missing page or a warning fails).
- Every shell command of the getting-started, tutorial and how-to pages runs (the rule below).
- The notebooks run: on the fake model, and the getting-started one at tiny N on the embedded model.
- The output tables documented in docs/reference/outputs.md are exactly the ones runs write.
- The generated references cover every command and config field; the README is a short landing page.

**The rule for commands in pages.** In README.md and the pages under docs/getting-started/,
docs/tutorials/ and docs/how-to/, every fenced ``console`` block's ``$ `` lines and every fenced ``bash`` block's
non-comment lines are commands, run in order in one scratch folder per page (with ``examples/``
linked in) and each must exit 0. ``louder`` (or ``.venv/bin/louder``) is this checkout's louder (a plain
``louder`` command runs in this process, the others in bash; in ``louder … || B`` the louder part runs here and B
in bash, with ``$?`` its exit code). A ``louder`` command that calls models runs
on ``fake:seed=1``: a ``--model/-m`` naming any other model is swapped for it, and ``run``/``probe``/``batch``
commands that name none get it (a ``--dry-run`` calls none: it keeps the page's models, and its prices).
``louder analyze`` and ``louder report`` that name no ``-B`` get ``-B 2000``, unless the page shows their output.

**What a page claims is checked.** The lines a console block shows under a command must be in its output
(in order; white space and table rules loose, "…" any text). Marks just above a block (HTML comments,
invisible on the site; several may stand one a line):

- ``<!-- docs-test: skip (reason) -->``: the block is not run (servers, keys, GPUs, installs): a reason is
  required;
- ``<!-- docs-test: write FILE -->``: the block is written to FILE before the commands that follow it;
- ``<!-- docs-test: expect "TEXT" not "TEXT" /REGEX/ -->``: claims on the output of the block's commands;
  ``expect FILE.csv COLUMN=VALUE ...`` a row of a table they wrote, ``expect FILE "TEXT"`` a file's text
  (``check_claims``);
- ``<!-- docs-test: with FLAGS (reason) -->``: FLAGS added to the block's ``louder run`` commands, not dry
  runs (a smaller ``--agents`` where no claim depends on it).
"""

from __future__ import annotations

import html
import logging
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "tools"))

import fake_openai  # noqa: E402  (tests/fake_openai.py)
import hooks  # noqa: E402  (docs/tools/hooks.py: the generated reference pages)
import notebooks  # noqa: E402  (docs/tools/notebooks.py: notebook execution with parameters)

FAKE = "fake:seed=1"
README = ROOT / "README.md"
TESTED_DIRS = ("getting-started", "tutorials", "how-to")
# Pages whose commands take long even on the fake model (the paper's full design, Ray, a 1,000,000-agent
# dry run, a network run with its archetype run): marked slow, so `make test-fast` skips them and `make test`
# (CI) runs them. The others take seconds in process (issue 32: population-what-if, control-cost and bai-tests
# left this list).
SLOW_PAGES = {"tutorials/scale-out.md", "tutorials/network.md", "tutorials/replicate-the-paper.md",
              "tutorials/conventions.md"}
# Pages that run Bai et al.'s association test on the fake model, which writes no word pairs: planning it warns
# so before the run (the page shows what that run reads), a warning these pages expect.
FILLER_PAGES = {"how-to/bai-tests.md"}


# --- fenced blocks and their commands ----------------------------------------------------------------

@dataclass
class Block:
    lang: str
    body: str
    mark: str  # "", "skip" or "write"
    arg: str   # the file name of a write mark, the reason of a skip mark
    line: int
    marks: tuple[str, ...] = ()  # every docs-test mark just above the block (their bodies), in order


FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
MARK = re.compile(r"<!--\s*docs-test:\s*(?P<body>.*?)\s*-->")
SKIP = re.compile(r"^skip\s*(?P<reason>\(.+\))?$")
WRITE = re.compile(r"^write\s+(?P<file>\S+)$")


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown page, each with the docs-test marks just above it (one a
    line; blank lines may stand between)."""
    lines = text.splitlines()
    out, i, marks = [], 0, []
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                mark = MARK.search(lines[i])
                marks = marks + [mark["body"]] if mark and lines[i].strip().startswith("<!--") else []
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        body, start, i = [], i + 1, i + 1
        while i < len(lines) and not (lines[i].strip().startswith(fence) and lines[i].strip().strip(fence[0]) == ""):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        kind, arg = "", ""
        for mark in marks:
            if s := SKIP.match(mark):
                kind, arg = "skip", (s["reason"] or "")
            elif w := WRITE.match(mark):
                kind, arg = "write", w["file"]
        out.append(Block(info.split()[0] if info else "", "\n".join(body) + "\n", kind, arg, start, tuple(marks)))
        marks, i = [], i + 1
    return out


def _joined(lines: list[str]) -> list[str]:
    """Join shell continuation lines (a trailing backslash)."""
    out, buf = [], ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
        else:
            out.append(buf + line)
            buf = ""
    return out + ([buf] if buf else [])


def commands(block: Block) -> list[str]:
    lines = block.body.splitlines()
    if block.lang == "console":
        cmds, i = [], 0
        while i < len(lines):
            if lines[i].startswith("$ "):
                cmd = [lines[i][2:]]
                while cmd[-1].rstrip().endswith("\\") and i + 1 < len(lines):
                    i += 1
                    cmd.append(lines[i])
                cmds += _joined(cmd)
            i += 1
        return cmds
    if block.lang == "bash":
        return [c for c in _joined(lines) if c.strip() and not c.lstrip().startswith("#")]
    return []


def shown_output(block: Block) -> list[list[str]]:
    """The output a console block shows under each of its commands (the lines up to the next ``$ ``)."""
    if block.lang != "console":
        return []
    out: list[list[str]] = []
    continued = False
    for line in block.body.splitlines():
        if line.startswith("$ "):
            out.append([])
            continued = line.rstrip().endswith("\\")
        elif continued:
            continued = line.rstrip().endswith("\\")
        elif out and line.strip():
            out[-1].append(line)
    return out


MODEL_FLAG = re.compile(r"(?<=\s)(?P<flag>--model|-m)(?P<sep>\s+|=)(?P<value>\"[^\"]*\"|'[^']*'|\S+)")
CALLS_MODELS = re.compile(r"^louder\s+(run|probe\s+(explicit|association|decision)|batch\s+(export|status|submit|poll))\b")
ANALYSES = re.compile(r"^louder\s+(analyze|report)\b")
# The bootstrap draws the rule gives `louder analyze` and `louder report` that name none: the docs' claims
# (a planted case flagged, a null one not) hold at 2,000 draws as at 10,000, in a fifth of the time.
DOCS_BOOTSTRAP = 2000


def _with_flags(cmd: str, flags: str) -> str:
    code, hash_, comment = cmd.partition(" #")
    return f"{code.rstrip()} {flags}" + (f" {hash_.strip()}{comment}" if hash_ else "")


def for_test(cmd: str, extra: str = "") -> str:
    """The command as the test runs it: this checkout's louder, on the fake model; ``extra`` (a ``with``
    mark's flags) added to ``louder run`` commands, except dry runs."""
    cmd = re.sub(r"(^|\s)\.venv/bin/louder\b", r"\1louder", cmd.strip())
    if not cmd.startswith("louder ") or "--dry-run" in cmd.split(" #")[0].split():
        return cmd  # a dry run calls no model: it prices the page's own, as the reader sees it

    def swap(m: re.Match) -> str:
        value = m["value"].strip("\"'")
        return m.group(0) if value.startswith("fake") else f"{m['flag']}{m['sep']}{FAKE}"

    cmd = MODEL_FLAG.sub(swap, cmd)
    if CALLS_MODELS.match(cmd) and not MODEL_FLAG.search(cmd):
        cmd = _with_flags(cmd, f"--model {FAKE}")
    if extra and cmd.startswith("louder run "):
        cmd = _with_flags(cmd, extra)
    return cmd


def fewer_draws(cmd: str) -> str:
    """``-B DOCS_BOOTSTRAP`` added to a ``louder analyze`` or ``louder report`` that names no bootstrap."""
    if ANALYSES.match(cmd) and not re.search(r"\s(-B|--bootstrap)[\s=]", cmd.split(" #")[0] + " "):
        return _with_flags(cmd, f"-B {DOCS_BOOTSTRAP}")
    return cmd


# --- the claims beside the commands ------------------------------------------------------------------

BOX = re.compile(r"[│┃┆┊║|]")
FILE_CLAIM = re.compile(r"^[\w./-]+\.(csv|html|json|md|txt|yaml)$")
CLAIM_WORD = re.compile(r'"[^"]*"|/(?:[^/\\]|\\.)+/(?!\S)|\S+')  # "TEXT", /REGEX/ (may hold spaces), a word


def normalised(text: str) -> str:
    """Output as a claim is matched against it: table rules and runs of white space as one space."""
    return " ".join(BOX.sub(" ", text).split())


def _pattern(shown: str) -> re.Pattern:
    """A shown output line as a pattern: white space and table rules loose, "…" any text."""
    parts = [re.escape(p) for p in normalised(shown).split("…")]
    return re.compile(".*?".join(parts))


def check_claims(marks: tuple[str, ...], output: str, workdir: Path) -> list[str]:
    """What the ``expect`` marks claim and the output (or the files) do not hold, one message each.

    - ``expect "TEXT" ...``: each TEXT is in the output of the block's commands (white space and table
      rules loose, as :func:`normalised`);
    - ``expect not "TEXT"``: TEXT is not;
    - ``expect /REGEX/``: the regex matches the normalised output;
    - ``expect FILE.csv COLUMN=VALUE ...``: a row of FILE (in the page's folder) has every VALUE (a number
      is compared at the decimals it is written with; ``COLUMN=`` is an empty cell);
    - ``expect FILE "TEXT" ...`` (or ``not`` or a regex): the same of the text of FILE (an HTML file's text without
      its tags)."""
    problems = []
    for mark in marks:
        if not mark.startswith("expect"):
            continue
        words = CLAIM_WORD.findall(mark[len("expect"):])  # a quoted word is text, whatever it looks like
        if words and words[0].endswith(".csv") and all("=" in w for w in words[1:]):
            problems += _check_row(workdir / words[0], dict(w.split("=", 1) for w in words[1:]))
            continue
        text = normalised(output)
        if words and FILE_CLAIM.search(words[0]):
            path, words = workdir / words[0], words[1:]
            if not path.exists():
                problems.append(f"expected {path.name}, which no command wrote")
                continue
            text = normalised(html.unescape(re.sub(r"<[^>]+>", " ", path.read_text("utf-8"))))
        negate = False
        for w in words:
            if w == "not":
                negate = True
                continue
            if w.startswith('"'):
                w = w[1:-1]
                found = normalised(w) in text
            elif len(w) > 1 and w.startswith("/") and w.endswith("/"):
                found = re.search(w[1:-1], text) is not None
            else:
                problems.append(f"expect mark: {w!r} is neither \"TEXT\" nor /REGEX/")
                continue
            if found == negate:
                problems.append(f"{'unexpected' if negate else 'expected'} {w!r} in the output")
            negate = False
    return problems


def _same(cell, value: str) -> bool:
    if value == "" or pd.isna(cell):  # `COLUMN=` claims an empty cell
        return value == "" and pd.isna(cell)
    try:
        decimals = len(value.split(".")[1]) if "." in value else 0
        return round(float(cell), decimals) == round(float(value), decimals)
    except (TypeError, ValueError):
        return str(cell) == value


def _check_row(path: Path, want: dict[str, str]) -> list[str]:
    if not path.exists():
        return [f"expected {path.name}, which no command wrote"]
    df = pd.read_csv(path)
    missing = [c for c in want if c not in df.columns]
    if missing:
        return [f"{path.name} has no column {', '.join(missing)}"]
    if not any(all(_same(row[c], v) for c, v in want.items()) for _, row in df.iterrows()):
        shown = df[list(want)].to_string(index=False)
        return [f"{path.name}: no row with {want}; its rows:\n{shown}"]
    return []


def check_shown(shown: list[str], output: str) -> list[str]:
    """The lines a console block shows under a command are in its output, in order."""
    text, at, problems = normalised(output), 0, []
    for line in shown:
        m = _pattern(line).search(text, at)
        if m is None:
            problems.append(f"shown output {line.strip()!r} is not in the output")
        else:
            at = m.end()
    return problems


# --- running the commands ----------------------------------------------------------------------------

SHELL = re.compile(r"[|&;<>()$`*?~]|^\S+=")


def _in_process(cmd: str, workdir: Path, env: dict) -> tuple[int, str]:
    """A plain ``louder ...`` command (no shell syntax) in this process: the same CLI the shim runs, without
    a new Python and its imports for every command (seconds each on a loaded machine)."""
    from typer.testing import CliRunner

    from louder.cli import app

    args = shlex.split(cmd, comments=True)[1:]
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        r = CliRunner().invoke(app, args, env={k: v for k, v in env.items() if k in ("COLUMNS", "OPENAI_API_KEY")})
    finally:
        os.chdir(cwd)
    output = r.stdout + (r.stderr or "")
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        import traceback

        output += "".join(traceback.format_exception(r.exception))
    return r.exit_code, output


def _or_else(cmd: str) -> tuple[str, str, str]:
    """``A || B`` as (A, "||", B) when A is a whole command (not inside a comment or quotes); else (cmd, "", "")."""
    first, otherwise, then = cmd.partition(" || ")
    try:
        whole = otherwise and " #" not in first and shlex.split(first) is not None
    except ValueError:  # an open quote: the `||` is inside it
        whole = False
    return (first, otherwise, then) if whole else (cmd, "", "")


def run_page(page: Path, workdir: Path, timeout: int = 600, in_process: bool = True) -> list[str]:
    """Run the page's commands (the rule in this module's docstring) and check the claims marked beside
    them; the failures, as messages."""
    bin_dir = workdir / ".bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "louder"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m louder.cli "$@"\n')
    shim.chmod(0o755)
    if not (workdir / "examples").exists():
        (workdir / "examples").symlink_to(ROOT / "examples")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "COLUMNS": "160"}
    env.pop("OPENAI_API_KEY", None)
    failures = []
    where = page.relative_to(DOCS) if page.is_relative_to(DOCS) else page.name
    for block in blocks(page.read_text("utf-8")):
        if block.mark == "skip":
            continue
        if block.mark == "write":
            (workdir / block.arg).parent.mkdir(parents=True, exist_ok=True)
            (workdir / block.arg).write_text(block.body, "utf-8")
            continue
        extra = next((m[len("with"):].split(" (")[0].strip() for m in block.marks if m.startswith("with ")), "")
        outputs = []
        shown = shown_output(block)
        for i, cmd in enumerate(commands(block)):
            run = for_test(cmd, extra)
            if not (i < len(shown) and shown[i]):  # output the page shows is the output of the command as written
                run = fewer_draws(run)
            first, otherwise, then = _or_else(run)  # `louder … || echo "… $?"`: louder here, the rest in bash
            if in_process and first.startswith("louder ") and not SHELL.search(first.split(" #")[0]):
                code, output = _in_process(first, workdir, env)
                if otherwise and code != 0:  # bash runs the right side with $? the left side's exit code, as it would
                    r = subprocess.run(["bash", "-c", f"(exit {code}) || {then}"], cwd=workdir, env=env,
                                       capture_output=True, text=True, timeout=timeout)
                    code, output = r.returncode, output + r.stdout + r.stderr
            else:
                r = subprocess.run(["bash", "-c", run], cwd=workdir, env=env, capture_output=True, text=True,
                                   timeout=timeout)
                code, output = r.returncode, r.stdout + r.stderr
            if code != 0:
                failures.append(f"{where}:{block.line}: `{cmd}` (ran `{run}`) exited {code}: {output.strip()[-800:]}")
                continue
            outputs.append(output)
            if i < len(shown):
                failures += [f"{where}:{block.line}: `{cmd}`: {p}" for p in check_shown(shown[i], output)]
        failures += [f"{where}:{block.line}: {p}" for p in check_claims(block.marks, "\n".join(outputs), workdir)]
    return failures


def _tested_pages() -> list[Path]:
    return sorted(p for d in TESTED_DIRS for p in (DOCS / d).glob("*.md"))


# --- the rule itself ---------------------------------------------------------------------------------

def test_command_rule_swaps_models_and_honours_marks(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("""
<!-- docs-test: write tiny.yaml -->
```yaml
simulation: {agents: 2, scenarios: [emergency_response], groups: [gender_identity]}
```

```console
$ louder run tiny.yaml --out runs/a --model openai:gpt-4o    # a comment stays a comment
wrote runs/a/: decisions.parquet (6 rows), personas.parquet (6 rows), manifest.json
$ louder run tiny.yaml \\
    --out runs/b
```

<!-- docs-test: skip (would fail) -->
```bash
false
```

```bash
test -f runs/a/decisions.parquet
test -f runs/b/decisions.parquet
```
""")
    assert for_test("louder run x.yaml --out o -m embedded") == f"louder run x.yaml --out o -m {FAKE}"
    assert for_test("louder run --out o # note") == f"louder run --out o --model {FAKE} # note"
    assert for_test('.venv/bin/louder probe explicit --out o --model "fake:seed=2,bias=a:1"') == \
        'louder probe explicit --out o --model "fake:seed=2,bias=a:1"'
    assert for_test("louder analyze runs/x") == "louder analyze runs/x"
    assert run_page(page, tmp_path / "work") == []
    # ... and a command that fails is reported with its page and line
    page.write_text("```console\n$ louder run --out runs/c --agents 0\n```\n")
    failures = run_page(page, tmp_path / "work2")
    assert len(failures) == 1 and "page.md:1" in failures[0] and "agents" in failures[0]


def test_claims_beside_commands_are_checked(tmp_path):
    """Issue 32: the output a console block shows, and what ``expect`` marks claim of the output and of the
    files written, are checked; a claim that does not hold fails the page."""
    page = tmp_path / "page.md"
    one = "--scenario emergency_response --group gender_identity"
    page.write_text(f"""
<!-- docs-test: expect "status counts: {{'valid': 6" not "missing:" -->
<!-- docs-test: expect /embedded 12 ~[0-9,]+ / -->
```console
$ louder run --out runs/a --agents 2 {one} --dry-run
$ louder run --out runs/a --agents 2 {one}
wrote runs/a/: decisions.parquet (6 rows), … manifest.json
```

<!-- docs-test: with --agents 3 (a smaller run) -->
<!-- docs-test: expect runs/b/cases.csv kind=implicit n_valid=9 -->
```console
$ louder run --out runs/b --agents 2 {one}
$ louder run --out runs/b --agents 2 {one} --dry-run
$ louder analyze runs/b
```

<!-- docs-test: expect /the run failed with exit code [1-9]/ not "not shown" -->
```console
$ louder run --out runs/c --agents 0 || echo "the run failed with exit code $?"
$ louder backends || echo "not shown"
```
""")
    assert run_page(page, tmp_path / "work") == []
    assert _or_else('louder x --note "a || b"') == ('louder x --note "a || b"', "", "")  # quoted: one command
    assert _or_else("louder x # a || b") == ("louder x # a || b", "", "")
    assert for_test("louder run --out o --agents 2", "--agents 3") == f"louder run --out o --agents 2 --model {FAKE} --agents 3"
    assert for_test("louder run --out o --dry-run -m openai:gpt-4o", "--agents 3") == "louder run --out o --dry-run -m openai:gpt-4o"
    assert fewer_draws("louder analyze o") == f"louder analyze o -B {DOCS_BOOTSTRAP}"
    assert fewer_draws("louder report o -B 200") == "louder report o -B 200"
    # every kind of claim that does not hold is named
    page.write_text(f"""
<!-- docs-test: expect "status counts: {{'valid': 7" -->
<!-- docs-test: expect not "wrote" -->
<!-- docs-test: expect /model_calls: 99\\b/ -->
<!-- docs-test: expect runs/c/decisions.parquet.csv status=valid -->
```console
$ louder run --out runs/c --agents 2 {one}
wrote runs/c/: personas.parquet
```
""")
    failures = run_page(page, tmp_path / "work2")
    assert len(failures) == 5, failures
    assert all("page.md:" in f for f in failures)
    assert any("shown output" in f and "personas.parquet" in f for f in failures)
    assert any("'valid': 7" in f for f in failures) and any("unexpected 'wrote'" in f for f in failures)
    assert any("model_calls: 99" in f for f in failures) and any("no command wrote" in f for f in failures)


def test_every_skip_says_why_and_every_block_runs():
    """No block of a tested page is passed over silently: a skipped one gives its reason, and every fenced block
    is commands (console, bash), a file the page writes, or text that is no command (yaml, python, toml …
    shown beside a run that uses it)."""
    problems = []
    for page in [README, *_tested_pages()]:
        for b in blocks(page.read_text("utf-8")):
            if b.mark == "skip" and len(b.arg.strip("() ")) < 5:
                problems.append(f"{page.name}:{b.line}: a skip mark without its reason: `docs-test: skip (why)`")
            if b.mark != "skip" and b.lang in ("console", "bash") and not commands(b):
                problems.append(f"{page.name}:{b.line}: a {b.lang} block without a command")
            if b.lang in ("sh", "shell", "shell-session", "zsh", "") and b.mark != "write":
                problems.append(f"{page.name}:{b.line}: a ```{b.lang or '(no language)'} block: write ```console "
                                "(with `$ `) or ```bash so that the test runs it")
            for m in b.marks:
                if not re.match(r"(skip|write|expect|with)\b", m):
                    problems.append(f"{page.name}:{b.line}: unknown docs-test mark {m!r}")
    assert not problems, "\n".join(problems)


# --- every command of the getting-started, tutorial and how-to pages ----------------------------------

def _page_params():
    for p in [README, *_tested_pages()]:
        rel = str(p.relative_to(DOCS)) if p.is_relative_to(DOCS) else p.name
        marks = [pytest.mark.slow] if rel in SLOW_PAGES else []
        if rel in FILLER_PAGES:
            marks.append(pytest.mark.filterwarnings(r"ignore:fake.seed=1 writes a filler sentence:UserWarning"))
        yield pytest.param(p, id=rel, marks=marks)


@pytest.mark.parametrize("page", list(_page_params()))
def test_page_commands_run(page, tmp_path):
    assert run_page(page, tmp_path) == []


def test_reading_the_report_follows_the_report(tmp_path):
    """docs/getting-started/reading-the-report.md walks through the report's sections in the report's order
    (the measures' positions): its numbered headings are the titles of a report's sections, every section of
    that report has one, and they stand in the same order."""
    from typer.testing import CliRunner

    from louder.cli import app

    runner, run = CliRunner(), tmp_path / "r"
    one = ["--scenario", "emergency_response", "--group", "gender_identity"]
    for args in (["run", "--out", run, "-m", FAKE, "--agents", 4, "-c", "contextualized", "-c", "no_persona", *one],
                 ["probe", "explicit", "--out", run, "-m", FAKE, "--trials", 6, *one],
                 ["probe", "beliefs", "--out", run, "-m", FAKE, "--trials", 4, *one], ["report", run, "-B", 200]):
        r = runner.invoke(app, [str(a) for a in args])
        assert r.exit_code == 0, r.output
    report = [html.unescape(t) for t in re.findall(r"<h2>(.*?)</h2>", (run / "report" / "index.html").read_text("utf-8"))]
    page = re.findall(r"^## \d+\. (.+)$", (DOCS / "getting-started" / "reading-the-report.md").read_text("utf-8"),
                      flags=re.MULTILINE)
    matched = [next((i for i, t in enumerate(report) if t == h or t.startswith(h + " (")), None) for h in page]
    assert None not in matched, [h for h, m in zip(page, matched) if m is None]
    assert matched == sorted(matched), "the page's sections stand in another order than the report's"
    assert len(matched) == len(report), f"sections the page does not describe: {sorted(set(report) - {report[i] for i in matched})}"


def test_tutorials_index_lists_every_tutorial():
    """The tutorials' overview lists each tutorial page, and promises none that is not there."""
    text = (DOCS / "tutorials" / "index.md").read_text("utf-8")
    for page in (DOCS / "tutorials").glob("*.md"):
        assert page.name == "index.md" or f"]({page.name})" in text, page.name
    assert "not yet" not in text.lower()


def test_getting_started_page_has_commands():
    """The getting-started page is the one the issue names: it must keep commands to check."""
    cmds = [c for b in blocks((DOCS / "getting-started" / "index.md").read_text()) if b.mark != "skip"
            for c in commands(b)]
    assert len(cmds) >= 8 and any(c.startswith("louder report") for c in cmds)


# --- the site ----------------------------------------------------------------------------------------

def test_site_builds_strictly(tmp_path, monkeypatch, caplog):
    """``mkdocs build --strict``: every page in the nav exists, every link and anchor resolves, the
    generated pages and the API reference render without a warning. Built in this process, as
    ``mkdocs build`` does (load the config strictly, the plugins' startup, build, shutdown): the generated
    pages' hooks import louder, which this process has imported already."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort

    site = tmp_path / "site"
    monkeypatch.chdir(tmp_path)  # mkdocs-jupyter's cache folder is relative to the working folder
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    start = time.perf_counter()
    config = load_config(str(ROOT / "mkdocs.yml"), strict=True, site_dir=str(site))
    config.plugins.on_startup(command="build", dirty=False)
    try:
        build(config)  # strict: a warning logged during the build aborts it
    except Abort as e:
        pytest.fail(f"{e}\n" + "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING))
    finally:
        config.plugins.on_shutdown()
    print(f"site built in {time.perf_counter() - start:.1f} s")
    cli = (site / "reference" / "cli" / "index.html").read_text("utf-8")
    for command in ("louder run", "louder batch export", "louder probe weat", "--retry-errors", "--twin-group"):
        assert command in cli
    config = (site / "reference" / "config" / "index.html").read_text("utf-8")
    for key in ("decision_mode", "probe_trials", "twin_groups", "json_mode", "self_weight", "mean_degree"):
        assert key in config
    assert "louder.run" in (site / "reference" / "api" / "index.html").read_text("utf-8")
    nb = (site / "getting-started" / "first-experiment" / "index.html").read_text("utf-8")
    assert "louder.run" in nb and "explicit" in nb
    # issue 32: the notebook page links its own .ipynb, which the site serves beside it
    assert 'href="first-experiment.ipynb"' in nb
    assert (site / "getting-started" / "first-experiment" / "first-experiment.ipynb").exists()


def test_generated_cli_reference_has_every_command_and_option():
    import typer

    from louder.cli import app

    text = hooks.cli_markdown()

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs is None:
            assert f"`{path}`" in text, path
            for p in cmd.params:
                if type(p).__name__.endswith("Option"):
                    assert max(p.opts, key=len) in text, (path, p.opts)
            return
        for name, sub in subs.items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "louder")


def test_every_config_field_is_documented_with_a_description():
    from louder.config import SECTIONS, ControlConfig, ExperimentConfig, GenerationParams, SequentialConfig
    from louder.llm.spec import ModelConfig
    from louder.networks.graphs import NetworkConfig

    text = hooks.config_markdown()
    for model in (ExperimentConfig, ModelConfig, NetworkConfig, ControlConfig, GenerationParams, SequentialConfig):
        undocumented = [n for n, f in model.model_fields.items() if not (f.description or "").strip()]
        assert not undocumented, f"{model.__name__}: add Field(description=...) to {undocumented}"
    written = {key for keys in SECTIONS.values() for key in keys} | set(ExperimentConfig.model_fields)
    for key in written:
        assert f"| `{key}` |" in text, key
    for section in SECTIONS:
        assert f"## `{section}:`" in text


def test_config_reference_example_is_a_valid_config(tmp_path):
    import yaml

    from louder.config import build_config

    examples = [b.body for b in blocks((DOCS / "reference" / "config.md").read_text()) if b.lang == "yaml"]
    assert examples
    for body in examples:
        build_config(yaml.safe_load(body))


@pytest.mark.parametrize("page", [DOCS / "reference" / "api.md", README], ids=["api.md", "README.md"])
def test_python_examples_run(page, tmp_path, monkeypatch):
    """The Python examples of the API page and the README run (on the fake model), each as a script of its
    own in a fresh namespace, in an empty folder (here, not in a new Python: that added ~3 s of start-up
    and imports to each)."""
    code = [b.body for b in blocks(page.read_text("utf-8")) if b.lang == "python"]
    assert code
    monkeypatch.chdir(tmp_path)
    for i, body in enumerate(code):
        body = re.sub(r'"(embedded|openai:[^"]*)"', f'"{FAKE}"', body)
        exec(compile(body, f"{page.name} (Python example {i + 1})", "exec"), {"__name__": "__main__"})
    assert list(tmp_path.rglob("report/index.html"))


# --- the output tables -------------------------------------------------------------------------------

TABLE_FILE = re.compile(r"^#{2,4} .*`(?P<file>[\w.]+\.(parquet|csv))`")


def documented_tables() -> dict[str, list[str]]:
    """docs/reference/outputs.md: file → the column names (or patterns such as ``attr_<group>``) in
    the first cells of the tables under its heading."""
    out: dict[str, list[str]] = {}
    current = None
    for line in hooks.expand((DOCS / "reference" / "outputs.md").read_text("utf-8")).splitlines():
        if line.startswith("#"):
            m = TABLE_FILE.match(line)
            current = m["file"] if m else None
            if current:
                out[current] = []
        elif current and line.startswith("|") and not re.match(r"^\|\s*-", line):
            first = line.split("|")[1]
            if first.strip() == "column":
                continue
            out[current] += re.findall(r"`([^`]+)`", first)
    return out


def _matches(name: str, documented: str) -> bool:
    if "<" not in documented:
        return name == documented
    pattern = re.escape(documented)
    pattern = re.sub(r"\\<[^>]*\\>|<[^>]*>", ".+", pattern)
    return re.fullmatch(pattern, name) is not None


def extra_runs(base: Path) -> list[Path]:
    """The runs docs/reference/outputs.md needs beyond the golden reference runs (tests/golden.py, whose
    folders tests/test_golden.py checks the page against with these): several models in one folder, grounded
    agents, a convention run and a network of mixed models, each analysed."""
    from typer.testing import CliRunner

    from louder.cli import app

    runner = CliRunner()

    def louder(*args):
        r = runner.invoke(app, [str(a) for a in args])
        assert r.exit_code == 0, (args, r.output[-2000:], r.exception)

    one = ["--scenario", "emergency_response", "--group", "gender_identity"]
    models = base / "models"  # issue 42: several models in one folder, in an order (models.csv, model_pairs.csv, …)
    three = ["-m", FAKE, "-m", "fake:seed=2", "-m", "fake:seed=3"]
    louder("run", "--out", models, *three, "--agents", 4, *one)
    louder("probe", "explicit", "--out", models, *three, "--trials", 6, *one)
    louder("analyze", models, "-B", 200, *[x for m in three[1::2] for x in ("--set", f"models.order={m}")])
    grounded = base / "grounded"  # issue 44: grounded agents (grounding, retest, unlabelled.parquet, fidelity.csv)
    for name, n in (("humans-grounded.csv", 12), ("profiles-grounded.csv", 20)):  # the examples, cut short
        df = pd.read_csv(ROOT / "examples" / name, comment="#", dtype=str, keep_default_na=False)
        df.groupby("gender_identity").head(n).to_csv(base / name, index=False)
    louder("run", "--out", grounded, "-m", "fake:seed=1,pick=Evacuate,shift=evacuated:0.45", "--agents", 2,
           "--humans", base / "humans-grounded.csv", "--ground", "last_flood",
           "--unlabelled", base / "profiles-grounded.csv", *one)
    conv, mixnet = base / "conv", base / "mixnet"  # issue 48: a convention run (every table) and a mixed network
    (base / "conv.yaml").write_text(
        'models: {"fake:seed=1,follow=0.9": 0.5, "fake:seed=2,follow=0.9,bias=Q:0.8": 0.5}\n'
        "convention: {agents: 6, populations: 4, steps: 6, memory: 3, group: gender_identity, "
        "committed: {fraction: [0, 0.4], start: start}}\n")
    louder("run", base / "conv.yaml", "--out", conv)
    (base / "mixnet.yaml").write_text(
        'models: {"fake:seed=1": 0.5, "fake:seed=2,bias=female:0.9": 0.5}\n'
        "simulation: {scenarios: [emergency_response], groups: [gender_identity], agents: 2}\n"
        "network: {generator: watts_strogatz, params: {k: 2, p: 0.1}, seed: 0}\ninfluence: {rounds: 1}\n")
    louder("run", base / "mixnet.yaml", "--out", mixnet)
    for run in (grounded, conv, mixnet):
        louder("analyze", run, "-B", 200)
    return [models, grounded, conv, mixnet]


def columns_of(path: Path) -> list[str]:
    """A written file's columns: a Parquet file's, a CSV's header."""
    df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path, nrows=0)
    return [str(c) for c in df.columns]


def undocumented(found: dict[str, list[tuple[str, list[str]]]]) -> list[str]:
    """How the files runs wrote ({file: [(run, columns)]}) and docs/reference/outputs.md differ: a file
    written and not documented or documented and never written, a column written and not documented or
    documented and written by no run."""
    documented = documented_tables()
    problems = [f"{name}: written but not documented" for name in sorted(set(found) - set(documented))]
    problems += [f"{name}: documented but never written" for name in sorted(set(documented) - set(found))]
    for name, runs in found.items():
        docs = documented.get(name, [])
        seen = set()
        for run, columns in runs:
            for c in columns:
                hits = [d for d in docs if _matches(c, d)]
                if not hits:
                    problems.append(f"{name} ({run} run): column {c!r} is not documented")
                seen.update(hits)
        problems += [f"{name}: documented column {d!r} is written by no run" for d in docs if d not in seen]
    return problems


def test_code_column_lists_are_documented():
    """The column contracts of louder/types.py are on the page too (a quick check that needs no run)."""
    from louder import types

    documented = documented_tables()
    for file, columns in (("decisions.parquet", types.DECISION_COLUMNS), ("personas.parquet", types.PERSONA_COLUMNS),
                          ("probes.parquet", types.PROBE_COLUMNS), ("twins.parquet", types.TWIN_COLUMNS)):
        missing = [c for c in columns if not any(_matches(c, d) for d in documented[file])]
        assert not missing, (file, missing)


# --- notebooks ---------------------------------------------------------------------------------------

NOTEBOOKS = sorted(DOCS.rglob("*.ipynb")) + sorted((ROOT / "examples").glob("*.ipynb"))
GETTING_STARTED_NOTEBOOK = DOCS / "getting-started" / "first-experiment.ipynb"
# Notebooks a test of their own runs top to bottom, with more of their cells checked: running them on the fake
# model here too would check nothing more, at a notebook's cost (a kernel, a run, a report).
RUN_ELSEWHERE = {GETTING_STARTED_NOTEBOOK: ("tests/test_docs.py", "test_getting_started_notebook_on_a_served_model"),
                 ROOT / "examples" / "quickstart.ipynb": ("tests/test_kinds.py", "test_quickstart_notebook_runs")}


def test_every_notebook_runs_on_the_fake_model(tmp_path):
    """Every notebook the docs and the examples ship runs, every cell without an error: here on the fake
    model, or in the test named for it in ``RUN_ELSEWHERE`` (which must exist)."""
    for path, (file, test) in RUN_ELSEWHERE.items():
        assert path in NOTEBOOKS, f"{path} is not shipped any more: drop it from RUN_ELSEWHERE"
        assert f"def {test}" in (ROOT / file).read_text("utf-8"), f"{path}: {file} has no test {test}…"
    for path in (p for p in NOTEBOOKS if p not in RUN_ELSEWHERE):
        out = tmp_path / path.stem
        out.mkdir()
        nb = notebooks.execute(path, out, {"model": FAKE, "agents": 3, "probe_trials": 3})
        errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
        assert not errors, path
        assert (out / "runs").exists(), path


def test_getting_started_notebook_on_a_served_model_that_misbehaves(fake_server, tmp_path):
    """The notebook at tiny N on a model served over HTTP (the openai client), which answers some decisions
    off the list and refuses some: every cell runs, every answer is accounted for. (The notebook names the
    embedded model; that model's own end-to-end run is tests/test_e2e_embedded.py's.)"""
    import nbformat

    path = GETTING_STARTED_NOTEBOOK
    shipped = nbformat.read(str(path), as_version=4)
    assert 'model = "embedded"' in shipped.cells[notebooks.parameters_cell(shipped)].source
    fake_server.behaviour = fake_openai.misbehaving()
    spec = f"openai:fake@{fake_server.url}"
    nb = notebooks.execute(path, tmp_path, {"model": spec, "agents": 2, "probe_trials": 3})
    decisions = pd.read_parquet(next((tmp_path / "runs").rglob("decisions.parquet")))
    assert len(decisions) == 6 and set(decisions["model"]) == {spec}
    assert decisions["status"].isin(["valid", "invalid", "refused", "error"]).all()
    assert {"invalid", "refused"} <= set(decisions["status"]), decisions["status"].tolist()
    assert not [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]


def test_notebooks_keep_their_outputs_and_a_parameters_cell():
    """The site renders stored outputs (it never executes a notebook), and tests override parameters."""
    import nbformat

    for path in NOTEBOOKS:
        nb = nbformat.read(str(path), as_version=4)
        notebooks.parameters_cell(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(c.outputs for c in code[1:]), f"{path}: run `python docs/tools/notebooks.py {path}`"


# --- the README --------------------------------------------------------------------------------------

README = ROOT / "README.md"


def test_readme_is_a_short_landing_page_with_the_quick_start():
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= 150
    assert ("make demo   # sets up .venv (builds llama-cpp-python, ~4 min the first time) and runs the demo on the "
            "embedded model") in text
    assert "make test   # sets up .venv and runs the whole test suite (the command CI runs)" in text


@pytest.mark.parametrize("page", [README, *sorted(DOCS.rglob("*.md"))], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    """Links between Markdown files (the README's into docs/, and the site's, which mkdocs checks too)."""
    text = re.sub(r"```.*?```", "", page.read_text("utf-8"), flags=re.DOTALL)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0]
        if not (page.parent / path).exists():
            broken.append(target)
    assert not broken, broken
