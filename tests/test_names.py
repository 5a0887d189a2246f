"""Issue 32, item 6: names from curated lists. The fake model's names are first names a publication
printed (the names signal's lists), never made-up strings; a renamed counterfactual twin's name fits
its new attribute by those lists, or louder replaces it and keeps what the model wrote."""

from __future__ import annotations

import json

import pytest

from louder.config import build_config
from louder.llm.base import Request
from louder.llm.fake import FakeModel, curated_names
from louder.populations.twins import fitting_name
from louder.presentation import load_names
from louder.simulation.population_run import population_task
from louder.task import execute

LISTS = {a: s.first for a, s in load_names(None).attributes.items()}
GENDER = ["Male", "Female", "Non-binary"]


def test_the_fake_model_names_only_from_the_curated_lists():
    assert set(curated_names()) == {n for names in LISTS.values() for n in names} and len(curated_names()) == 36
    from pydantic import BaseModel

    class Named(BaseModel):
        name: str

    fake = FakeModel("seed=2")
    names = {json.loads(fake.generate(Request(messages=(("user", f"a name, {i}"),), schema=Named)).text)["name"]
             for i in range(300)}
    assert names <= set(curated_names()) and len(names) == 36


@pytest.mark.parametrize("name, new, fits", [
    ("Greg Miller", "Male", True),            # on the new attribute's list
    ("Emily Miller", "Male", False),          # on the other gender's list only
    ("Alex Miller", "Male", True),            # on no list: not judged
    ("Emily Miller", "Non-binary", True),     # an attribute without a list: not judged
    ("emily", "Male", False),                 # case does not matter
])
def test_a_name_fits_unless_the_lists_give_it_to_another_attribute(name, new, fits):
    out, why = fitting_name(name, new, GENDER, LISTS, seed=1)
    assert (why is None) == fits
    if fits:
        assert out == name
    else:
        first, *rest = out.split()
        assert first in LISTS[new] and rest == name.split()[1:] and "Female name list, not Male's" in why


def test_a_replacement_keeps_what_else_the_twin_is_and_never_the_source_name():
    # preferring the White list: a White male name, whatever the seed
    for seed in range(30):
        out, _ = fitting_name("Emily Clark", "Male", GENDER, LISTS, prefer=[LISTS["White"]], seed=seed)
        assert out.split()[0] in set(LISTS["Male"]) & set(LISTS["White"])
        out, _ = fitting_name("Lakisha", "White", ["White", "Black"], LISTS, prefer=[LISTS["Female"]],
                              avoid="Emily", seed=seed)
        assert out in set(LISTS["White"]) & set(LISTS["Female"]) and out != "Emily"
    # a preference no name meets is dropped, not the replacement
    out, _ = fitting_name("Emily", "Male", GENDER, LISTS, prefer=[["Nobody"]], seed=3)
    assert out in LISTS["Male"]
    assert fitting_name("Emily", "Male", GENDER, LISTS, seed=5) == fitting_name("Emily", "Male", GENDER, LISTS, seed=5)
    assert len({fitting_name("Emily", "Male", GENDER, LISTS, seed=s)[0] for s in range(60)}) > 5


def test_twins_of_a_fake_population_run_have_names_that_fit(tmp_path):
    c = build_config(dict(models=["fake:seed=3"], scenarios=["emergency_response"], population="us_adults",
                          agents=30, twins=True, twin_groups=["gender_identity", "race_ethnicity"]))
    r = execute(population_task(c), c, tmp_path / "run")
    tw = r.tables["twins.parquet"]
    made = tw[~tw["original"]]
    groups = {"gender_identity": GENDER, "race_ethnicity": ["White", "Hispanic/Latino", "Black", "Asian",
                                                            "Pacific Islander", "Native American"]}
    replaced = 0
    for row in made.itertuples():
        if row.twin_status not in ("ok", "unchanged", "failed_check"):
            continue
        first = row.name.split()[0]
        others = [a for a in groups[row.group] if a != row.attribute and first in LISTS.get(a, ())]
        if row.attribute in LISTS:  # the lists speak: the name is on the new list, or on no list of the group
            assert first in LISTS[row.attribute] or not others, row
        if isinstance(row.written_name, str):
            replaced += 1
            assert row.attribute in LISTS and row.written_name != row.name
            written = row.written_name.split()[0]
            assert written not in LISTS[row.attribute] and first in LISTS[row.attribute]
            # what else the twin is: the agent's race (gender twins) or gender (race twins), where listed
            other = row.attr_race_ethnicity if row.group == "gender_identity" else row.attr_gender_identity
            if other in LISTS and set(LISTS[other]) & set(LISTS[row.attribute]):
                assert first in LISTS[other], row
    assert replaced > 5  # the fake model knows no gender: about half its names for Male/Female twins misfit
    assert r.manifest["population"]["twins"]["names_replaced"] == replaced
    assert tw.loc[tw["original"], "written_name"].isna().all()
    # a twin whose new attribute has no list keeps the model's name
    nb = made[(made["attribute"] == "Non-binary") & (made["twin_status"] == "ok")]
    assert len(nb) and nb["written_name"].isna().all()
