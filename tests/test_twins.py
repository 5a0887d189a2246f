"""Counterfactual twins: the word-list re-expression (with its grammar), its check, the model-rewrite
check for groups without a word list, and the call count (issue 23, point 4)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from louder.populations import grammar
from louder.populations.twins import (_doc, group_lexicon, mentions, name_problem, re_express, rewrite_check,
                                      rewrite_cues, twin_calls_per_agent, twin_check)
from louder.scenarios import Group, load_group

GENDER = group_lexicon(load_group("gender_identity"))
RACE = group_lexicon(load_group("race_ethnicity"))
FILLER = ["likes", "maps", "and", "tea", "works", "in", "Ohio", "as", "a", "nurse", ".", ",", "daily", "white", "walls"]
FEMALE = ["woman", "She", "her", "herself", "mother", "female", "she", "daughters", "grandmother", "actress"]
CASES = yaml.safe_load((Path(__file__).parent / "data" / "twin_sentences.yaml").read_text("utf-8"))["cases"]
PAIRS = [(c, new) for c in CASES for new in ("Female", "Male", "Non-binary") if new in c]


def check(text, twin, old, new, old_name="Ana Ruiz", new_name="Ben Cole", lex=GENDER):
    return twin_check(text, twin, lex, old, new, old_name, new_name)


@pytest.mark.parametrize("case,new", PAIRS, ids=[f"{i}-{c['from']}>{n}" for i, (c, n) in enumerate(PAIRS)])
def test_real_sentences_get_the_expected_twin_and_pass(case, new):
    """45 persona sentences (9 by SmolLM2 in the issue-23 demo run, verbatim), 90 twins: pronoun case by
    role, verb agreement with singular they both ways, kin and occupation words, titles, names."""
    old_name, new_name = case.get("old_name", "Ana Ruiz"), case.get("new_name", "Ben Cole")
    twin = re_express(case["text"], GENDER, case["from"], new, old_name, new_name)
    assert twin == case[new]
    verdict = check(case["text"], twin, case["from"], new, old_name, new_name)
    assert verdict.status == "ok" and verdict.reason is None, verdict


def test_the_issues_twins_are_fixed_and_the_old_ones_fail_the_check():
    text = "Ana calls her every day. She is cautious, and she lives alone with her daughters."
    assert re_express(text, GENDER, "Female", "Male", "Ana", "Ben") == \
        "Ben calls him every day. He is cautious, and he lives alone with his sons."
    assert re_express(text, GENDER, "Female", "Non-binary", "Ana", "Sky") == \
        "Sky calls them every day. They are cautious, and they live alone with their children."
    # what louder wrote before issue 23, now refused with the reason
    for twin, new, reason in [
        ("Ben calls his every day. He is cautious, and he lives alone with his sons.", "Male", "pronoun case"),
        ("Sky calls them every day. They is cautious, and they lives alone with their children.", "Non-binary",
         "verb agreement"),
        ("Ben calls him every day. He is cautious, and he lives alone with his daughters.", "Male",
         "old attribute word left: 'daughters'"),
    ]:
        v = check(text, twin, "Female", new, "Ana", "Ben" if new == "Male" else "Sky")
        assert v.status == "failed_check" and reason in v.reason, (twin, v)


@pytest.mark.parametrize("word,male,nb", [("daughters", "sons", "children"), ("grandmother", "grandfather",
                                                                             "grandparent"),
                                          ("actress", "actor", "actor"), ("waitresses", "waiters", "servers"),
                                          ("policewoman", "policeman", "police officer"), ("Mrs", "Mr", "Mx"),
                                          ("mother-in-law", "father-in-law", "parent-in-law")])
def test_plurals_and_inflections_are_in_the_lists(word, male, nb):
    text = f"Ana is a proud {word} here."
    assert re_express(text, GENDER, "Female", "Male") == f"Ana is a proud {male} here."
    assert re_express(text, GENDER, "Female", "Non-binary") == f"Ana is a proud {nb} here."


def test_neutral_words_of_a_non_binary_persona_stay():
    # "parents", "partner", "child" describe anyone: they are targets only, never matched
    text = "They live with their parents, their partner and their child."
    assert re_express(text, GENDER, "Non-binary", "Female") == "She lives with her parents, her partner and her child."


def test_an_old_name_joined_by_underscore_or_hyphen_is_replaced_and_a_kept_one_fails():
    text = "Maria Lopez posts as @Maria_Lopez; Maria-Lopez is her pen name."
    twin = re_express(text, GENDER, "Female", "Male", "Maria Lopez", "Sam Reed")
    assert twin == "Sam Reed posts as @Sam_Reed; Sam-Reed is his pen name."
    assert check(text, twin, "Female", "Male", "Maria Lopez", "Sam Reed").status == "ok"
    kept = twin.replace("@Sam_Reed", "@Maria_Lopez")
    v = check(text, kept, "Female", "Male", "Maria Lopez", "Sam Reed")
    assert v.status == "failed_check" and v.reason.startswith("changed beyond") or "old name" in v.reason


@pytest.mark.parametrize("name,why", [
    ("Lizzy King, A.M.", "not a plausible name"),
    ("#️⃣🔥 Blaze", "not a plausible name"),
    ("🔥🔥", "not a plausible name"),
    ("#LizzyKing", "not a plausible name"),
    ("<a string representing the person’s name>", "placeholder"),
    ("A string representing the person's name", "placeholder"),
    ("Ana Ruiz", "the new name is the old name"),
    ("Mrs Ana Smith", "attribute word"),
    ("X", "not a plausible name"),
])
def test_a_twin_with_an_implausible_name_fails(name, why):
    text = "Ana Ruiz is a nurse. She likes maps."
    twin = re_express(text, GENDER, "Female", "Male", "Ana Ruiz", name)
    v = check(text, twin, "Female", "Male", "Ana Ruiz", name)
    assert v.status == "failed_check" and why in v.reason, v


@pytest.mark.parametrize("name", ["J. R. Smith", "Mary-Ann O'Neil", "Martin Luther King Jr.", "José Álvarez", "李伟",
                                  "D'Angelo Brooks"])
def test_plausible_names_pass(name):
    assert name_problem(name, "Ana Ruiz") is None


def test_articles_follow_the_replaced_word():
    text = "Jamal is a Black man and an African American poet."
    assert re_express(text, RACE, "Black", "Asian", "Jamal", "Kenji") == \
        "Kenji is an Asian man and an Asian poet."
    assert re_express(text, RACE, "Black", "White", "Jamal", "Kenji") == "Kenji is a White man and a White poet."
    assert check(text, re_express(text, RACE, "Black", "Asian", "Jamal", "Kenji"), "Black", "Asian", "Jamal", "Kenji",
                 lex=RACE).status == "ok"
    assert re_express("She is an actress.", GENDER, "Female", "Non-binary") == "They are an actor."


def test_case_sensitive_race_words_leave_colours_alone():
    text = "Jamal is a Black man who paints white walls black."
    twin = re_express(text, RACE, "Black", "Asian", "Jamal", "Kenji")
    assert twin == "Kenji is an Asian man who paints white walls black."
    assert check(text, twin, "Black", "Asian", "Jamal", "Kenji", lex=RACE).status == "ok"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(FILLER + FEMALE + ["Maria"]), min_size=1, max_size=40),
       st.sampled_from(["Male", "Non-binary"]))
def test_re_expressed_text_passes_and_keeps_everything_else(words, new):
    text = " ".join(words)
    twin = re_express(text, GENDER, "Female", new, "Maria", "Sam")
    v = check(text, twin, "Female", new, "Maria", "Sam")
    assert v.status == "ok", (twin, v)
    # the filler words are untouched, in order, up to agreement (she likes → they like, a → an)
    canon = {grammar.canonical(w) for w in FILLER}
    keep = [grammar.canonical(w) for w in words if w in FILLER]
    assert [grammar.canonical(w) for w in twin.split() if grammar.canonical(w) in canon] == keep
    assert not any(w in twin.split() for w in ("woman", "herself", "mother", "Maria", "daughters", "actress"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(FILLER + FEMALE), min_size=2, max_size=40), st.data())
def test_any_change_outside_the_slots_fails_the_check(words, data):
    text = " ".join(words)
    twin = re_express(text, GENDER, "Female", "Male", "Maria", "Sam").split()
    i = data.draw(st.integers(0, len(twin) - 1))
    if twin[i] in FILLER:
        twin[i] = "zebra"  # a change no slot allows
        assert check(text, " ".join(twin), "Female", "Male", "Maria", "Sam").status == "failed_check"


def test_every_attribute_of_a_group_lists_the_same_roles():
    for gid, entry in _doc()["groups"].items():
        roles = [set(a) for a in entry["attributes"].values()]
        assert all(r == roles[0] for r in roles), gid
    # a word listed under two roles of one attribute is one the grammar can decide
    for a, roles in GENDER.words.items():
        seen: dict[str, set[str]] = {}
        for r, ws in roles.items():
            for w in ws:
                seen.setdefault(w, set()).add(r)
        for w, rs in seen.items():
            if len({GENDER.targets[b][r] for r in rs for b in GENDER.targets}) > len(GENDER.targets):
                assert rs in ({"possessive", "object"}, {"possessive", "possessive_pronoun"},
                              {"subject_is", "subject_has"}), (a, w, rs)


def test_verb_agreement_round_trips_over_the_verb_list():
    for v in grammar.lists()["verbs"]:
        third = grammar.singular_verb(v)
        assert third and grammar.plural_verb(third) == v, (v, third)
    for third, base in [("goes", "go"), ("does", "do"), ("has", "have"), ("is", "are"), ("studies", "study"),
                        ("teaches", "teach"), ("focuses", "focus"), ("misses", "miss"), ("uses", "use"),
                        ("enjoys", "enjoy"), ("doesn't", "don't"), ("Lives", "Live")]:
        assert grammar.plural_verb(third) == base and grammar.singular_verb(base) == third
    for word in ("went", "can", "moved", "always", "herself", "class", "focus"):
        assert grammar.plural_verb(word) is None, word
    for word in ("went", "can", "moved", "would", "themselves"):
        assert grammar.singular_verb(word) is None, word


def test_article_for():
    assert [grammar.article_for(w) for w in ("Asian", "Black", "honest", "unique", "European", "8-year-old",
                                             "18", "11", "110", "hour", "actor")] == \
        ["an", "a", "an", "a", "a", "an", "an", "an", "a", "an", "an"]


# --- groups without a word list: a model rewrite ----------------------------------------------------

EDU = Group(id="education", name="Education", attributes=["No high school diploma", "Bachelor's degree or higher"])
PHRASES = {"No high school diploma": "without a high school diploma",
           "Bachelor's degree or higher": "with a bachelor's degree or higher"}
OLD = rewrite_cues("Bachelor's degree or higher", PHRASES["Bachelor's degree or higher"], "No high school diploma",
                   PHRASES["No high school diploma"])
NEW = rewrite_cues("No high school diploma", PHRASES["No high school diploma"], "Bachelor's degree or higher",
                   PHRASES["Bachelor's degree or higher"])
PERSONA = ("Dana Kim is a civil engineer with a bachelor's degree in engineering who designs bridges in Denver. "
           "A proud college graduate, she spends weekends hiking with her two dogs and volunteers at a food bank.")


def test_a_group_without_a_word_list_is_a_model_rewrite():
    assert group_lexicon(EDU) is None
    assert OLD.words >= {"bachelor's", "degree", "higher"} and NEW.words >= {"high", "school", "diploma"}
    assert mentions(PERSONA, OLD) and not mentions("Dana likes hiking with her dogs.", OLD)


def test_a_faithful_rewrite_passes_and_records_its_similarity():
    good = PERSONA.replace("with a bachelor's degree in engineering", "without a high school diploma")
    v = rewrite_check(PERSONA, good, OLD, NEW, "Dana Kim")
    assert v.status == "ok" and v.reason is None and v.similarity >= 0.9


@pytest.mark.parametrize("twin,reason", [
    # the pre-issue-23 twin: the bare label put in, the old degree kept
    (PERSONA.replace("a civil engineer", "No high school diploma"), "old attribute words left"),
    (PERSONA.replace("with a bachelor's degree in engineering ", ""), "new attribute missing"),
    (PERSONA.replace("with a bachelor's degree in engineering", "without a high school diploma")
     .replace("Dana Kim", "Dee Park"), "name"),
    (PERSONA.replace("with a bachelor's degree in engineering", "without a high school diploma")
     .replace(" and volunteers at a food bank", ", loves jazz, paints at night and cooks for her neighbours"),
     "similarity"),
    ("Fake persona 123456: likes maps and tea, works in town and decides at random.", "new attribute missing"),
])
def test_an_unfaithful_rewrite_fails_with_the_reason(twin, reason):
    v = rewrite_check(PERSONA, twin, OLD, NEW, "Dana Kim")
    assert v.status == "failed_check" and reason in v.reason, v


def test_the_fake_models_rewrite_fails_the_check():
    from louder.llm.base import Request
    from louder.llm.fake import FakeModel
    from louder.personas import RewriteOut
    from louder.prompts import Prompts

    ask = Prompts().twin_rewrite("education", PHRASES["Bachelor's degree or higher"],
                                 PHRASES["No high school diploma"], PERSONA)
    reply = FakeModel("seed=1").generate(Request(messages=(("user", ask),), schema=RewriteOut))
    twin = RewriteOut.model_validate_json(reply.text).persona
    v = rewrite_check(PERSONA, twin, OLD, NEW, "Dana Kim")
    assert v.status == "failed_check", (twin, v)


def test_twin_calls_per_agent():
    gender, ideology = load_group("gender_identity"), load_group("political_ideology")
    assert twin_calls_per_agent([gender, ideology, EDU]) == {"twins": 2 + 4 + 1, "names": 2, "rewrites": 1}
    assert twin_calls_per_agent([EDU], "no_persona") == {"twins": 1, "names": 0, "rewrites": 0}
