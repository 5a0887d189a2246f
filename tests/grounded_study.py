"""A synthetic human study with a known data-generating process (issue 44): the people of
examples/humans-grounded.csv and examples/profiles-grounded.csv, and of the tests and the benchmark
of grounded agents (tests/test_grounded.py, tests/test_fidelity.py, benchmarks/grounded_coverage.py).

The process (every draw independent):

- gender identity: Male, Female, Non-binary, ``n`` people each;
- ``last_flood`` (what the person did at the last flood warning): ``evacuated`` with probability
  SHARE[gender] (Male 0.35, Female 0.75, Non-binary 0.55), else ``stayed``;
- ``household``: ``alone`` or ``family``, ½ each — it changes nothing;
- the decision: Evacuate with probability P_EVACUATE[last_flood] (0.95 after evacuating, 0.05 after
  staying), whatever the gender: the people's gap comes from their past, not from the attribute;
- ``retest`` (half of the respondents, drawn at random, were asked again): a second, independent draw
  at the same probability; empty for the others;
- a profile without a human answer (the unlabelled file) is drawn the same way, without a decision.

So the true Evacuate rates are TRUTH = SHARE·0.95 + (1 − SHARE)·0.05: Male 0.365, Female 0.725,
Non-binary 0.545 (DPD 0.36), and a person's retest agreement is 0.95² + 0.05² = 0.905 whatever their past.

``READS`` is the fake model whose grounded agents decide exactly as the people do: the persona of an
agent grounded on ``last_flood`` repeats the word, and the word moves the target's probability from ½
to 0.95 or 0.05 (``shift``, louder/llm/fake.py). Its attribute-only agents, told nothing of the past,
decide at ½ whatever the attribute: they flatten the gap.

``python tests/grounded_study.py`` writes the two example files (seeds 44 and 45).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

SHARE = {"Male": 0.35, "Female": 0.75, "Non-binary": 0.55}
P_EVACUATE = {"evacuated": 0.95, "stayed": 0.05}
TRUTH = {a: s * P_EVACUATE["evacuated"] + (1 - s) * P_EVACUATE["stayed"] for a, s in SHARE.items()}
SCENARIO = "emergency_response"
# the fake model whose grounded agents decide as the people do (the profile's words move the target)
READS = "pick=Evacuate,shift=evacuated:0.45,shift=stayed:-0.45"
ROOT = Path(__file__).resolve().parents[1]


def profiles(seed: int, n: int, prefix: str = "p", share: dict | None = None) -> pd.DataFrame:
    """``n`` people per gender identity: respondent, scenario, gender_identity, last_flood, household,
    and each person's probability of Evacuate (``p``, not a column of the files). ``share``: P(evacuated)
    per attribute (default SHARE)."""
    rng = np.random.default_rng(seed)
    rows = []
    for a, share in (share or SHARE).items():
        flood = np.where(rng.random(n) < share, "evacuated", "stayed")
        home = np.where(rng.random(n) < 0.5, "alone", "family")
        for i in range(n):
            rows.append(dict(respondent=f"{prefix}{a[0]}{i:04d}", scenario=SCENARIO, gender_identity=a,
                             last_flood=flood[i], household=home[i], p=P_EVACUATE[flood[i]]))
    return pd.DataFrame(rows)


def people(seed: int, n: int, share: dict | None = None) -> pd.DataFrame:
    """The study: ``profiles`` with a decision and, for a random half, a retest."""
    df = profiles(seed, n, prefix="r", share=share)
    rng = np.random.default_rng(seed + 1_000_000)
    p = df["p"].to_numpy()
    df["decision"] = np.where(rng.random(len(df)) < p, "Evacuate", "Stay")
    again = rng.random(len(df)) < 0.5
    df["retest"] = np.where(again, np.where(rng.random(len(df)) < p, "Evacuate", "Stay"), "")
    return df


# Agents as the fake model makes them (louder/llm/fake.py), each a rule for an agent's probability of the
# target given its person's attribute and profile — the same rules the fake specs below give a run:
_MEAN = float(np.mean(list(TRUTH.values())))
DOUBLE = {a: _MEAN + 2 * (r - _MEAN) for a, r in TRUTH.items()}  # every gap twice the people's
MIRROR = {a: _MEAN - (r - _MEAN) for a, r in TRUTH.items()}  # every gap the other way round
MODELS = {
    # reads the profile as the people decide (a grounded agent of READS)
    "reads": lambda attribute, p: p,
    # knows the attribute's rate and nothing of the person (biases on the attribute words at TRUTH)
    "ignores": lambda attribute, p: np.vectorize(TRUTH.get)(attribute),
    # every group the same (no word acts: the plain fake model)
    "flat": lambda attribute, p: np.full(len(p), 0.5),
    # doubles every gap (biases on the attribute words at DOUBLE)
    "double": lambda attribute, p: np.vectorize(DOUBLE.get)(attribute),
    # reads the profile the wrong way round (shifts of the opposite sign)
    "wrong": lambda attribute, p: 1 - p,
    # reads the profile but is far too eager to evacuate (a biased, informative agent)
    "eager": lambda attribute, p: np.minimum(1.0, p + 0.3),
    # every gap turned round (biases on the attribute words at the people's rates mirrored about their mean)
    "mirror": lambda attribute, p: np.vectorize(MIRROR.get)(attribute),
}
SPECS = {"reads": READS, "flat": "",
         "double": "pick=Evacuate," + ",".join(f"bias={a.lower()}:{r:.3f}" for a, r in DOUBLE.items())}


def agent_draws(model: str, attribute, p, rng) -> np.ndarray:
    """Sample-mode decisions (1 = the target) of agents of ``model`` for people with these attributes and
    probabilities."""
    q = MODELS[model](np.asarray(attribute), np.asarray(p, dtype=float))
    return (rng.random(len(q)) < q).astype(float)


def ppi_frames(seed: int, n: int, N: int, model: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A study of ``n`` respondents and ``N`` unlabelled profiles per attribute with their agents'
    predictions, as ``louder.analysis.stats.anchoring.ppi_table`` takes them."""
    rng = np.random.default_rng(seed + 2_000_000)
    h, u = people(seed, n), profiles(seed + 3_000_000, N, prefix="u")
    case = dict(model="fake", scenario=SCENARIO, group="gender_identity")
    humans = pd.DataFrame(dict(case, attribute=h["gender_identity"], target=(h["decision"] == "Evacuate").astype(float),
                               prediction=agent_draws(model, h["gender_identity"], h["p"], rng)))
    agents = pd.DataFrame(dict(case, attribute=u["gender_identity"],
                               prediction=agent_draws(model, u["gender_identity"], u["p"], rng)))
    return humans, agents


def fidelity_pairs(seed: int, n: int, model: str, share: dict | None = None) -> pd.DataFrame:
    """The respondents of a study (``share``: P(evacuated) per attribute, default SHARE) with their
    agents' decisions, as ``louder.analysis.stats.fidelity.case_fidelity`` takes them."""
    h = people(seed, n, share)
    rng = np.random.default_rng(seed + 4_000_000)
    agent = np.where(agent_draws(model, h["gender_identity"], h["p"], rng) == 1, "Evacuate", "Stay")
    return pd.DataFrame(dict(attribute=h["gender_identity"], human=h["decision"], agent=agent,
                             human_target=h["decision"] == "Evacuate", agent_target=agent == "Evacuate",
                             retest=h["retest"].replace("", None)))


STUDY_HEADER = """\
# SYNTHETIC DATA - NOT A REAL SURVEY. 600 invented respondents made by louder's authors with a known
# data-generating process (tests/grounded_study.py), to show grounded agents and the fidelity measure
# (docs/how-to/check-agents-against-humans.md). Say nothing about people from it.
# Per gender identity 200 people; last_flood = evacuated with probability 0.35 (Male), 0.75 (Female),
# 0.55 (Non-binary), else stayed; household alone or family (1/2 each, no effect); each chose Evacuate
# with probability 0.95 after evacuating and 0.05 after staying, whatever the gender. True rates: Male
# 0.365, Female 0.725, Non-binary 0.545. retest: half of them asked again (an independent draw).
"""
PROFILES_HEADER = """\
# SYNTHETIC DATA - NOT A REAL POPULATION. 1,500 invented profiles without an answer (500 per gender
# identity), drawn like the respondents of examples/humans-grounded.csv (tests/grounded_study.py): the
# unlabelled set of prediction-powered inference (docs/how-to/check-agents-against-humans.md).
"""


def write_examples(root: Path = ROOT) -> None:
    study = people(44, 200)[["respondent", "scenario", "gender_identity", "last_flood", "household", "decision",
                             "retest"]]
    (root / "examples" / "humans-grounded.csv").write_text(STUDY_HEADER + study.to_csv(index=False), "utf-8")
    pool = profiles(45, 500, prefix="u")[["respondent", "gender_identity", "last_flood", "household"]]
    (root / "examples" / "profiles-grounded.csv").write_text(PROFILES_HEADER + pool.to_csv(index=False), "utf-8")


if __name__ == "__main__":
    write_examples(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
