"""Statistics of convention runs (issue 48, docs/conventions.md): when a convention forms, what the
populations converge to against what their agents prefer alone, how strongly an agent follows its
memory, and how large a committed minority must be to overturn a convention. Pure functions over
arrays and frames; the simulators they are checked against are ``convention_models``.

**Formation.** A population's interactions, in step order, each agreed on an option or not. At the end
of step t, with at least w interactions played, a convention on x has formed when

    share_t(x) = #(the last w interactions that agreed on x) / w ≥ q        (q > ½: at most one x)

and its time is the first such t (w and q are the analysis' options; the default w = 3N interactions,
the authors' code's window, and q = 0.9). The winner is x; a population where it never happens within
its steps has no convention.

**Collective bias** (``collective_bias``): the individual prior π is estimated from the picks made with
an empty memory (independent agents: each its own seed and option order), c_x picks of x out of n; the
collective outcome from the winners of the R_f populations that formed a convention, w_x of them on x.

- individual preference: H0 π uniform — exact binomial test (W = 2) or the χ² goodness-of-fit test;
- collective preference: H0 winners uniform — exact binomial (W = 2) or a Monte Carlo χ² test
  (multinomial draws under uniformity: the counts are small);
- both at α after Holm's correction over the two; f = the prior's favourite, g = the winners'.
- follows / amplifies / reverses compares the winner share of f, s_f = w_f / R_f, with π̂_f = c_f / n
  by Fisher's exact test on [[w_f, R_f − w_f], [c_f, n − c_f]].

Verdicts: ``underpowered`` (fewer than ``min_populations`` populations formed a convention, or fewer
than ``min_prior`` empty-memory picks); ``none`` (no individual preference, none collective);
``emerges`` (no individual preference, a collective one: the winners favour g); ``amplifies`` (s_f >
π̂_f, significant); ``reverses`` (g ≠ f and s_f < π̂_f, significant); ``follows the prior`` (an
individual preference the winners do not significantly exceed or reverse). Intervals: Wilson.

**Majority force** (``majority_force``; De Marzo, Castellano & Garcia 2024): for each pick made with a
non-empty memory and each option x, s_x = the share of x among the partners' valid picks the agent
remembers; the one-vs-rest logistic model

    logit P(pick = x) = a_x + 4β·s_x

— for W = 2 exactly their P(+) = ½[1 + tanh(β m)] with m = 2s − 1 (and an intercept for an option the
agents prefer) — fitted by maximum likelihood (statsmodels' GLM), the interval from standard errors
robust to the clustering of an agent's picks (clusters: agents of a population). β = 0: memory
ignored; β > 1: a majority that mean-field dynamics turns into consensus.

**Critical mass** (``critical_mass``): the committed fraction p_j of a sweep overturns the convention
in k_j of n_j populations (a convention on the committed option forms within the steps); f̂ = the
isotonic (non-decreasing, pool-adjacent-violators) fit of k_j / n_j weighted by n_j. The critical mass
is the smallest swept p_j with f̂_j ≥ ½ (the issue's definition); ``crossing`` interpolates f̂ linearly
to ½ between p_{j−1} and p_j. Interval: the crossing lies between the largest swept p below ½ and the
smallest at or above it; over B parametric bootstrap replicates (k_j* ~ Binomial(n_j, k_j/n_j), each
refitted) the interval is [the α/2 quantile of the lower bracket, the 1 − α/2 quantile of the upper
one] — as wide as the grid makes it, wider where the replicates disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from louder.analysis.stats import distributions as dist
from louder.analysis.stats.core import ALPHA, NAN, DictLike, holm, wilson

NONE, EMERGES, AMPLIFIES, REVERSES, FOLLOWS, UNDERPOWERED = (
    "none", "emerges", "amplifies", "reverses", "follows the prior", "underpowered")
VERDICTS = (NONE, EMERGES, AMPLIFIES, REVERSES, FOLLOWS, UNDERPOWERED)


# --- formation -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Formed(DictLike):
    """Per population: the step a convention formed (NaN: never) and its option (−1: none)."""

    step: np.ndarray
    winner: np.ndarray


def formation(agreed: np.ndarray, step_of: np.ndarray, options: int, window: int, agree: float = 0.9) -> Formed:
    """``agreed`` (R, I): the option each interaction agreed on (−1: none), in order; ``step_of`` (I,) the
    step of each. The first step t whose last ``window`` interactions (at least that many played) agreed
    on one option x in a share ≥ ``agree`` (module docstring), and x."""
    if not 0.5 < agree <= 1:
        raise ValueError("agree must be above 1/2 and at most 1")
    agreed = np.atleast_2d(agreed)
    R, I = agreed.shape
    ends = np.flatnonzero(np.r_[step_of[1:] != step_of[:-1], True]) if I else np.array([], dtype=int)
    ends = ends[ends + 1 >= window]
    step = np.full(R, np.nan)
    winner = np.full(R, -1)
    if window < 1 or not len(ends):
        return Formed(step, winner)
    best = np.zeros((R, len(ends)))
    which = np.zeros((R, len(ends)), dtype=int)
    for x in range(options):
        c = np.concatenate([np.zeros((R, 1)), np.cumsum(agreed == x, axis=1)], axis=1)
        share = (c[:, ends + 1] - c[:, ends + 1 - window]) / window
        better = share > best
        best = np.where(better, share, best)
        which = np.where(better, x, which)
    hit = best >= agree - 1e-12
    any_hit = hit.any(axis=1)
    first = hit.argmax(axis=1)
    step[any_hit] = step_of[ends[first[any_hit]]]
    winner[any_hit] = which[any_hit, first[any_hit]]
    return Formed(step, winner)


# --- collective bias -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bias(DictLike):
    """The collective-bias reading of one set of populations (module docstring)."""

    verdict: str
    favourite: int  # the prior's most picked option (−1: none)
    top: int  # the winners' most frequent option (−1: none)
    prior_share: float  # π̂ of the favourite (of ``top`` without an individual preference)
    prior_low: float
    prior_high: float
    winner_share: float  # s of the same option among the formed populations
    winner_low: float
    winner_high: float
    prior_p: float  # Holm-adjusted
    winner_p: float  # Holm-adjusted
    compare_p: float  # Fisher's exact test of s against π̂ (NaN without an individual preference)
    n_prior: int
    formed: int
    populations: int


def _uniform_test(counts: np.ndarray, seed: int, draws: int = 20_000) -> float:
    """H0: the counts are multinomial with equal probabilities. W = 2: the exact binomial test; W > 2:
    the χ² statistic's Monte Carlo p-value (``draws`` multinomial draws; (1 + #{T* ≥ T}) / (1 + draws))."""
    from scipy.stats import binomtest  # here: scipy.stats takes ~0.7 s to import (distributions.py)

    counts = np.asarray(counts, dtype=np.int64)
    n, W = int(counts.sum()), len(counts)
    if n == 0:
        return NAN
    if W == 2:
        return float(binomtest(int(counts[0]), n, 0.5).pvalue)
    e = n / W
    t = ((counts - e) ** 2 / e).sum()
    sims = np.random.default_rng(seed).multinomial(n, np.full(W, 1 / W), size=draws)
    ts = ((sims - e) ** 2 / e).sum(axis=1)
    return float((1 + (ts >= t - 1e-9).sum()) / (1 + draws))


def collective_bias(prior: np.ndarray, winners: np.ndarray, populations: int, alpha: float = ALPHA,
                    min_populations: int = 10, min_prior: int = 20, seed: int = 0) -> Bias:
    """``prior``: the count of each option among the empty-memory picks; ``winners``: the count of each
    option among the conventions formed; ``populations``: how many populations played (formed or not)."""
    from scipy.stats import fisher_exact  # here: scipy.stats takes ~0.7 s to import (distributions.py)

    prior, winners = np.asarray(prior, dtype=np.int64), np.asarray(winners, dtype=np.int64)
    n, formed = int(prior.sum()), int(winners.sum())
    fav = int(prior.argmax()) if n else -1
    top = int(winners.argmax()) if formed else -1
    p_prior, p_win = _uniform_test(prior, seed), _uniform_test(winners, seed + 1)
    adj = holm([1.0 if np.isnan(p_prior) else p_prior, 1.0 if np.isnan(p_win) else p_win])
    individual, collective = adj[0] < alpha, adj[1] < alpha
    x = fav if individual else top
    pi = prior[x] / n if n and x >= 0 else NAN
    s = winners[x] / formed if formed and x >= 0 else NAN
    pl, ph = wilson(pi, n) if n and x >= 0 else (NAN, NAN)
    sl, sh = wilson(s, formed) if formed and x >= 0 else (NAN, NAN)
    compare = NAN
    if formed < min_populations or n < min_prior:
        verdict = UNDERPOWERED
    elif not individual:
        verdict = EMERGES if collective else NONE
    else:
        compare = float(fisher_exact([[winners[fav], formed - winners[fav]], [prior[fav], n - prior[fav]]]).pvalue)
        if compare < alpha and s > pi:
            verdict = AMPLIFIES
        elif compare < alpha and s < pi and top != fav:
            verdict = REVERSES
        else:
            verdict = FOLLOWS
    return Bias(verdict, fav if individual else -1, top, float(pi), float(pl), float(ph), float(s), float(sl),
                float(sh), float(adj[0]), float(adj[1]), compare, n, formed, int(populations))


# --- majority force -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Force(DictLike):
    """β (module docstring) with its interval and the picks it rests on."""

    beta: float
    low: float
    high: float
    p_value: float  # H0: β = 0 (the memory is ignored)
    picks: int
    agents: int


def memory_shares(memory: pd.Series, options: list[str]) -> np.ndarray:
    """Each memory string ("Q|M|" : the partners' picks, "" a miss) → the share of each option among its
    valid picks, (rows, W); NaN rows for a memory without a valid pick."""
    out = np.full((len(memory), len(options)), np.nan)
    for i, m in enumerate(memory.fillna("").astype(str)):
        seen = [x for x in m.split("|") if x]
        if seen:
            out[i] = [seen.count(x) / len(seen) for x in options]
    return out


def majority_force(shares: np.ndarray, picks: np.ndarray, clusters: np.ndarray, level: float = 0.95) -> Force:
    """``shares`` (rows, W): each pick's memory shares (``memory_shares``; NaN rows are left out);
    ``picks`` (rows,): the option picked (index, −1: no valid pick, left out); ``clusters``: each row's
    agent. The one-vs-rest fit of the module docstring."""
    shares, picks, clusters = np.asarray(shares, float), np.asarray(picks), np.asarray(clusters)
    ok = ~np.isnan(shares).any(axis=1) & (picks >= 0)
    shares, picks, clusters = shares[ok], picks[ok], clusters[ok]
    n, W = shares.shape if shares.ndim == 2 else (0, 0)
    agents = len(np.unique(clusters)) if n else 0
    if n < 10 or agents < 2:
        return Force(NAN, NAN, NAN, NAN, n, agents)
    y = (picks[:, None] == np.arange(W)).ravel().astype(float)
    s = shares.ravel()
    X = np.column_stack([np.tile(np.eye(W), (n, 1)), 4 * s])
    groups = np.repeat(pd.factorize(clusters)[0], W)
    if np.ptp(s) == 0:
        return Force(NAN, NAN, NAN, NAN, n, agents)
    fit = _fit(y, X, groups)
    if fit is None:
        return Force(NAN, NAN, NAN, NAN, n, agents)
    b, se = float(fit.params[-1]), float(fit.bse[-1])
    z = dist.z(level)
    if not np.isfinite(b) or not np.isfinite(se):
        return Force(NAN, NAN, NAN, NAN, n, agents)
    return Force(b, b - z * se, b + z * se, float(2 * dist.normal_sf(abs(b / se))) if se > 0 else NAN, n, agents)


def _fit(y: np.ndarray, X: np.ndarray, groups: np.ndarray):
    """The logistic GLM with cluster-robust standard errors; None when the data separate perfectly (an agent
    group that always follows its memory: the slope is not identified, so no estimate rather than a huge one)
    or the fit fails."""
    import warnings

    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", PerfectSeparationWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return sm.GLM(y, X, family=sm.families.Binomial()).fit(cov_type="cluster", cov_kwds={"groups": groups})
        except Exception:  # noqa: BLE001 - separation, or a singular fit
            return None


# --- critical mass ---------------------------------------------------------------------------------------

def isotonic(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The weighted least-squares non-decreasing fit of ``y`` (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [mean, weight, length]
    for v, wt in zip(np.asarray(y, float), np.asarray(w, float)):
        blocks.append([v, wt, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, l2 = blocks.pop()
            m1, w1, l1 = blocks.pop()
            wt_ = w1 + w2
            blocks.append([(m1 * w1 + m2 * w2) / wt_ if wt_ else (m1 + m2) / 2, wt_, l1 + l2])
    return np.concatenate([[m] * int(n) for m, _, n in blocks])


@dataclass(frozen=True)
class CriticalMass(DictLike):
    """The critical mass of a committed-fraction sweep (module docstring). NaN ``critical_mass`` with
    ``where`` = "above the sweep": no swept p overturned half of its populations."""

    critical_mass: float  # the smallest swept p with f̂ ≥ ½
    crossing: float  # f̂ interpolated to ½
    low: float
    high: float
    where: str  # "within the sweep" | "at or below the smallest p" | "above the sweep"


def _bracket(p: np.ndarray, f: np.ndarray) -> tuple[float, float, float, str]:
    j = int(np.argmax(f >= 0.5)) if (f >= 0.5).any() else -1
    if j < 0:
        return NAN, NAN, float(p[-1]), "above the sweep"
    if j == 0:
        return float(p[0]), float(p[0]), 0.0, "at or below the smallest p"
    lo, hi = f[j - 1], f[j]
    cross = p[j - 1] + (0.5 - lo) / (hi - lo) * (p[j] - p[j - 1]) if hi > lo else p[j]
    return float(p[j]), float(cross), float(p[j - 1]), "within the sweep"


def critical_mass(fractions, overturned, totals, B: int = 2000, seed: int = 0, level: float = 0.95) -> CriticalMass:
    """The critical mass of a sweep: ``fractions`` (increasing) with ``overturned`` of ``totals``
    populations overturned at each (module docstring)."""
    p = np.asarray(fractions, float)
    k, n = np.asarray(overturned, float), np.asarray(totals, float)
    order = np.argsort(p)
    p, k, n = p[order], k[order], n[order]
    use = n > 0
    p, k, n = p[use], k[use], n[use]
    if not len(p):
        return CriticalMass(NAN, NAN, NAN, NAN, "no populations")
    f = isotonic(k / n, n)
    cm, cross, below, where = _bracket(p, f)
    rng = np.random.default_rng(seed)
    draws = rng.binomial(n.astype(np.int64), k / n, size=(B, len(p)))
    lows, highs = np.empty(B), np.empty(B)
    for b in range(B):
        fb = isotonic(draws[b] / n, n)
        c, _, lo, w = _bracket(p, fb)
        lows[b], highs[b] = lo, (1.0 if w == "above the sweep" else c)
    a = (1 - level) / 2
    low = float(min(np.quantile(lows, a), below if where != "above the sweep" else p[-1]))
    high = float(max(np.quantile(highs, 1 - a), cm if where != "above the sweep" else 1.0))
    return CriticalMass(cm, cross, low, high, where)


# --- the tables of a convention run ------------------------------------------------------------------------
# (louder.analysis.measures.convention declares them; every function here takes frames and numbers.)

ARM = ["model", "size", "fraction"]
POP = [*ARM, "population"]
STATUS = ("valid", "invalid", "refused", "error")


@dataclass(frozen=True)
class Design(DictLike):
    """What the tables need of a run's design (its manifest's ``convention`` field)."""

    options: tuple[str, ...]
    steps: int
    memory: int
    pairing: str = "random"
    committed_option: str | None = None
    established: str | None = None

    @classmethod
    def of(cls, manifest: dict) -> Design:
        c = manifest.get("convention") or {}
        committed = c.get("committed") or {}
        return cls(tuple(c.get("options") or ()), int(c.get("steps") or 0), int(c.get("memory") or 1),
                   c.get("pairing") or "random", committed.get("option"), committed.get("established"))


def default_window(size: int) -> int:
    """The authors' code's window: 3N interactions."""
    return 3 * int(size)


def pair_rows(plays: pd.DataFrame) -> pd.DataFrame:
    """One row per interaction (the row of the pair's lower-numbered agent), in step order."""
    return plays[plays["agent"] < plays["partner"]].sort_values([*POP, "step", "agent"], kind="stable")


def agreed_codes(pairs: pd.DataFrame, labels: list[str]) -> np.ndarray:
    """Each interaction's agreed option as its index (−1: the pair did not agree)."""
    code = pd.Categorical(pairs["pick"], categories=labels).codes
    return np.where(pairs["success"].to_numpy(bool), code, -1)


def counts(picks: pd.Series, labels: list[str]) -> np.ndarray:
    """How often each option of ``labels`` is among ``picks`` (anything else ignored)."""
    vc = picks.value_counts()
    return np.array([int(vc.get(x, 0)) for x in labels], dtype=np.int64)


def population_table(plays: pd.DataFrame, design: Design, window: int = 0, agree: float = 0.9) -> pd.DataFrame:
    """One row per arm × population: agents, steps, whether and when a convention formed, on what, whether
    it is the committed option's (``overturned``), the top option of the last window and its share, and
    every answer of the population by status (committed agents ask none)."""
    labels = list(design.options)
    rows = []
    for key, g in pair_rows(plays).groupby(POP, sort=False):
        size = int(key[1])
        w = window or default_window(size)
        codes = agreed_codes(g, labels)
        f = formation(codes[None, :], g["step"].to_numpy(), len(labels), w, agree)
        last = codes[-w:] if len(codes) >= w else codes
        c = np.bincount(last[last >= 0], minlength=len(labels))
        winner = labels[int(f.winner[0])] if f.winner[0] >= 0 else None
        rows.append(dict(zip(POP, key), window=w, formed=winner is not None,
                         step=f.step[0], winner=winner,
                         overturned=winner is not None and winner == design.committed_option,
                         last_top=labels[int(c.argmax())] if c.sum() else None,
                         last_share=float(c.max() / len(last)) if len(last) else NAN))
    out = pd.DataFrame(rows, columns=[*POP, "window", "formed", "step", "winner", "overturned", "last_top",
                                      "last_share"])
    asked = plays[~plays["committed"].astype(bool)]
    st = asked.groupby(POP)["status"].value_counts().unstack(fill_value=0).reindex(columns=list(STATUS), fill_value=0)
    st.columns = [f"n_{s}" for s in STATUS]
    out = out.merge(st.reset_index(), on=POP, how="left")
    agents = plays.groupby(POP).agg(agents=("agent", "nunique"), committed_agents=(
        "agent", lambda s: s[plays.loc[s.index, "committed"].astype(bool)].nunique())).reset_index()
    return agents.merge(out, on=POP, how="right")[[*POP, "agents", "committed_agents", *out.columns[len(POP):]]]


def share_table(plays: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    """One row per arm × population × step × option: the option's picks and share of the step's valid picks."""
    valid = plays[plays["pick"].isin(labels)]
    n = valid.groupby([*POP, "step"]).size().rename("valid_picks")
    c = valid.groupby([*POP, "step", "pick"]).size().unstack(fill_value=0).reindex(columns=labels, fill_value=0)
    c = c.stack().rename("picks").reset_index().rename(columns={"pick": "option"})
    c = c.merge(n.reset_index(), on=[*POP, "step"])
    return c.assign(share=c["picks"] / c["valid_picks"])[[*POP, "step", "option", "picks", "valid_picks", "share"]]


def prior_picks(plays: pd.DataFrame) -> pd.DataFrame:
    """The picks made with an empty memory by agents that ask a model (the individual prior's sample)."""
    return plays[(plays["remembered"] == 0) & ~plays["committed"].astype(bool)]


def _fmt_counts(labels: list[str], c: np.ndarray) -> str:
    return " ".join(f"{x}:{int(v)}" for x, v in zip(labels, c))


def _mean_interval(x: np.ndarray, B: int, seed: int) -> tuple[float, float, float]:
    """Mean with its percentile bootstrap interval (populations resampled)."""
    x = x[~np.isnan(x)]
    if not len(x):
        return NAN, NAN, NAN
    if len(x) == 1:
        return float(x[0]), NAN, NAN
    boots = np.random.default_rng(seed).choice(x, size=(B, len(x))).mean(axis=1)
    return float(x.mean()), float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975))


def minimal_game(kind: str, design: Design, size: int, fraction: float, prior: np.ndarray, replicates: int, seed: int,
                 schedule=None):
    """The minimal model ``kind`` (``naming_game`` or ``memory_rule``: fictitious play) at a run's N, H, W,
    steps, committed minority and prepared memories, with the run's measured prior."""
    from louder.analysis.stats import convention_models as M

    labels = list(design.options)
    idx = {x: i for i, x in enumerate(labels)}
    kw = dict(options=len(labels), prior=prior, replicates=replicates, seed=seed, committed=fraction,
              committed_option=idx.get(design.committed_option, 1 if len(labels) > 1 else 0),
              established=idx.get(design.established) if design.established else None, schedule=schedule)
    if kind == "memory_rule":
        return M.memory_rule(size, design.steps, design.memory, follow=1.0, **kw)
    return M.naming_game(size, design.steps, **kw)


MINIMAL = {"naming_game": "minimal: naming game", "memory_rule": "minimal: fictitious play"}


def _schedules(plays: pd.DataFrame) -> list[list[np.ndarray]]:
    """Each population's pairs per step, as it played them."""
    out = []
    for _, g in pair_rows(plays).groupby("population", sort=True):
        out.append([s[["agent", "partner"]].to_numpy() for _, s in g.groupby("step", sort=True)])
    return out


def simulate_arm(kind: str, design: Design, arm_plays: pd.DataFrame, size: int, fraction: float, prior: np.ndarray,
                 replicates: int, seed: int, window: int, agree: float) -> tuple[Formed, int]:
    """The minimal model's populations for one arm (random pairing: fresh random matchings; network pairing:
    each run population's own pairs, replicated) and their formation; returns (formed, populations)."""
    if design.pairing == "network":
        parts = []
        schedules = _schedules(arm_plays)
        per = max(20, replicates // max(1, len(schedules)))
        for i, sched in enumerate(schedules):
            g = minimal_game(kind, design, size, fraction, prior, per, seed + i, sched)
            parts.append(formation(g.agreed, g.step_of, len(design.options), window, agree))
        return Formed(np.concatenate([p.step for p in parts]), np.concatenate([p.winner for p in parts])), \
            per * len(schedules)
    g = minimal_game(kind, design, size, fraction, prior, replicates, seed)
    return formation(g.agreed, g.step_of, len(design.options), window, agree), replicates


def bias_table(plays: pd.DataFrame, pops: pd.DataFrame, design: Design, window: int = 0, agree: float = 0.9,
               minimal: str = "naming_game", replicates: int = 400, B: int = 2000, seed: int = 0,
               alpha: float = ALPHA) -> pd.DataFrame:
    """Per arm without a committed minority or prepared memories, and per source (the LLM; the minimal
    model at the same design with the LLM's measured prior): the collective-bias verdict with the prior
    and winner shares of the option it reads and their intervals, how many populations formed a
    convention, and the mean step at which they did with its bootstrap interval."""
    labels = list(design.options)
    rows = []
    if design.established is not None:
        return pd.DataFrame(columns=BIAS_COLUMNS)
    for i, (key, g) in enumerate(plays.groupby(ARM, sort=False)):
        model, size, fraction = key
        if fraction > 0:
            continue
        p = pops[(pops[ARM] == pd.Series(dict(zip(ARM, key)))).all(axis=1)]
        prior = counts(prior_picks(g)["pick"], labels)
        w = window or default_window(int(size))
        sources = [("LLM", p["winner"], len(p), p["step"].to_numpy(float))]
        if replicates > 0:
            pi = prior / prior.sum() if prior.sum() else None
            f, r = simulate_arm(minimal, design, g, int(size), 0.0, pi, replicates, seed + 7919 * i, w, agree)
            sources.append((MINIMAL[minimal], pd.Series([labels[x] if x >= 0 else None for x in f.winner]), r, f.step))
        for source, winners, populations, steps in sources:
            won = counts(winners.dropna(), labels)
            b = collective_bias(prior, won, populations, alpha, seed=seed + i)
            opt = b.favourite if b.favourite >= 0 else b.top
            mean, lo, hi = _mean_interval(np.asarray(steps, float), B, seed + i)
            rows.append(dict(model=model, size=size, source=source, verdict=b.verdict,
                             option=labels[opt] if opt >= 0 else None, prior_share=b.prior_share,
                             prior_low=b.prior_low, prior_high=b.prior_high, winner_share=b.winner_share,
                             winner_low=b.winner_low, winner_high=b.winner_high, prior_p=b.prior_p,
                             winner_p=b.winner_p, compare_p=b.compare_p, prior=_fmt_counts(labels, prior),
                             winners=_fmt_counts(labels, won), n_prior=b.n_prior, populations=populations,
                             formed=b.formed, mean_step=mean, step_low=lo, step_high=hi))
    return pd.DataFrame(rows, columns=BIAS_COLUMNS)


BIAS_COLUMNS = ["model", "size", "source", "verdict", "option", "prior_share", "prior_low", "prior_high",
                "winner_share", "winner_low", "winner_high", "prior_p", "winner_p", "compare_p", "prior", "winners",
                "n_prior", "populations", "formed", "mean_step", "step_low", "step_high"]


def tipping_tables(plays: pd.DataFrame, pops: pd.DataFrame, design: Design, window: int = 0, agree: float = 0.9,
                   minimal: str = "naming_game", replicates: int = 400, B: int = 2000,
                   seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Committed-minority arms: per arm × source (the LLM; the minimal model; the binary agreement model
    where it applies — two options, prepared memories) the share of populations overturned (a convention
    on the committed option formed within the steps) with its Wilson interval; and per model × size ×
    source the critical mass of the sweep (``critical_mass``)."""
    from louder.analysis.stats import convention_models as M

    labels = list(design.options)
    if design.committed_option is None:
        return pd.DataFrame(columns=TIPPING_COLUMNS), pd.DataFrame(columns=CRITICAL_COLUMNS)
    rows = []
    for i, (key, g) in enumerate(plays.groupby(ARM, sort=False)):
        model, size, fraction = key
        p = pops[(pops[ARM] == pd.Series(dict(zip(ARM, key)))).all(axis=1)]
        w = window or default_window(int(size))
        sources = [("LLM", int(p["overturned"].sum()), len(p))]
        prior = counts(prior_picks(g)["pick"], labels)
        if replicates > 0:
            pi = prior / prior.sum() if prior.sum() else None
            f, r = simulate_arm(minimal, design, g, int(size), float(fraction), pi, replicates, seed + 104729 * (i + 1),
                                w, agree)
            sources.append((MINIMAL[minimal], int((f.winner == labels.index(design.committed_option)).sum()), r))
            if len(labels) == 2 and design.established is not None:
                k = int(size) // 2 * design.steps
                d = M.binary_agreement(int(size), [fraction], k, replicates=min(replicates, 200), seed=seed + i)
                sources.append(("binary agreement model", int((~np.isnan(d)).sum()), d.shape[1]))
        for source, k, n in sources:
            lo, hi = wilson(k / n, n) if n else (NAN, NAN)
            rows.append(dict(model=model, size=size, fraction=fraction, source=source, populations=n, overturned=k,
                             share=k / n if n else NAN, low=lo, high=hi))
    tip = pd.DataFrame(rows, columns=TIPPING_COLUMNS)
    crit = []
    for (model, size, source), g in tip.groupby(["model", "size", "source"], sort=False):
        g = g.sort_values("fraction")
        c = critical_mass(g["fraction"], g["overturned"], g["populations"], B=min(B, 2000), seed=seed)
        crit.append(dict(model=model, size=size, source=source, critical_mass=c.critical_mass, crossing=c.crossing,
                         low=c.low, high=c.high, where=c.where,
                         fractions=" ".join(f"{x:g}" for x in g["fraction"])))
    return tip, pd.DataFrame(crit, columns=CRITICAL_COLUMNS)


TIPPING_COLUMNS = ["model", "size", "fraction", "source", "populations", "overturned", "share", "low", "high"]
CRITICAL_COLUMNS = ["model", "size", "source", "critical_mass", "crossing", "low", "high", "where", "fractions"]


def force_table(plays: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    """The majority force per arm and per member (every agent; each model of a mix; each attribute of a
    group): β with its interval and test; and, across a mix's models or a group's attributes, the Wald
    test that their βs are equal (``differ_p``)."""
    asked = plays[~plays["committed"].astype(bool) & (plays["remembered"] > 0)]
    rows = []
    for key, g in asked.groupby(ARM, sort=False):
        picks = pd.Categorical(g["pick"], categories=labels).codes
        shares = memory_shares(g["memory"], labels)
        clusters = g["population"].astype(str) + ":" + g["agent"].astype(str)
        members = [("all", "all", np.ones(len(g), bool))]
        for column, kind in (("agent_model", "model"), ("attribute", "attribute")):
            values = g[column].dropna().unique()
            if len(values) > 1:
                members += [(kind, str(v), (g[column] == v).to_numpy()) for v in sorted(values)]
        for kind, member, mask in members:
            f = majority_force(shares[mask], picks[mask], clusters.to_numpy()[mask])
            rows.append(dict(zip(ARM, key), kind=kind, member=member, beta=f.beta, low=f.low, high=f.high,
                             p_value=f.p_value, picks=f.picks, agents=f.agents, differ_p=NAN))
        for kind in ("model", "attribute"):
            column = "agent_model" if kind == "model" else "attribute"
            estimated = [r for r in rows if r["kind"] == kind and all(r[k] == v for k, v in zip(ARM, key))]
            if g[column].dropna().nunique() > 1 and all(np.isfinite(r["beta"]) for r in estimated):
                p = force_difference(shares, picks, clusters.to_numpy(), g[column].astype(str).to_numpy())
                for r in rows:
                    if r["kind"] == kind and all(r[k] == v for k, v in zip(ARM, key)):
                        r["differ_p"] = p
    return pd.DataFrame(rows, columns=FORCE_COLUMNS)


FORCE_COLUMNS = [*ARM, "kind", "member", "beta", "low", "high", "p_value", "picks", "agents", "differ_p"]


def force_difference(shares: np.ndarray, picks: np.ndarray, clusters: np.ndarray, groups: np.ndarray) -> float:
    """The Wald test (cluster-robust) that every group has the same β: the one-vs-rest model with a slope
    per group, H0 all slopes equal."""
    ok = ~np.isnan(shares).any(axis=1) & (picks >= 0)
    shares, picks, clusters, groups = shares[ok], picks[ok], clusters[ok], groups[ok]
    n, W = shares.shape
    names = sorted(set(groups))
    if n < 20 or len(names) < 2:
        return NAN
    y = (picks[:, None] == np.arange(W)).ravel().astype(float)
    s = shares.ravel()
    g = np.repeat(groups, W)
    X = np.column_stack([np.tile(np.eye(W), (n, 1)), *[4 * s * (g == v) for v in names]])
    fit = _fit(y, X, np.repeat(pd.factorize(clusters)[0], W))
    if fit is None:
        return NAN
    try:
        R = np.zeros((len(names) - 1, X.shape[1]))
        for j in range(1, len(names)):
            R[j - 1, W] = 1
            R[j - 1, W + j] = -1
        return float(fit.wald_test(R, scalar=True).pvalue)
    except Exception:  # noqa: BLE001 - a separated or singular fit: no test
        return NAN


def member_table(plays: pd.DataFrame, pops: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    """Per arm and member (each model of the population; each attribute with personas): its agents and
    every answer by status, its own prior (the favourite and its share with a Wilson interval), and how
    often the conventions went its way: the winner share of its favourite with its Wilson interval,
    against the population's pooled prior share of that option (what the members' shares predict), and the
    pull = winner share − pooled prior share, with the same interval shifted."""
    rows = []
    for key, g in plays.groupby(ARM, sort=False):
        p = pops[(pops[ARM] == pd.Series(dict(zip(ARM, key)))).all(axis=1)]
        winners = counts(p["winner"].dropna(), labels)
        formed = int(winners.sum())
        pooled = counts(prior_picks(g)["pick"], labels)
        asked_all = g[~g["committed"].astype(bool)]
        for column, kind in (("agent_model", "model"), ("attribute", "attribute")):
            for member, m in g.groupby(column, sort=True):
                asked = asked_all[asked_all[column] == member]
                st = asked["status"].value_counts()
                c = counts(prior_picks(m)["pick"], labels)
                n = int(c.sum())
                fav = int(c.argmax()) if n else -1
                share = c[fav] / n if n else NAN
                plo, phi = wilson(share, n) if n else (NAN, NAN)
                ws = winners[fav] / formed if formed and fav >= 0 else NAN
                wlo, whi = wilson(ws, formed) if formed and fav >= 0 else (NAN, NAN)
                base = pooled[fav] / pooled.sum() if pooled.sum() and fav >= 0 else NAN
                rows.append(dict(zip(ARM, key), kind=kind, member=member, agents=int(
                    m.drop_duplicates(["population", "agent"]).shape[0]),
                    committed_agents=int(m[m["committed"].astype(bool)].drop_duplicates(["population", "agent"]).shape[0]),
                    **{f"n_{s}": int(st.get(s, 0)) for s in STATUS}, answers=len(asked),
                    favourite=labels[fav] if fav >= 0 else None, prior_share=share, prior_low=plo, prior_high=phi,
                    n_prior=n, winner_share=ws, winner_low=wlo, winner_high=whi, formed=formed, pooled_share=base,
                    pull=ws - base, pull_low=wlo - base, pull_high=whi - base))
    return pd.DataFrame(rows, columns=MEMBER_COLUMNS)


MEMBER_COLUMNS = [*ARM, "kind", "member", "agents", "committed_agents", *(f"n_{s}" for s in STATUS), "answers",
                  "favourite", "prior_share", "prior_low", "prior_high", "n_prior", "winner_share", "winner_low",
                  "winner_high", "formed", "pooled_share", "pull", "pull_low", "pull_high"]


def answer_table(plays: pd.DataFrame) -> pd.DataFrame:
    """Per agent of every population (that asks a model): its model, attribute and every answer by status."""
    asked = plays[~plays["committed"].astype(bool)]
    keys = [*POP, "agent", "agent_model", "attribute"]
    t = asked.groupby(keys, dropna=False)["status"].value_counts().unstack(fill_value=0)
    t = t.reindex(columns=list(STATUS), fill_value=0)
    t.columns = [f"n_{s}" for s in STATUS]
    t = t.reset_index()
    return t.assign(answers=t[[f"n_{s}" for s in STATUS]].sum(axis=1))
