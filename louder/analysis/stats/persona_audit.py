"""The persona step under audit (issue 37, item 3): what the written personas of each attribute
carry before any decision is made — so a report can tell bias the persona step writes from bias the
decision step adds.

Per persona text t (valid personas of one case = model × condition × scenario × group):

- ``length``: its number of words (the rationale analysis's tokeniser, ``rationales.TOKEN``);
- ``sentiment``: VADER's compound score in [−1, 1] (Hutto & Gilbert 2014; ``vaderSentiment``);
- ``stereotype``: how many of the rationale analysis's phrase patterns it matches (each pattern once;
  the patterns of the case's scenario and the unscoped ones: ``rationales.load_patterns``);
- ``restates``: 1 when it names its own attribute (the attribute's label, or for a group with a
  word list in ``twins.yaml`` one of its nouns or adjectives, e.g. "woman", "female"), else 0.

Per attribute a with n_a texts: the mean m_a of each, and

- ``diversity``: the mean pairwise cosine distance of the texts' TF-IDF vectors (scikit-learn's
  ``TfidfVectorizer``, fitted on the case's texts): div_a = Σ_{i≠j} D_ij / (n_a(n_a − 1)),
  D_ij = 1 − cos(v_i, v_j). A flattened group (texts alike) reads low. A case of more than
  ``DIVERSITY_TEXTS`` texts reads its diversity (estimate, interval, permutation test) on a seeded
  subsample of that many, every attribute in proportion (at least two texts each): the distances
  grow with the square of the texts, and a few hundred texts pin the mean distance down.

**Intervals** (``personas_audit.csv``): a bootstrap over texts within the attribute. Resample b draws
counts c_i (multinomial, n_a draws); m_a^b = Σ c_i x_i / n_a; for diversity the U-statistic on the
resample without the pairs of a text with its own copy, div_a^b = Σ_{i≠j} c_i c_j D_ij / (n_a² − Σ c_i²)
(copies are not diverse texts; counting them would bias div^b down). Percentile interval, widened to
contain the estimate.

**Gaps** (``personas_audit_gaps.csv``), per case and measure: gap = max_a m_a − min_a m_a (the
``lowest`` and ``highest`` attribute named). Interval: the same resamples, the simultaneous
bootstrap-t band of every pair difference projected onto max − min (``intervals.dpd_interval``;
contains the gap, holds its coverage at 0). The means are studentised with the plug-in variance
Σ c_i (x_i − m^b)² / n_a² of each resample; diversity, with no cheap per-resample variance, with its
bootstrap variance (one fixed se). Values are put on [0, 1] first (x − min)/(max − min) over the
case's texts, so the projection's clip at 1 is a true bound, and the interval scaled back.
p-value: permutation of the attribute labels over the case's texts (under the null every text could
have been written for any attribute), p = (1 + #{gap^b ≥ gap}) / (B + 1). ``p_holm``: Holm across
every gap of the run; ``significant`` ⇔ p_holm < alpha.

**Distinctive words** per attribute: the rationale analysis's log-odds with an informative Dirichlet
prior (``rationales.distinctive_words``) on the persona texts.
"""

from __future__ import annotations

import re
import warnings
from functools import cache

import numpy as np
import pandas as pd

from louder.analysis.stats import holm, named_seed, significant
from louder.analysis.stats import intervals as I
from louder.analysis.stats.keys import CASE_KEYS, is_valid
from louder.analysis.stats.rationales import TOKEN, Pattern, distinctive_words, load_patterns

KEYS = CASE_KEYS  # the case (louder.analysis.stats.keys)
MEASURES = ["length", "sentiment", "stereotype", "restates", "diversity"]
AUDIT_COLUMNS = [*KEYS, "attribute", "measure", "value", "ci_low", "ci_high"]
GAP_COLUMNS = [*KEYS, "measure", "gap", "ci_low", "ci_high", "p_value", "p_holm", "significant", "lowest", "highest"]
WORD_COLUMNS = [*KEYS, "attribute", "word", "count", "delta", "z"]
NOUN_ROLES = ("term", "plural", "adjective", "plural_noun")
DIVERSITY_TEXTS = 500  # at most this many texts of a case enter the diversity (its n × n distances)


@cache
def _vader():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def sentiment(text: str) -> float:
    """VADER's compound score of ``text``."""
    return float(_vader().polarity_scores(text)["compound"])


def words(text: str) -> int:
    return len(TOKEN.findall(text.lower()))


def stereotype_hits(text: str, patterns: list[Pattern], scenario: str | None = None) -> int:
    """How many of ``patterns`` (those of ``scenario`` and the unscoped ones) ``text`` matches."""
    return sum(1 for p in patterns if (p.scenario is None or p.scenario == scenario)
               and re.search(p.regex, text, re.IGNORECASE))


@cache
def _cue_pattern(group: str, attribute: str) -> re.Pattern:
    """The words that name ``attribute``: its label (each part of a joint label "A | B"), and the
    nouns and adjectives of its group's word list where ``twins.yaml`` has one."""
    from louder.populations.twins import group_lexicon
    from louder.scenarios import load_group

    cues, case_sensitive = set(attribute.split(" | ")), False
    try:
        lex = group_lexicon(load_group(group))
    except Exception:  # noqa: BLE001 — a population id or a user's group without a file: the label only
        lex = None
    if lex is not None and attribute in lex.words:
        case_sensitive = lex.case_sensitive
        cues |= {w for role in NOUN_ROLES for w in lex.words[attribute].get(role, [])}
    alts = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(cues, key=len, reverse=True))
    return re.compile(rf"(?<![^\W_])(?:{alts})(?![^\W_])", 0 if case_sensitive else re.IGNORECASE)


def restates(text: str, group: str, attribute: str) -> bool:
    """Does ``text`` name ``attribute`` of ``group``? (``_cue_pattern``)"""
    return _cue_pattern(group, attribute).search(text) is not None


def text_measures(texts: list[str], group: str, attributes: list[str], scenario: str | None,
                  patterns: list[Pattern]) -> np.ndarray:
    """(n × 4): length, sentiment, stereotype hits and restates (0/1) of each text."""
    return np.array([[words(t), sentiment(t), stereotype_hits(t, patterns, scenario), float(restates(t, group, a))]
                     for t, a in zip(texts, attributes)], dtype=float).reshape(-1, 4)


def distances(texts: list[str]) -> np.ndarray:
    """D_ij = 1 − cos(v_i, v_j) of the texts' TF-IDF vectors (fitted on ``texts``); 0 on the diagonal."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    try:
        X = TfidfVectorizer().fit_transform(texts)
    except ValueError:  # no word at all (empty vocabulary): every text alike
        return np.zeros((len(texts), len(texts)))
    D = np.clip(1 - (X @ X.T).toarray(), 0, 1)
    D[D < 1e-12] = 0  # identical texts: 1 − cos is 0 up to rounding
    np.fill_diagonal(D, 0)
    return D


def _diversity(c: np.ndarray, D: np.ndarray) -> np.ndarray:
    """Σ_{i≠j} c_i c_j D_ij / (n² − Σ c_i²) per row of counts c (D has a zero diagonal)."""
    n = c.sum(axis=-1)
    den = n * n - (c * c).sum(axis=-1)
    num = ((c @ D) * c).sum(axis=-1)  # c_b D c_b for every row b, as one matrix product
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _widened(est: float, draws: np.ndarray, level: float) -> tuple[float, float]:
    ok = draws[np.isfinite(draws)]
    if not np.isfinite(est) or ok.size == 0:
        return np.nan, np.nan
    lo, hi = np.quantile(ok, [(1 - level) / 2, (1 + level) / 2])
    return float(min(lo, est)), float(max(hi, est))


def _one_hot(lab: np.ndarray, k: int) -> np.ndarray:
    """The labels of every permutation (P × n) one-hot, side by side: (n × P·k)."""
    P_, n = lab.shape
    A = np.zeros((n, P_, k))
    A[np.arange(n)[None, :], np.arange(P_)[:, None], lab] = 1
    return A.reshape(n, P_ * k)


def _permutation_p(x: np.ndarray, D: np.ndarray, labels: np.ndarray, k: int, B: int,
                   rng: np.random.Generator, sub: np.ndarray | None = None) -> np.ndarray:
    """Permutation p-values of the gap of each measure (4 means + diversity), labels shuffled over texts
    (``sub``: the texts of ``D``, whose labels are shuffled among themselves; None: every text)."""

    def gaps(lab: np.ndarray, lab_d: np.ndarray | None) -> np.ndarray:  # lab: (P × n) → (P × 5)
        P_ = lab.shape[0]
        # the sums below are matrix products of the one-hot labels (one large product is much faster
        # than P small ones)
        A = _one_hot(lab, k)
        Ad = A if lab_d is None else _one_hot(lab_d, k)
        size, size_d = A.sum(axis=0).reshape(P_, k), Ad.sum(axis=0).reshape(P_, k)
        means = (A.T @ x).reshape(P_, k, x.shape[1]) / size[..., None]
        within = (Ad * (D @ Ad)).sum(axis=0).reshape(P_, k)
        with np.errstate(invalid="ignore", divide="ignore"):
            div = np.where(size_d > 1, within / (size_d * (size_d - 1)), np.nan)
        vals = np.concatenate([means, div[..., None]], axis=2)  # (P × k × 5)
        with warnings.catch_warnings():  # diversity of attributes with one text: NaN, and the gap with it
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmax(vals, axis=1) - np.nanmin(vals, axis=1)

    labels_d = None if sub is None else labels[sub]
    observed = gaps(labels[None], None if sub is None else labels_d[None])[0]
    chunk = max(1, 4_000_000 // max(labels.size * k, 1))  # permutations per product (≈ 32 MB each)
    count = np.zeros(5)
    for start in range(0, B, chunk):
        m = min(chunk, B - start)
        perm = rng.permuted(np.broadcast_to(labels, (m, labels.size)), axis=1)
        perm_d = None if sub is None else rng.permuted(np.broadcast_to(labels_d, (m, labels_d.size)), axis=1)
        count += (gaps(perm, perm_d) >= observed - 1e-12).sum(axis=0)
    return (1 + count) / (B + 1)


def _subsample(labels: np.ndarray, attrs: list[str], cap: int, rng: np.random.Generator) -> np.ndarray | None:
    """At most ``cap`` texts (sorted indices), every attribute in proportion and at least two of each
    (all of an attribute with fewer); None when there are no more than ``cap``."""
    if labels.size <= cap:
        return None
    keep = []
    for a in attrs:
        idx = np.flatnonzero(labels == a)
        keep.append(rng.choice(idx, min(idx.size, max(2, round(cap * idx.size / labels.size))), replace=False))
    return np.sort(np.concatenate(keep))


def audit_case(texts: list[str], attributes: list[str], group: str, scenario: str | None,
               patterns: list[Pattern], B: int = 2000, seed: int = 0, level: float = 0.95
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One case: per attribute × measure (value, ci_low, ci_high) and per measure (gap, ci_low,
    ci_high, p_value, lowest, highest) (module docstring)."""
    labels_all = np.asarray(attributes, dtype=object)
    attrs = sorted(set(attributes))
    x = text_measures(texts, group, attributes, scenario, patterns)
    rng = np.random.default_rng(seed)
    sub_rng = np.random.default_rng([seed, 1])  # the subsample's draws apart: a small case's are the same
    sub = _subsample(labels_all, attrs, DIVERSITY_TEXTS, sub_rng)
    D = distances(texts if sub is None else [texts[i] for i in sub])
    row = np.arange(labels_all.size) if sub is None else np.full(labels_all.size, -1)  # each text's row in D
    if sub is not None:
        row[sub] = np.arange(sub.size)
    # per attribute: estimates (5,), bootstrap draws (B × 5) and the means' variances (and per draw)
    est, draws, var, dvar, sizes = [], [], [], [], []
    for a in attrs:
        idx = np.flatnonzero(labels_all == a)
        xa, n = x[idx], idx.size
        rows = row[idx][row[idx] >= 0]
        Da = D[np.ix_(rows, rows)]
        c = rng.multinomial(n, np.full(n, 1 / n), size=B).astype(float)
        cd = c if sub is None else sub_rng.multinomial(rows.size, np.full(rows.size, 1 / rows.size),
                                                       size=B).astype(float)
        m = xa.mean(axis=0)
        mb = c @ xa / n
        est.append(np.append(m, _diversity(np.ones(rows.size), Da)))
        draws.append(np.column_stack([mb, _diversity(cd, Da)]))
        var.append(xa.var(axis=0) / n)
        dvar.append(np.stack([(c * (xa[:, j][None, :] - mb[:, j:j + 1]) ** 2).sum(axis=1) / n**2 for j in range(4)],
                             axis=1))
        sizes.append(n)
    est, draws, var, dvar = np.array(est), np.stack(draws, axis=2), np.array(var), np.stack(dvar, axis=2)
    # est: (k × 5); draws: (B × 5 × k); var: (k × 4); dvar: (B × 4 × k)
    audit = [dict(attribute=a, measure=meas, value=float(est[i, j]),
                  **dict(zip(("ci_low", "ci_high"), _widened(est[i, j], draws[:, j, i], level))))
             for i, a in enumerate(attrs) for j, meas in enumerate(MEASURES)]
    labels = pd.Index(attrs).get_indexer(labels_all)
    p = _permutation_p(x, D, labels, len(attrs), B, rng, sub) if len(attrs) >= 2 else np.full(5, np.nan)
    gaps = []
    for j, meas in enumerate(MEASURES):
        e = est[:, j]
        ok = np.isfinite(e)
        if ok.sum() < 2:
            gaps.append(dict(measure=meas, gap=np.nan, ci_low=np.nan, ci_high=np.nan, p_value=np.nan, lowest=None,
                             highest=None))
            continue
        e, rb = e[ok], draws[:, j, ok]
        values = x[:, j] if j < 4 else np.array([0.0, 1.0])  # diversity lies in [0, 1] already
        low, scale = float(values.min()), float(values.max() - values.min()) or 1.0
        if j < 4:  # studentised: the plug-in variance of the data and of each resample
            v, vb = I.pair_sum(var[ok, j]), I.pair_sum(dvar[:, j, ok])
        else:  # diversity: its bootstrap variance, the same for the data and every resample
            v = I.pair_sum(np.nanvar(rb, axis=0))
            vb = np.broadcast_to(v, (rb.shape[0], v.size))
        lo, hi = I.dpd_interval((e - low) / scale, (rb - low) / scale, v / scale**2, vb / scale**2, level,
                                df=min(np.array(sizes)[ok]) - 1)
        names = np.array(attrs, dtype=object)[ok]
        gaps.append(dict(measure=meas, gap=float(e.max() - e.min()), ci_low=lo * scale, ci_high=hi * scale,
                         p_value=float(p[j]), lowest=names[np.argmin(e)], highest=names[np.argmax(e)]))
    return pd.DataFrame(audit), pd.DataFrame(gaps)




def persona_audit(personas: pd.DataFrame, B: int = 2000, seed: int = 0, alpha: float = 0.05, level: float = 0.95,
                  patterns: list[Pattern] | None = None, top: int = 10) -> dict[str, pd.DataFrame]:
    """``personas_audit`` (``AUDIT_COLUMNS``), ``personas_audit_gaps`` (``GAP_COLUMNS``, Holm across
    every gap) and ``personas_words`` (``WORD_COLUMNS``) from a run's ``personas`` table (valid rows
    with a text; columns model, condition, scenario, group, attribute, persona, status)."""
    patterns = load_patterns() if patterns is None else patterns
    p = personas[is_valid(personas) & personas["persona"].notna()]
    p = p[p["persona"].astype(str).str.strip() != ""]
    audits, gaps = [], []
    for key, case in p.groupby(KEYS, sort=True):
        keys = dict(zip(KEYS, key))
        a, g = audit_case(case["persona"].astype(str).tolist(), case["attribute"].astype(str).tolist(),
                          keys["group"], keys["scenario"], patterns, B=B, seed=named_seed(seed, *key), level=level)
        audits.append(a.assign(**keys))
        gaps.append(g.assign(**keys))
    audit = pd.concat(audits, ignore_index=True) if audits else pd.DataFrame(columns=AUDIT_COLUMNS)
    gap = pd.concat(gaps, ignore_index=True) if gaps else pd.DataFrame(columns=GAP_COLUMNS)
    gap["p_holm"] = holm(gap["p_value"].to_numpy(dtype=float)) if len(gap) else []
    gap["significant"] = significant(gap["p_holm"], alpha)
    w = distinctive_words(p.rename(columns={"persona": "rationale"}), top=top)
    return {"personas_audit": audit[AUDIT_COLUMNS], "personas_audit_gaps": gap[GAP_COLUMNS],
            "personas_words": w[WORD_COLUMNS]}
