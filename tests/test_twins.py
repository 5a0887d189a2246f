"""Counterfactual twin re-expression and its difflib check, on generated texts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from louder.populations.twins import group_lexicon, re_express, twin_check
from louder.scenarios import load_group

GENDER = group_lexicon(load_group("gender_identity"))
RACE = group_lexicon(load_group("race_ethnicity"))
FILLER = ["likes", "maps", "and", "tea", "works", "in", "Ohio", "as", "a", "nurse", ".", ",", "daily", "white", "walls"]
FEMALE = ["woman", "She", "her", "herself", "mother", "female", "she"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(FILLER + FEMALE + ["Maria"]), min_size=1, max_size=40),
       st.sampled_from(["Male", "Non-binary"]))
def test_re_expressed_text_passes_and_keeps_everything_else(words, new):
    text = " ".join(words)
    twin = re_express(text, GENDER, "Female", new, "Maria", "Sam")
    status = twin_check(text, twin, GENDER, "Female", new, "Maria", "Sam")
    assert status == "ok" or (status == "unchanged" and twin == text)
    # the filler words are untouched, in order
    keep = [w for w in words if w in FILLER]
    assert [w for w in twin.split() if w in FILLER] == keep
    assert not any(w in twin.split() for w in ("woman", "herself", "mother", "Maria"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(FILLER + FEMALE), min_size=2, max_size=40), st.data())
def test_any_change_outside_the_slots_fails_the_check(words, data):
    text = " ".join(words)
    twin = re_express(text, GENDER, "Female", "Male", "Maria", "Sam").split()
    i = data.draw(st.integers(0, len(twin) - 1))
    if twin[i] in FILLER:
        twin[i] = "zebra"  # a change no slot allows
        assert twin_check(text, " ".join(twin), GENDER, "Female", "Male", "Maria", "Sam") == "failed_check"


def test_case_sensitive_race_words_leave_colours_alone():
    text = "Jamal is a Black man who paints white walls black."
    twin = re_express(text, RACE, "Black", "Asian", "Jamal", "Kenji")
    assert twin == "Kenji is a Asian man who paints white walls black."
    assert twin_check(text, twin, RACE, "Black", "Asian", "Jamal", "Kenji") == "ok"


def test_group_without_lexicon_entry_uses_labels_and_phrases():
    from louder.scenarios import Group

    g = Group(id="region", name="Region", attributes=["North", "South"])
    lex = group_lexicon(g, {"North": "from the north"})
    assert lex.rename and lex.words["North"]["term"] == ["North", "from the north"]
    assert re_express("Ana is from the north.", lex, "North", "South", "Ana", "Bo") == "Bo is South."
