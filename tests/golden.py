"""The golden reference runs (issue 41): every kind of run on the fake model, analysed with every
analysis setting, and what the analysis wrote — each CSV, the console of ``louder analyze`` and each
section of the report — as a snapshot that a refactor of the analysis must reproduce.

``tests/test_golden.py`` builds the runs afresh and compares them with ``tests/data/golden.json.gz``;
``python tests/golden.py --write`` writes that file (only when a change of the tables is intended: say
which rows changed, and why, in the commit).

The snapshot is normalised for what changes from one build to the next and is not the analysis: the
run folder's path, the checkout's path in a warning, the report's date and the run's (the design card),
timings, the manifests' and the environment's sections, the embedded figures (SVG data URIs: a figure is
drawn from the tables compared here; its bytes depend on the renderer — tests/test_golden.py checks what
each figure draws instead).
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden.json.gz"
FAKE = "fake:seed=1"
B = "200"
ONE = ["--scenario", "emergency_response", "--group", "gender_identity"]


def _louder(*args) -> str:
    from typer.testing import CliRunner

    from louder.cli import app

    r = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "1000"})
    assert r.exit_code == 0, (args, r.output[-3000:], r.exception)
    return r.output


def _observed(base: Path) -> Path:
    import yaml

    path = base / "observed.yaml"
    rates = [("gender_identity", a, r) for a, r in (("Female", 0.7), ("Male", 0.5), ("Non-binary", 0.6))]
    rates += [("political_ideology", a, r) for a, r in (("Very Liberal", 0.75), ("Liberal", 0.7), ("Moderate", 0.6),
                                                         ("Conservative", 0.5), ("Very Conservative", 0.45))]
    path.write_text(yaml.safe_dump([dict(scenario=s, group=g, attribute=a, rate=r, n=400,
                                         source="invented for this test", year=2026, measure="share who evacuated")
                                    for s in ("emergency_response", "emergency_response_policy")
                                    for g, a, r in rates]))
    return path


# (run, the commands that make it, the analyses: (label, analyze arguments)); a run's later analyses are
# compared too, so that each setting's tables are kept
def runs(base: Path) -> list[tuple[str, list[list], list[tuple[str, list]]]]:
    observed = _observed(base)
    stereotypes = ["--stereotype", "racism", "--stereotype", "career", "--stereotype", "age"]
    (base / "net.yaml").write_text(
        "simulation: {scenarios: [emergency_response], groups: [gender_identity], agents: 6, decision_mode: score, "
        "score_pick: draw}\n"
        "network: {generator: watts_strogatz, params: {k: 2, p: 0.1}, seed: 0}\ninfluence: {rounds: 2}\n")
    (base / "arch.yaml").write_text(
        "population: {file: us_gender_ideology, mode: archetype, replicates: 2, buckets: 2}\n"
        "network: {generator: watts_strogatz, params: {k: 4, p: 0.1}, seed: 0}\ninfluence: {rounds: 1}\n"
        "simulation: {agents: 200, scenarios: [emergency_response], groups: [political_ideology], "
        "decision_mode: score}\n")
    (base / "score.yaml").write_text(
        "simulation: {scenarios: [emergency_response, career_path_selection], groups: [gender_identity], "
        "agents: 10, decision_mode: score}\n")
    dims = ["--scenario", "emergency_response", "--group", "race_black_white", "--wording", "as_written", "--wording",
            "plain", "--choice-order", "balanced", "--signal", "stated", "--signal", "names", "--reasoning", "off",
            "--reasoning", "default"]
    biased = "fake:seed=1,bias=Female:0.8"
    return [
        ("plain", [["run", "-m", biased, "--agents", 8, "-c", "contextualized", "-c", "no_persona", *ONE],
                   ["probe", "explicit", "-m", biased, "--trials", 6, *ONE],
                   ["probe", "beliefs", "-m", biased, "--trials", 4, *ONE],
                   ["probe", "association", "-m", FAKE, "--trials", 4, *stereotypes],
                   ["probe", "decision", "-m", FAKE, "--trials", 4, "--variation", "chained", *stereotypes],
                   ["weat", "--permutations", 200, *stereotypes]],
         [("default", []), ("observed", ["--observed", observed])]),
        ("score", [["run", base / "score.yaml", "-m", "fake:seed=2,bias=Female:0.9,noise=0.3"]],
         [("default", []), ("slopes", ["--random-slopes", "--reference", "gender_identity=Male"])]),
        ("net", [["run", base / "net.yaml", "-m", biased]], [("default", [])]),
        ("pop", [["run", "--population", "us_gender_ideology", "-m", "fake:seed=1,bias=liberal:0.9",
                  "--scenario", "emergency_response_policy", "--variant", "base", "--variant", "mandatory", "--twins",
                  "--agents", 60]],
         [("default", []), ("settings", ["--adjust", "parity", "--control", "political_ideology"]),
          ("observed", ["--adjust", "observed", "--observed", observed])]),
        ("arch", [["run", base / "arch.yaml", "-m", FAKE]], [("default", [])]),
        ("robust", [["run", "-m", biased, "--agents", 6, "--choice-order", "balanced", "--wording", "all", *ONE]],
         [("default", [])]),
        ("levels", [["run", "-m", "fake:seed=1,think=field,bias=Female:0.8,unless=illegal", "--agents", 6,
                     "--reasoning", "off", "--reasoning", "high", "--intervention", "none", "--intervention",
                     "illegal", "--wording", "as_written", "--wording", "plain", "--choice-order", "balanced", *ONE],
                    ["probe", "explicit", "-m", FAKE, "--trials", 4, "--intervention", "none", "--intervention",
                     "illegal", *ONE]],
         [("default", [])]),
        ("seq", [["run", "-m", biased, "--until", "decided", "--budget", 40, "--wave", 20, *ONE]], [("default", [])]),
        ("seqpop", [["run", "-m", FAKE, "--population", "us_gender_ideology", "--scenario", "emergency_response",
                     "--until", "decided", "--budget", 40, "--wave", 20]], [("default", [])]),
        ("netdims", [["run", base / "net.yaml", "-m", FAKE, "--agents", 2, "--rounds", 1, *dims]], [("default", [])]),
        ("seqdims", [["run", "-m", FAKE, "--until", "decided", "--budget", 4, "--wave", 2, *dims]], [("default", [])]),
        ("twindims", [["run", "-m", "fake:seed=1,bias=Female:0.8", "--population", "us_gender_ideology",
                       "--scenario", "emergency_response", "--twins", "--twin-group", "gender_identity", "--agents",
                       12, "--wording", "as_written", "--wording", "plain", "--reasoning", "off", "--reasoning",
                       "default", "--intervention", "none", "--intervention", "illegal"]], [("default", [])]),
        ("humans", [["run", "-m", biased, "--agents", 4, "--humans", ROOT / "examples" / "humans-synthetic.csv",
                     *ONE]], [("default", [])]),
    ]


class _Embeddings:
    """A fake /v1/embeddings server on 127.0.0.1 (test_weat's), for ``louder probe weat``."""

    def __enter__(self):
        from http.server import ThreadingHTTPServer

        sys.path.insert(0, str(ROOT / "tests"))
        from fake_openai import serve_in_background
        from test_weat import _Embeddings

        class Handler(_Embeddings):
            seen: list = []

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        serve_in_background(self.server)
        return f"openai:text-embedding-3-small@http://127.0.0.1:{self.server.server_port}/v1"

    def __exit__(self, *exc):
        self.server.shutdown()


def build(base: Path, only: list[str] | None = None) -> dict[str, dict]:
    """Make every reference run under ``base`` (those of ``only``), analyse it with each of its settings
    and snapshot each analysis: {run/label: {"csv": {name: text}, "console": text, "report": {h2: html}}}.

    The reports' figures are drawn on matplotlib's null renderer (``draw_without_rendering``), so a figure
    that fails to draw fails the build, but neither laid out nor written as SVG: the snapshot replaces every
    picture by ``IMG`` and keeps only its size, which is the figure's (``html._size`` reads it from the
    SVG's header, written here alone). Writing the pictures was 40 % of the build's time, and constrained
    layout two thirds of what was left; tests/test_report_layout.py and the other report tests lay out
    and write real ones."""
    from louder.analysis.report import html

    def drawn(fig) -> bytes:
        fig.set_layout_engine("none")
        fig.draw_without_rendering()
        width, height = fig.get_size_inches() * 72
        return f'<svg width="{width}pt" height="{height}pt"></svg>'.encode()

    real = html.svg
    html.svg = drawn
    try:
        return _build(base, only)
    finally:
        html.svg = real


def _build(base: Path, only: list[str] | None) -> dict[str, dict]:
    import shutil

    base.mkdir(parents=True, exist_ok=True)
    out: dict[str, dict] = {}
    for name, commands, analyses in runs(base):
        if only and name not in only:
            continue
        run = base / name
        for cmd in commands:
            if cmd[0] == "weat":
                with _Embeddings() as spec:
                    _louder("probe", "weat", "--out", run, "--embeddings", spec, *cmd[1:])
            elif cmd[0] == "run":
                _louder("run", *cmd[1:2], "--out", run, *cmd[2:]) if str(cmd[1]).endswith(".yaml") else \
                    _louder("run", "--out", run, *cmd[1:])
            else:
                _louder(*cmd[:2], "--out", run, *cmd[2:])
        for label, args in analyses:
            console = _louder("analyze", run, "-B", B, *args)
            _louder("report", run)
            out[f"{name}/{label}"] = snapshot(run, console)
            for f in run.glob("*.csv"):  # the next setting is analysed afresh
                if f.name not in ("sequential.csv", "sequential_waves.csv"):
                    f.unlink()
            (run / "analysis.json").unlink()
            shutil.rmtree(run / "report")
    return out


def _normal(text: str, run: Path | None = None) -> str:
    if run is not None:
        text = text.replace(str(run.resolve()), "RUN").replace(str(run), "RUN")
    text = text.replace(str(ROOT), "ROOT")  # the checkout's own path (examples/…): CI clones elsewhere
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
    text = re.sub(r"\(\d+\.\d s\)|in \d+\.\d s", "(S s)", text)
    # a warning names the file of louder that raised it: wherever this checkout is
    text = re.sub(r"\S*/louder/(?=[\w/]+\.py:\d+)", "LOUDER/", text)
    return text


def report_sections(html: str) -> dict[str, str]:
    """The report by its sections (``<h2>`` titles), without the dates (the report's, the run's in the design
    card), the environment and the manifests, each figure (an SVG data URI) replaced by ``IMG``."""
    html = re.sub(r"data:image/[a-z+]+;base64,[A-Za-z0-9+/=]+", "IMG", html)
    html = re.sub(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "Generated DATE", html)
    html = re.sub(r"<dt>Date</dt><dd>[^<]*</dd>", "<dt>Date</dt><dd>DATE</dd>", html)  # the design card's
    parts = re.split(r"(?=<h2[ >])", html)
    out = {"head": parts[0]}
    for p in parts[1:]:
        title = re.match(r"<h2[^>]*>(.*?)</h2>", p, re.S)
        key = re.sub(r"<[^>]+>", "", title.group(1)) if title else p[:40]
        if key in ("Environment", "Manifests"):
            continue
        while key in out:
            key += "'"
        out[key] = p
    return out


def snapshot(run: Path, console: str) -> dict:
    csv = {f.name: _normal(f.read_text("utf-8")) for f in sorted(run.glob("*.csv"))}
    html = (run / "report" / "index.html").read_text("utf-8")
    console = _normal(console, run)
    # the closing line (the tables written, the folder) wraps where the folder's path ends: one line
    # (the tables in name order: the analysis' order of its measures is not what is compared)
    head, sep, tail = console.rpartition("\nwrote ")
    if sep:
        names, _, where = re.sub(r"\s+", " ", tail).strip().partition(" in ")
        where = re.sub(r"\(\d+\.\d s\)", "(S s)", where)  # (a time wrapped over two lines is one once joined)
        # a Python warning printed after it is the warnings filter's (pytest captures them), not the analysis'
        where = where.split(" (S s)")[0] + " (S s)" if " (S s)" in where else where
        console = head + sep + ", ".join(sorted(names.split(", "))) + " in " + where + "\n"
    return {"csv": csv, "console": console,
            "report": {k: _normal(v, run) for k, v in report_sections(html).items()}}


def write(data: dict, path: Path = GOLDEN) -> None:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as f:
        f.write(json.dumps(data, indent=0, sort_keys=True).encode())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())


def read(path: Path = GOLDEN) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


# --- what "unchanged" means ------------------------------------------------------------------------
#
# A value is compared exactly where it is exact: strings, booleans and whole numbers as written; every
# other number to 1e-9 relative (``EXACT``) — a closed-form statistic is the same formula on the same
# data, but the last bits of a float sum depend on the order numpy adds in, which its versions change.
# A value that an iterative optimiser found is known only as well as the optimiser's stopping rule and
# starting point make it, and those change with statsmodels/scipy/numpy releases: it is compared
# within the tolerance stated for its column below, |got − want| ≤ atol + rtol · |want|, each with why.
# An entry applies to the rows whose ``where`` column holds one of the listed values (all rows: None).
EXACT = 1e-9


@dataclass(frozen=True)
class Tolerance:
    table: str
    columns: tuple[str, ...]
    rtol: float
    atol: float
    why: str
    where: tuple[str, tuple[str, ...]] | None = None


FIT_COLUMNS = ("coef", "ci_low", "ci_high")
P_COLUMNS = ("p_value", "p_holm")
TOLERANCES = (
    # Mixed models (statsmodels MixedLM, REML): the variance components come from a quasi-Newton or
    # Powell search that stops at a gradient tolerance; β is GLS given them and moves little, but every
    # standard error — the interval and the p-value — moves with the variance components. 1e-3 of an
    # interval's end is far inside what a wrong fit moves (issue 47: an unconverged random-slopes fit
    # moved it 2 %, 0.04 on the logit scale).
    Tolerance("discrimination.csv", ("coef",), 1e-4, 1e-6, "REML optimiser: β given the variance components",
              where=("method", ("mixedlm", "mixedlm_slopes"))),
    Tolerance("discrimination.csv", ("ci_low", "ci_high"), 1e-3, 1e-4, "REML optimiser: se from the variance "
              "components", where=("method", ("mixedlm", "mixedlm_slopes"))),
    # p = 2 Φ(−|β/se|) amplifies se's wobble in the far tail (z = 19: 0.1 % of se moves p by 40 %), where
    # it means nothing: absolute 1e-4 there, and 1 % relative where p is near any level one decides at.
    Tolerance("discrimination.csv", P_COLUMNS, 1e-2, 1e-4, "REML optimiser: p from se",
              where=("method", ("mixedlm", "mixedlm_slopes"))),
    # Logistic regressions fitted by IRLS / Newton (statsmodels GLM Binomial, Logit): they stop when the
    # deviance (GLM) or the parameters (Logit) change by less than 1e-8 relative, so two builds agree to
    # about that, not bit for bit; atol for a coefficient that is 0 up to rounding (−2e-16).
    Tolerance("discrimination.csv", FIT_COLUMNS + P_COLUMNS, 1e-6, 1e-9, "IRLS logistic regression",
              where=("method", ("logit",))),
    Tolerance("population_regression.csv", ("odds_ratio", "lo", "hi", "p_value"), 1e-6, 1e-9,
              "IRLS logistic regression (weighted by pattern counts)"),
    Tolerance("association_decision_link.csv", FIT_COLUMNS + ("p_value", "intercept"), 1e-6, 1e-9,
              "Newton logistic regression (statsmodels Logit)"),
    # Goodness-of-fit p-values of an additive logistic model fitted by IRLS (robustness.heterogeneity_p).
    Tolerance("robustness.csv", ("p_heterogeneity", "p_heterogeneity_holm"), 1e-6, 1e-12,
              "Pearson X² of an IRLS logistic fit"),
    Tolerance("reasoning.csv", ("p_interaction",), 1e-6, 1e-12, "Pearson X² of an IRLS logistic fit"),
)


def _tolerances(table: str, frame) -> dict[str, tuple]:
    """{column: (rtol per row, atol per row, why per row)} for ``table``'s rows in ``frame`` (the wanted CSV)."""
    import numpy as np

    out: dict[str, tuple] = {}
    for t in TOLERANCES:
        if t.table != table:
            continue
        rows = np.ones(len(frame), bool) if t.where is None else \
            frame[t.where[0]].astype(str).isin(t.where[1]).to_numpy() if t.where[0] in frame else np.zeros(len(frame), bool)
        for c in t.columns:
            r, a, why = out.get(c, (np.full(len(frame), EXACT), np.full(len(frame), EXACT), np.full(len(frame), "")))
            out[c] = (np.where(rows, t.rtol, r), np.where(rows, t.atol, a), np.where(rows, t.why, why))
    return out


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def csv_differences(want: str, got: str, table: str = "") -> list[str]:
    """How two CSV texts of ``table`` differ: columns, rows, and cells (``EXACT``, or the column's
    ``TOLERANCES``)."""
    import numpy as np
    import pandas as pd

    a, b = pd.read_csv(io.StringIO(want)), pd.read_csv(io.StringIO(got))
    if list(a.columns) != list(b.columns):
        return [f"columns: {list(a.columns)} → {list(b.columns)}"]
    if len(a) != len(b):
        return [f"rows: {len(a)} → {len(b)}"]
    tolerance = _tolerances(table, a)
    out = []
    for c in a.columns:
        x, y = a[c], b[c]
        numbers = all(pd.api.types.is_numeric_dtype(v) and not pd.api.types.is_bool_dtype(v) for v in (x, y))
        if numbers and not all(pd.api.types.is_integer_dtype(v) for v in (x, y)):
            rtol, atol, _ = tolerance.get(c, (EXACT, EXACT, None))
            x_, y_ = x.to_numpy(float), y.to_numpy(float)
            with np.errstate(invalid="ignore"):
                same = (np.abs(y_ - x_) <= atol + rtol * np.abs(x_)) | (np.isnan(x_) & np.isnan(y_)) | (x_ == y_)
        else:  # strings, booleans and whole numbers: as written
            same = ((x.astype(str) == y.astype(str)) | (x.isna() & y.isna())).to_numpy()
        why = tolerance[c][2] if c in tolerance else [""] * len(a)
        for i in np.flatnonzero(~same)[:3]:
            out.append(f"row {i} column {c}: {_plain(x.iloc[i])!r} → {_plain(y.iloc[i])!r}"
                       + (f" (beyond its tolerance: {why[i]})" if why[i] else ""))
    return out


def tolerated_values(want: dict[str, str], got: dict[str, str]) -> list[tuple[float, float]]:
    """The (wanted, got) pairs of the cells that differ within a ``TOLERANCES`` entry: the values a
    console or report may print differently (``text_matches``)."""
    import numpy as np
    import pandas as pd

    pairs = []
    for table in sorted(set(want) & set(got)):
        a, b = pd.read_csv(io.StringIO(want[table])), pd.read_csv(io.StringIO(got[table]))
        if list(a.columns) != list(b.columns) or len(a) != len(b):
            continue
        for c, (rtol, _, _) in _tolerances(table, a).items():
            if c not in a or not pd.api.types.is_numeric_dtype(b[c]):
                continue
            x, y = a[c].to_numpy(float), b[c].to_numpy(float)
            moved = (x != y) & ~(np.isnan(x) & np.isnan(y)) & (rtol > EXACT)
            pairs += [(float(x[i]), float(y[i])) for i in np.flatnonzero(moved)]
    return pairs


NUMBER = re.compile(r"-?\d+(?:\.(\d+))?(?:e([+-]?\d+))?")


def _printed(value: float, token: str) -> bool:
    """Whether ``token`` (a number as printed) is ``value`` printed at the token's precision."""
    m = NUMBER.fullmatch(token)
    digits = len(m.group(1) or "")
    for text in (f"{value:.{digits}e}" if m.group(2) is not None else f"{value:.{digits}f}",
                 f"{abs(value):.{digits}f}"):
        if text == token:
            return True
    return False


def text_matches(want: str, got: str, tolerated: list[tuple[float, float]]) -> bool:
    """Whether ``got`` is ``want`` but for numbers that print a tolerated cell (``tolerated_values``):
    each number that differs must be one (wanted, got) pair of values, each printed at that place's
    precision — the text, and every other number, as written."""
    if want == got:
        return True
    if NUMBER.sub("#", want) != NUMBER.sub("#", got):
        return False
    pairs = zip((m.group(0) for m in NUMBER.finditer(want)), (m.group(0) for m in NUMBER.finditer(got)))
    return all(x == y or any(_printed(w, x) and _printed(g, y) for w, g in tolerated) for x, y in pairs)


if __name__ == "__main__":
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help="write tests/data/golden.json.gz")
    ap.add_argument("--keep", type=Path, help="build the runs here (default: a temporary folder)")
    ap.add_argument("only", nargs="*")
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = build(ns.keep or Path(tmp), ns.only or None)
    if ns.write:
        write(data)
        print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size} bytes, {len(data)} analyses)")
    else:
        want = read()
        for k, v in data.items():
            for name in sorted(set(v["csv"]) | set(want.get(k, {}).get("csv", {}))):
                w, g = want.get(k, {}).get("csv", {}).get(name), v["csv"].get(name)
                if w is None or g is None:
                    print(f"{k} {name}: {'new' if w is None else 'gone'}")
                elif w != g:
                    for line in csv_differences(w, g, name):
                        print(f"{k} {name}: {line}")
