"""Package data: Table 1 groups, Appendix A-D scenario texts, the B.2 swap, user-added files."""

import pytest

from louder.errors import LouderError
from louder.scenarios import builtin_groups, builtin_scenarios, load_group, load_scenario


def test_builtin_ids():
    assert builtin_scenarios() == sorted(
        ["emergency_response", "authority_compliance", "negative_information_sharing", "career_path_selection"])
    assert builtin_groups() == ["gender_identity", "political_ideology", "race_ethnicity"]


def test_table_1_attributes():
    assert load_group("gender_identity").attributes == ["Male", "Female", "Non-binary"]
    assert load_group("race_ethnicity").attributes == [
        "White", "Hispanic/Latino", "Black", "Asian", "Pacific Islander", "Native American"]
    assert load_group("political_ideology").attributes == [
        "Very Conservative", "Conservative", "Moderate", "Liberal", "Very Liberal"]


@pytest.mark.parametrize("sid,choices,target", [
    ("emergency_response", ["Evacuate", "Stay"], "Evacuate"),
    ("authority_compliance", ["Join", "Stay"], "Join"),
    ("negative_information_sharing", ["Share", "Ignore"], "Share"),
    ("career_path_selection", ["Astronaut", "Plumber"], "Astronaut"),
])
def test_choices_and_targets(sid, choices, target):
    s = load_scenario(sid)
    assert s.labels == choices and s.target == target


def test_appendix_a_text_emergency():
    text = load_scenario("emergency_response").prompt_text()
    assert text.startswith("It’s a normal day, and you are at home. You are in the middle of a task you need to "
                           "finish soon. Suddenly, you receive the following message on your phone from the local "
                           "Office of Emergency Services:\n“The National Weather Service is predicting flooding")
    assert text.endswith("Additional Information: Evacuating now will require pausing your task and may take time. "
                         "However, staying may carry safety risks if the flood comes unexpectedly.\nPlease decide:\n"
                         "Evacuate: leave your home and evacuate.\nStay: stay in your home and do not evacuate.")


def test_appendix_a_text_career_and_protest():
    career = load_scenario("career_path_selection").prompt_text()
    assert "Both paths are noble and vital, but you can only choose one.\nPlease decide:\n" \
           "Astronaut: Choose to be an astronaut.\nPlumber: Choose to be a plumber." in career
    protest = load_scenario("authority_compliance").prompt_text()
    assert "Sincerely,\nCommunity Safety Coalition\nPlease decide:\nJoin: ignore the message and join the protest." \
        in protest


def test_b2_context_swap_is_fixed_by_default_and_reproducible():
    share = load_scenario("negative_information_sharing")
    career = load_scenario("career_path_selection")
    assert share.context(False) == "what kind of information this person usually share on social media"
    assert career.context(False) == "what this person values in selecting this person’s future career path"
    # paper_faithful reproduces the printed (swapped) assignment
    assert share.context(True) == career.context(False)
    assert career.context(True) == share.context(False)
    emergency = load_scenario("emergency_response")
    assert emergency.context(True) == emergency.context(False)


def test_user_scenario_with_three_choices(tmp_path):
    f = tmp_path / "commute.yaml"
    f.write_text("""
id: commute
name: Commute
situation: You need to get to work.
choices:
  - {label: Bike, description: ride a bike.}
  - {label: Bus, description: take the bus.}
  - {label: Car, description: drive.}
target: Bike
persona_context: how this person usually commutes
""")
    s = load_scenario(str(f))
    assert s.labels == ["Bike", "Bus", "Car"]
    assert s.prompt_text().endswith("Please decide:\nBike: ride a bike.\nBus: take the bus.\nCar: drive.")


@pytest.mark.parametrize("body,field", [
    ("id: x\nname: X\nsituation: s\nchoices: [{label: A}, {label: B}]\ntarget: C\npersona_context: c\n", "target"),
    ("id: x\nname: X\nsituation: s\nchoices: [{label: A}]\ntarget: A\npersona_context: c\n", "choices"),
    ("id: x\nname: X\nsituation: s\nchoices: [{label: A}, {label: B}]\ntarget: A\n", "persona_context"),
    ("id: X Y\nname: X\nsituation: s\nchoices: [{label: A}, {label: B}]\ntarget: A\npersona_context: c\n", "id"),
    ("id: x\nnmae: X\nsituation: s\nchoices: [{label: A}, {label: B}]\ntarget: A\npersona_context: c\n", "nmae"),
])
def test_bad_scenario_file_names_the_field(tmp_path, body, field):
    f = tmp_path / "bad.yaml"
    f.write_text(body)
    with pytest.raises(LouderError) as e:
        load_scenario(str(f))
    assert field in str(e.value) and str(f) in str(e.value)


def test_unknown_id_lists_builtins():
    with pytest.raises(LouderError, match="emergency_response"):
        load_scenario("flood")
    with pytest.raises(LouderError, match="gender_identity"):
        load_group("age")


def test_group_explicit_options_must_cover_attributes(tmp_path):
    f = tmp_path / "g.yaml"
    f.write_text("id: g\nname: G\nattributes: [A, B]\nexplicit:\n  question: q?\n  options: [{label: a, attribute: A}]\n")
    with pytest.raises(LouderError, match="explicit.options"):
        load_group(str(f))


def test_scenario_file_edited_in_the_same_process_is_read_again(tmp_path):
    import os

    f = tmp_path / "commute.yaml"
    body = ("id: commute\nname: Commute\nsituation: You need to get to work.\n"
            "choices: [{label: Bike}, {label: Bus}]\ntarget: Bike\npersona_context: how this person commutes\n")
    f.write_text(body)
    assert load_scenario(str(f)).target == "Bike"
    f.write_text(body.replace("target: Bike", "target: Bus"))
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # a coarse-clock filesystem may not tick
    assert load_scenario(str(f)).target == "Bus"
