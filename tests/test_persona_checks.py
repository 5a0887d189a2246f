"""Placeholder, empty and too-short personas and names are invalid, keep their raw text, and their agent's
decision is never asked — in simulation and network runs (population runs and twins' names:
tests/test_population_run.py). Issue 23, point 5."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from louder.config import build_config
from louder.llm.base import Reply, Request
from louder.llm.fake import FakeModel
from louder.llm.registry import BackendInfo, register, unregister
from louder.personas import NameOut, PersonaOut, echoes_placeholder, text_problem
from louder.prompts import Prompts
from louder.simulation import run_experiment
from louder.simulation.network_run import network_task
from louder.task import execute

PROMPTS = Prompts()


@pytest.mark.parametrize("text", [
    "<personalized json string describing the person's persona>",  # what SmolLM2 wrote in issue 23
    "<a detailed string describing the person’s persona>",
    "a detailed string describing the person's persona",
    "\"A detailed string describing the person’s persona.\"",
    "A detailed string describing the persons persona",
    "<A string with the name of Naruto-san's persona>",  # SmolLM2, the demo run
    "<Personality Description of Lena Black, a non-binary person with a background in psychology",
    "Her name is %name% and she likes maps.",
])
def test_placeholder_echoes_are_found(text):
    assert echoes_placeholder(text, PROMPTS)
    assert text_problem(text, "persona", PROMPTS) == "persona echoes the prompt's placeholder"


@pytest.mark.parametrize("text", [
    "<p>María is a 28-year-old artist who has been working as a freelance designer.",  # an HTML tag
    "She likes math <3 and painting landscapes on weekends.",
    "Dana is a retired nurse who describes every person she meets with a detailed story.",
    "A {{}, gender: 'MALE', background: '<img src=",  # junk markup, but no template text
])
def test_texts_that_only_look_alike_are_not_placeholders(text):
    assert not echoes_placeholder(text, PROMPTS)


def test_the_kept_matchers_give_difflibs_own_ratio_on_every_text():
    """The check keeps one matcher per placeholder and its verdicts per text (louder.text_checks): on texts
    near each placeholder, half-way and far (each checked twice), the verdict is the one a fresh
    ``difflib.SequenceMatcher`` gives."""
    import difflib
    import random

    from louder.text_checks import TEMPLATE_TEXT, _plain

    limit = float(PROMPTS.persona_checks["placeholder_similarity"])

    def fresh(text):
        plain = _plain(text)
        return bool(TEMPLATE_TEXT.search(text)) or any(
            p in plain or (len(plain) <= 2 * len(p) and difflib.SequenceMatcher(None, plain, p).ratio() >= limit)
            for p in map(_plain, PROMPTS.placeholders))

    rng = random.Random(0)
    texts = []
    for p in PROMPTS.placeholders:
        words = p.split()
        for k in range(len(words) + 1):  # drop k of its words at random and add a word of a persona
            dropped = set(rng.sample(range(len(words)), k))
            kept = [w for i, w in enumerate(words) if i not in dropped]
            texts.append(" ".join(kept + [rng.choice(["Dana", "likes", "maps", "nurse"])]))
    assert sum(map(fresh, texts)) not in (0, len(texts))  # both verdicts occur
    for text in texts + texts:
        assert echoes_placeholder(text, PROMPTS) == fresh(text), text


@pytest.mark.parametrize("text,kind,why", [
    ("", "persona", "empty persona"), ("   ", "name", "empty name"), (None, "persona", "empty persona"),
    ("Mentor and Dreamer", "persona", "persona too short: 3 words < 5"),  # SmolLM2, the demo run
    ("MADAM_JOHN", "persona", "persona too short: 2 words < 5"),
    ("X", "name", "name too short: 1 letters < 2"),
    ("<a string representing the person’s name>", "name", "name echoes the prompt's placeholder"),
])
def test_empty_short_and_placeholder_texts_are_problems(text, kind, why):
    assert text_problem(text, kind, PROMPTS) == why


def test_the_fake_models_personas_and_names_pass():
    from louder.llm.fake import curated_names

    fake = FakeModel("seed=4,bias=woman:0.9")
    seen = set()
    for i in range(200):
        req = Request(messages=(("user", f"a persona for a woman, number {i}"),), schema=PersonaOut, replicate=str(i))
        out = json.loads(fake.generate(req).text)
        assert text_problem(out["name"], "name", PROMPTS) is None and text_problem(out["persona"], "persona",
                                                                                  PROMPTS) is None
        assert "woman" in out["persona"]  # the bias word still reaches the decision prompt
        name = json.loads(fake.generate(Request(messages=(("user", str(i)),), schema=NameOut)).text)["name"]
        # issue 32: a name a publication printed (the names signal's curated lists), never a made-up string
        assert re.fullmatch(r"[A-Z][a-z]+", name) and name in curated_names()
        seen.add(name)
    assert len(seen) > 30  # every one of the 36 names can be drawn


class EchoModel:
    """Echoes the persona placeholder for Male agents and writes a 3-word persona for Non-binary ones;
    "Stay" for every decision (counted)."""

    def __init__(self):
        self.decisions = 0

    def identity(self):
        return {"backend": "echo23", "model": "test"}

    def generate(self, request):
        text = " ".join(c for _, c in request.messages)
        props = request.schema_json().get("properties", {})
        if "decision" in props:
            self.decisions += 1
            return Reply(text=json.dumps({"decision": "Stay", "rationale": "x"}))
        if "persona" not in props:
            return Reply(text=json.dumps({"name": "Sam Lee"}))
        if re.search(r"demographic: Male\b", text):
            persona = "<personalized json string describing the person's persona>"
        elif re.search(r"demographic: Non-binary\b", text):
            persona = "Mentor and Dreamer"
        else:
            persona = "She is a nurse who likes maps and tea."
        return Reply(text=json.dumps({"name": "Sam Lee", "persona": persona}))


@pytest.fixture
def echo_model():
    model = EchoModel()
    register(BackendInfo("echo23", lambda m, url, c: model, forms=("echo23",), local=True, takes_url=False,
                         model_optional=True))
    yield model
    unregister("echo23")


def check_run(d: pd.DataFrame, p: pd.DataFrame) -> None:
    reasons = {"Male": "persona echoes the prompt's placeholder", "Non-binary": "persona too short: 3 words < 5"}
    for attr, why in reasons.items():
        pa, da = p[p["attribute"] == attr], d[d["attribute"] == attr]
        assert (pa["status"] == "invalid").all() and (pa["reason"] == why).all(), attr
        assert pa["persona"].isna().all() and pa["raw_response"].str.len().gt(0).all()  # raw text kept
        assert (da["status"] == "invalid").all() and da["decision"].isna().all(), attr
        assert da["raw_response"].str.startswith(f"[persona invalid: {why}]").all()
    assert (p.loc[p["attribute"] == "Female", "status"] == "valid").all()
    assert p.loc[p["attribute"] == "Female", "reason"].isna().all()


def test_simulation_never_asks_the_decision_of_a_placeholder_persona(tmp_path, echo_model):
    cfg = build_config(dict(models=["echo23"], scenarios=["emergency_response"], groups=["gender_identity"],
                            agents=5))
    r = run_experiment(cfg, tmp_path)
    check_run(r.decisions, pd.read_parquet(tmp_path / "personas.parquet"))
    assert echo_model.decisions == 5  # the Female agents' only


def test_network_run_never_asks_them_either(tmp_path, echo_model):
    cfg = build_config(dict(models=["echo23"], scenarios=["emergency_response"], groups=["gender_identity"],
                            agents=4, network={"generator": "erdos_renyi", "params": {"p": 1.0}}, rounds=2))
    r = execute(network_task(cfg), cfg, tmp_path)
    d = r.tables["decisions.parquet"]
    check_run(d[d["round"] == 0], r.tables["personas.parquet"])
    assert (d.loc[d["attribute"] != "Female", "status"] == "invalid").all()
    arm = r.tables["no_influence.parquet"]
    assert (arm.loc[arm["attribute"] != "Female", "status"] == "invalid").all()
    assert echo_model.decisions == 4 * 3 + 4 * 2  # the Female agents: rounds 0–2 and the no-influence arm's 1–2
