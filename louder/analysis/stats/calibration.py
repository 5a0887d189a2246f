"""Calibrated agents (issue 33): logit offsets that calibrate a run's agents to parity or to observed
rates (``calibration_offsets``), and ``louder calibrate RUN --to parity | observed``, which fits them on a
finished run and writes them as ``calibration.yaml`` for ``louder run --calibration FILE``
(``louder.calibration`` applies them to the agents).

The offsets are fitted per model × condition × scenario × group × attribute, on the decisions every
per-case table reads (``calibration_rows``): round 0 of a network run, the decisions under ``none``,
the reference wording and reasoning level, the stated signal, every policy variant (a population run:
every group of the population at once).

**Calibration offsets** (``calibration_offsets``, ``apply_offsets``). Agent i of attribute a has the
logit ℓ_i = logit p_i of the target choice. An offset δ_a shifts it: p'_i = expit(ℓ_i + δ_a). The
offsets solve, for every attribute,

    Σ_{i ∈ a} w_i expit(ℓ_i + δ_a) / Σ_{i ∈ a} w_i = t_a

with t_a = the pooled mean p̄ = Σ w p / Σ w of the case (``to="parity"``: afterwards every attribute's
mean adjusted probability is p̄, so their DPD is 0 up to the solver's 1e-10, and the overall rate
stays p̄) or the observed rate of a (``to="observed"``). Each equation is monotone in δ_a: one root.
(Shifting each attribute's mean *logit* to the pooled mean logit would leave a DPD of a few points
wherever the attributes' spreads differ — Jensen — so the offsets solve the equation itself.)
With several groups at once (a population run) the offsets add over groups, ℓ_i + Σ_g δ_{g, a_g(i)},
and are solved by raking: Newton steps on each group's equations in turn, every group after the first
then centred (W-weighted mean offset 0, the first group taking the constant: the offsets are identified
only up to it), until no offset moves by 1e-10 (parity targets are always consistent; observed targets
of different groups may not be, and the residual is reported: the last group's targets hold).

Sample mode stores no probabilities, only decisions. There ℓ_i is the logit of the agent's cell
rate (cell: its attribute, or its attributes in every group; ½-smoothed: (x + ½)/(n + 1)), so the
offsets move each attribute's *rate* exactly — δ_a = logit t_a − logit r̃_a for one group — and that
is all they can do: applied to an agent whose own probability differs from its cell's rate, the
attribute's mean moves by a different amount (by how much depends on the spread of the agents'
probabilities, which sampled decisions do not show). They calibrate rates, not individual agents;
run in score mode to calibrate agents.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy.special import expit, logit

from louder.analysis.engine import select
from louder.analysis.engine.declarations import Input
from louder.analysis.stats.keys import is_valid, value_column
from louder.calibration import P_CLIP, apply_offsets, calibrated_probability  # noqa: F401  (the agents apply them too)
from louder.errors import LouderError, LouderWarning

NAN = float("nan")
OFFSET_COLUMNS = ["group", "attribute", "source", "to", "n", "rate", "target", "offset", "se", "rate_adjusted"]

BY = ("model", "condition", "scenario")
HEADER = """\
# Calibration offsets written by `louder calibrate` (docs/how-to/test-a-mitigation.md#calibrate-the-agents).
# Apply them with `louder run --calibration FILE` (score mode): each agent's target-choice probability p
# becomes expit(logit p + offset), the offsets of its attributes added. `se` is each offset's standard
# error: a re-run as large as the run they were fitted on keeps a residual disparity of that order, so
# fit them on a run several times larger than the one you test.
"""


# the per-case selection, but the stated signal alone (not the names signal as its own condition) and every
# variant as written (the offsets of a case apply to each of its variants)
DECISIONS = Input("decisions", reference=("signal",), whole=("variant",))


def calibration_rows(decisions: pd.DataFrame) -> pd.DataFrame:
    """The decisions offsets are fitted on (the module docstring)."""
    return select.rows(decisions, DECISIONS)


def observed_rates(path: str | Path) -> pd.DataFrame:
    """An observed-rates file (docs/voices.md's format) as the table calibration reads: scenario, group,
    attribute, rate."""
    from louder.analysis.stats.voices import load_observed

    return pd.DataFrame([dict(scenario=e.scenario, group=e.group, attribute=e.attribute, rate=e.rate)
                         for e in load_observed(path)])


def member_sums(X: np.ndarray, members: list[np.ndarray]) -> np.ndarray:
    """Σ over the agents of each attribute (columns ``members[a]``), per row: (R × n) → (R × k)."""
    return np.column_stack([X[:, m].sum(axis=1) for m in members])


def attribute_members(c: np.ndarray, k: int) -> list[np.ndarray]:
    """The agents (columns) of each of ``k`` attributes, from each agent's attribute index ``c``: what
    ``member_sums`` sums over."""
    return [np.flatnonzero(c == a) for a in range(k)]


def _solve_group(base: np.ndarray, W: np.ndarray, c: np.ndarray, members: list[np.ndarray], den: np.ndarray,
                 t: np.ndarray, start: np.ndarray, tol: float) -> np.ndarray:
    """δ (R × k) with Σ_{i ∈ a} W expit(base + δ_a) / Σ_{i ∈ a} W = t_a for every row and attribute (``members``:
    each attribute's agents, ``den``: their weights Σ_{i ∈ a} W): each equation is increasing in its own δ_a,
    so safeguarded Newton (a bisection step whenever Newton would leave the bracket [lo, hi] known to hold
    the root) converges for any start."""
    live = den > 0
    lo, hi = np.full(start.shape, -40.0), np.full(start.shape, 40.0)
    delta = np.clip(start, lo, hi)
    for _ in range(200):
        s = expit(base + delta[:, c])
        ws = W * s
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.where(live, member_sums(ws, members) / den - t, 0.0)
            slope = np.where(live, member_sums(ws * (1 - s), members) / den, 0.0)
            lo, hi = np.where(f < 0, delta, lo), np.where(f > 0, delta, hi)
            newton = delta - f / slope
        new = np.where((slope > 0) & (newton > lo) & (newton < hi), newton, (lo + hi) / 2)
        new = np.where(live, new, 0.0)
        done = np.abs(new - delta).max() < tol
        delta = new
        if done:
            break
    return delta


def rake(L: np.ndarray, W: np.ndarray, codes: list[np.ndarray], targets: list[np.ndarray], tol: float = 1e-10,
         max_cycles: int = 500) -> tuple[list[np.ndarray], float]:
    """Offsets δ_g (R × k_g) with Σ_{i: a_g(i) = a} W_ri expit(L_ri + Σ_g δ_{g,r,a_g(i)}) / Σ W_ri = targets_g[r, a]
    for every group g and attribute a, for each of R rows (the data, or bootstrap resamples) at once.

    Raking on the logit scale: each group's equations solved exactly in turn (``_solve_group``, the
    other groups' offsets held), cycling until no offset moves by ``tol``. One group: one pass.
    ``codes``: each agent's attribute index per group; ``targets``: (R × k_g) or (k_g,). Returns the
    offsets and the largest remaining |mean − target| (0 up to the tolerance when the targets are
    consistent, as parity's always are). Attributes without weight get 0."""
    R = L.shape[0]
    sizes = [int(np.asarray(t).shape[-1]) for t in targets]
    ts = [np.broadcast_to(np.asarray(t, dtype=float), (R, k)) for t, k in zip(targets, sizes)]
    deltas = [np.zeros((R, k)) for k in sizes]
    members = [attribute_members(c, k) for c, k in zip(codes, sizes)]  # each group's, and their weights: fixed while raking
    dens = [member_sums(W, m) for m in members]
    eta = np.array(L, dtype=float)
    for _ in range(max_cycles if len(sizes) > 1 else 1):
        before = [d.copy() for d in deltas]
        for g, (c, t) in enumerate(zip(codes, ts)):
            base = eta - deltas[g][:, c]
            deltas[g] = _solve_group(base, W, c, members[g], dens[g], t, deltas[g], tol)
            eta = base + deltas[g][:, c]
        _centre(deltas, dens, W.sum(axis=1))
        if max(float(np.abs(d - b).max()) for d, b in zip(deltas, before)) < tol:
            break
    s = expit(eta)
    residual = 0.0
    for t, m, den in zip(ts, members, dens):
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(den > 0, np.abs(member_sums(W * s, m) / den - t), 0.0)
        residual = max(residual, float(r.max()) if r.size else 0.0)
    return deltas, residual


def _centre(deltas: list[np.ndarray], dens: list[np.ndarray], total: np.ndarray) -> None:
    """Give every group after the first a W-weighted mean offset of 0 over its agents, the first group
    taking the difference: the same sums ℓ + Σ_g δ_g for every agent, so the same fit.

    The offsets are identified only up to a constant moved between groups (δ_1 + k, δ_2 − k). Where
    the targets are consistent raking converges either way; where they are not (observed rates whose
    groups imply different overall rates), each group's solve pulls the overall rate to its own
    targets and that constant drifted by the same step every cycle, forever: the adjusted rates had
    settled after ~10 cycles, but the offsets never did, and raking ran to ``max_cycles`` with offsets
    in the tens (and an agent whose attribute was absent from the data, offset 0, took the other groups'
    ±36 alone). Centred, the offsets settle with the rates. An attribute without weight in a row keeps
    offset 0, its group's mean. ``dens``: each group's attribute weights Σ_{i ∈ a} W (R × k_g), so that a
    group's mean offset is Σ_a den_a δ_a / ``total``."""
    if len(deltas) < 2:
        return
    for g in range(1, len(deltas)):
        with np.errstate(invalid="ignore", divide="ignore"):
            shift = np.where(total > 0, (dens[g] * deltas[g]).sum(axis=1) / total, 0.0)[:, None]
        deltas[g] = np.where(dens[g] > 0, deltas[g] - shift, 0.0)
        deltas[0] = np.where(dens[0] > 0, deltas[0] + shift, 0.0)


def logits(p: np.ndarray) -> np.ndarray:
    return logit(np.clip(p, P_CLIP, 1 - P_CLIP))


def cell_logits(y: np.ndarray, W: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Sample mode: per row of weights W (R × n), each agent's cell rate, ½-smoothed and on the logit
    scale: logit((x_c + ½)/(n_c + 1)) with x_c = Σ_{i ∈ c} W y, n_c = Σ_{i ∈ c} W."""
    members = attribute_members(cells, int(cells.max()) + 1)
    x, n = member_sums(W * y, members), member_sums(W, members)
    return logit((x + 0.5) / (n + 1))[:, cells]


def level_codes(values: pd.Series, levels: list) -> np.ndarray:
    return pd.Index(levels).get_indexer(values)


def groups_of(d: pd.DataFrame) -> list[str]:
    """The attribute columns: every ``attr_<group>`` of a population run, else ``attribute``."""
    cols = [c for c in d.columns if c.startswith("attr_")]
    return cols or ["attribute"]


def observed_targets(observed: pd.DataFrame | None, scenario, group: str, levels: list) -> np.ndarray:
    if observed is None:
        raise LouderError("calibration to observed rates needs a table of observed rates (columns group, attribute, "
                          "rate; optionally scenario)")
    o = observed
    if "scenario" in o.columns:
        o = o[o["scenario"].isna() | (o["scenario"] == scenario)]
    o = o[o["group"] == group].set_index("attribute")["rate"]
    missing = [a for a in levels if a not in o.index]
    if missing:
        raise LouderError(f"observed rates: no rate for {group} = {', '.join(map(str, missing))}"
                          f"{f' in scenario {scenario}' if scenario else ''}; add a row for each attribute")
    return np.clip(o.reindex(levels).to_numpy(dtype=float), P_CLIP, 1 - P_CLIP)


def fit_offsets(L: np.ndarray, W: np.ndarray, codes: list[np.ndarray], levels: list[list], to: str,
         observed: pd.DataFrame | None, scenario, names: list[str], p_for_parity: np.ndarray):
    """Targets for ``to`` and the raked offsets, for rows of L/W."""
    if to == "parity":
        pooled = (W * p_for_parity).sum(1) / W.sum(1)
        targets = [np.repeat(pooled[:, None], len(lv), axis=1) for lv in levels]
    elif to == "observed":
        targets = [observed_targets(observed, scenario, n, lv) for n, lv in zip(names, levels)]
    else:
        raise LouderError(f"calibrate to {to!r}: use parity or observed")
    deltas, residual = rake(L, W, codes, targets)
    return deltas, targets, residual


def _offset_se(y: np.ndarray, adjusted: np.ndarray, w: np.ndarray, source: str) -> float:
    """Standard error of one offset from its attribute's agents (delta method, weights at their Kish
    size m): score mode sd(p'_i)/√m ÷ mean p'(1 − p') — the error of the attribute's mean moved
    onto the logit scale by the slope of the equation; sample mode the se of a logit rate,
    1/√(m r̃(1 − r̃)). Offsets fitted on m agents leave a residual disparity of this order: a
    re-run as large as the calibration run flags it well above α of the time (docs/statistics.md)."""
    m = float(w.sum() ** 2 / (w * w).sum())
    if source == "sample":
        r = (float(w @ y) / w.sum() * m + 0.5) / (m + 1)
        return float(1 / np.sqrt(m * r * (1 - r)))
    wn = w / w.sum()
    mean = float(wn @ adjusted)
    sd = float(np.sqrt(wn @ (adjusted - mean) ** 2))
    slope = float(wn @ (adjusted * (1 - adjusted)))
    return sd / np.sqrt(m) / slope if slope > 0 else NAN


def calibration_offsets(decisions: pd.DataFrame, to: str = "parity", observed: pd.DataFrame | None = None,
                        value: str = "auto", by: Sequence[str] = ("model", "scenario"),
                        base_variant: str | None = "base") -> pd.DataFrame:
    """Offsets per ``by`` key × group × attribute (module docstring): columns ``[*by, *OFFSET_COLUMNS]``
    with the attribute's valid agents ``n``, its mean ``rate`` before, the ``target`` and its mean
    ``rate_adjusted`` after, and the offset's standard error ``se`` (``_offset_se``). ``source`` says
    ``score`` (from probabilities) or ``sample`` (from rates).
    A population run (``attr_<group>`` columns) is calibrated on all its groups at once, on the rows
    of ``base_variant`` when there are variants. ``observed``: group, attribute, rate (and optionally
    scenario) for ``to="observed"``. A ``condition`` that varies must be in ``by``."""
    by = list(by)
    for k in ("condition",):
        if k in decisions.columns and k not in by and decisions[k].nunique() > 1:
            raise LouderError(f"calibration: the decisions have several {k}s; add {k!r} to by= or pass one {k}")
    col = value_column(decisions, value)
    source = "score" if col == "p_target" else "sample"
    d = decisions[is_valid(decisions) & decisions[col].notna()]
    if "variant" in d.columns and d["variant"].nunique() > 1:
        variants = list(dict.fromkeys(d["variant"]))
        d = d[d["variant"] == (base_variant if base_variant in variants else variants[0])]
    attr_cols = groups_of(d)
    case_keys = by + (["group"] if attr_cols == ["attribute"] else [])
    rows = []
    for key, g in d.groupby(case_keys, sort=True):
        case = dict(zip(case_keys, key if isinstance(key, tuple) else (key,)))
        names = [case["group"]] if attr_cols == ["attribute"] else [c.removeprefix("attr_") for c in attr_cols]
        y = g[col].to_numpy(float)
        W = (g["weight"].to_numpy(float) if "weight" in g.columns else np.ones(len(g)))[None, :]
        levels = [sorted(set(g[c])) for c in attr_cols]
        codes = [level_codes(g[c], lv) for c, lv in zip(attr_cols, levels)]
        if source == "score":
            L = logits(y)[None, :]
        else:
            cells = pd.MultiIndex.from_frame(g[attr_cols]).factorize()[0] if len(attr_cols) > 1 else codes[0]
            L = cell_logits(y, W, cells)
        deltas, targets, residual = fit_offsets(L, W, codes, levels, to, observed, case.get("scenario"), names,
                                                y[None, :])
        if residual > CONFLICT:
            _warn_conflict(case, names, codes, targets, W[0], residual)
        eta = L[0] + sum(dl[0][c] for dl, c in zip(deltas, codes))
        adjusted = expit(eta)
        for name, c, lv, dl, t in zip(names, codes, levels, deltas, targets):
            t = np.asarray(t).reshape(-1, len(lv))[0]
            for j, a in enumerate(lv):
                m = c == j
                w = W[0][m]
                rows.append(dict({k: v for k, v in case.items() if k != "group"}, group=name, attribute=a,
                                 source=source, to=to, n=int(m.sum()), rate=float(w @ y[m] / w.sum()),
                                 target=float(t[j]), offset=float(dl[0, j]), se=_offset_se(y[m], adjusted[m], w, source),
                                 rate_adjusted=float(w @ adjusted[m] / w.sum())))
    return pd.DataFrame(rows, columns=[*by, *OFFSET_COLUMNS])


CONFLICT = 1e-6  # a residual above the solver's tolerance: the targets cannot all hold


def _warn_conflict(case: dict, names: list[str], codes: list[np.ndarray], targets: list, w: np.ndarray,
                   residual: float) -> None:
    """Observed rates of several groups that imply different overall rates on these agents (Σ_a share_a ·
    rate_a per group) cannot all hold: say so, and which group's the offsets meet (raking's last)."""
    implied = [float(np.bincount(c, weights=w, minlength=len(np.ravel(t))) @ np.ravel(t) / w.sum())
               for c, t in zip(codes, targets)]
    where = ", ".join(f"{k} {v}" for k, v in case.items() if k != "group")
    warnings.warn(LouderWarning(
        f"calibration to observed rates ({where}): the groups' rates imply different overall rates on this run's "
        f"agents ({', '.join(f'{n} {r:.3f}' for n, r in zip(names, implied))}), so they cannot all hold; the "
        f"offsets meet {names[-1]}'s and miss the others' by up to {residual:.3f} (rate_adjusted against target)"),
        stacklevel=3)


def fit(run_dir: str | Path, to: str = "parity", observed: str | Path | None = None) -> pd.DataFrame:
    """The offsets of a run folder (columns ``model``, ``condition``, ``scenario`` and OFFSET_COLUMNS)."""
    run = Path(run_dir)
    if to not in ("parity", "observed"):
        raise LouderError(f"--to {to}: use parity (every attribute at the pooled rate) or observed (the rates of "
                          "--observed FILE)")
    if to == "observed" and observed is None:
        raise LouderError("--to observed needs --observed FILE: observed rates per scenario, group and attribute "
                          "(docs/voices.md)")
    path = run / "decisions.parquet"
    if not path.exists():
        raise LouderError(f"{run}: no decisions.parquet; run `louder run --out {run}` first (offsets are fitted on a "
                          "finished run)")
    d = calibration_rows(pd.read_parquet(path))
    if "attr_" not in "".join(d.columns) and "cell_id" in d.columns:
        raise LouderError(f"{run}: archetype runs score population cells, not agents; fit offsets on an agents run")
    rates = observed_rates(observed) if to == "observed" else None
    try:
        t = calibration_offsets(d, to=to, observed=rates, by=BY)
    except LouderError as e:
        raise LouderError(f"louder calibrate {run}: {e}") from None
    if t.empty:
        raise LouderError(f"{run}: no valid decisions to fit offsets on")
    return t


def write(table: pd.DataFrame, path: str | Path, to: str, run: str | Path, observed: str | Path | None = None) -> Path:
    """``table`` as a calibration file (louder.calibration.Calibration) at ``path``."""
    from louder.calibration import Calibration
    from louder.io import write_text

    rows = []
    for r in table.to_dict("records"):
        row = {k: r[k] for k in (*BY, "group", "attribute")}
        row = {k: str(v) for k, v in row.items()}
        row.update(offset=float(r["offset"]), se=None if pd.isna(r["se"]) else round(float(r["se"]), 6),
                   n=int(r["n"]), rate=round(float(r["rate"]), 6), target=round(float(r["target"]), 6),
                   rate_adjusted=round(float(r["rate_adjusted"]), 6))
        rows.append(row)
    doc = dict(to=to, source=str(table["source"].iloc[0]), run=str(Path(run).resolve()),
               observed=None if observed is None else str(Path(observed).resolve()), offsets=rows)
    Calibration.model_validate(doc)  # what `louder run --calibration` will read
    out = Path(path)
    write_text(HEADER + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120), out)
    return out


def console_table(table: pd.DataFrame):
    """What `louder calibrate` prints: one row per offset."""
    from rich.table import Table

    f = lambda v, d=3: "–" if pd.isna(v) else f"{v:.{d}f}"  # noqa: E731
    t = Table(title=f"Calibration offsets to {table['to'].iloc[0]} (logit scale; from {table['source'].iloc[0]}-mode "
                    "data): rate before → target → rate after on this run")
    for col in ("model", "condition", "scenario", "group", "attribute", "n", "rate", "target", "offset ± se",
                "rate after"):
        t.add_column(col)
    for r in table.to_dict("records"):
        t.add_row(str(r["model"]), str(r["condition"]), str(r["scenario"]), str(r["group"]), str(r["attribute"]),
                  str(r["n"]), f(r["rate"]), f(r["target"]), f"{r['offset']:+.3f} ± {f(r['se'])}",
                  f(r["rate_adjusted"]))
    return t


__all__ = ["OFFSET_COLUMNS", "calibration_offsets", "calibration_rows", "console_table", "fit", "observed_rates",
           "rake", "write"]
