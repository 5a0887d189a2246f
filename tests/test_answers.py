"""Status classification: valid, invalid, refused, error — nothing dropped or defaulted."""

import pytest

from louder.llm.answers import classify, match_choice, parse_json_object
from louder.llm.base import Reply
from louder.prompts import Prompts

M = Prompts().refusal_markers
L = ["Evacuate", "Stay"]


@pytest.mark.parametrize("answer,expected", [
    ("Evacuate", "Evacuate"), ("evacuate", "Evacuate"), ("Evacuate.", "Evacuate"), ('"Stay"', "Stay"),
    (" STAY ", "Stay"), ("I choose to evacuate", "Evacuate"), ("Evacuate or Stay", None), ("Leave", None),
    ("", None), ("Evacuated", None),
])
def test_match_choice(answer, expected):
    assert match_choice(answer, L) == expected


def test_parse_json_object_finds_wrapped_json():
    assert parse_json_object('Sure! ```json\n{"decision": "Stay", "rationale": "x"}\n```') == \
        {"decision": "Stay", "rationale": "x"}
    assert parse_json_object('{"decision": "Stay", "rat') is None
    assert parse_json_object("[1, 2]") is None


def test_valid():
    c = classify(Reply(text='{"decision": "Evacuate", "rationale": "kids"}'), L, "decision", M)
    assert (c.status, c.choice, c.rationale) == ("valid", "Evacuate", "kids")


def test_off_list_is_invalid_with_rationale_kept():
    c = classify(Reply(text='{"decision": "Run", "rationale": "fast"}'), L, "decision", M)
    assert (c.status, c.choice, c.rationale) == ("invalid", None, "fast")


def test_unparseable_and_truncated_are_invalid():
    assert classify(Reply(text="hmm"), L, "decision", M).status == "invalid"
    c = classify(Reply(text='{"decision": "Stay", "rationale": "aaa', finish_reason="length"), L, "decision", M)
    assert c.status == "invalid" and "truncated" in c.note


def test_refusals():
    assert classify(Reply(text="I'm sorry, but I can't help with that."), L, "decision", M).status == "refused"
    assert classify(Reply(text="I’m sorry, I cannot decide."), L, "decision", M).status == "refused"
    assert classify(Reply(text="", refusal="policy"), L, "decision", M).status == "refused"
    # a valid answer whose rationale happens to say "I can't" is still valid
    c = classify(Reply(text='{"decision": "Stay", "rationale": "I can\'t leave my dog"}'), L, "decision", M)
    assert c.status == "valid"


def test_error():
    c = classify(Reply(error="transport failure after retries: APIConnectionError"), L, "decision", M)
    assert c.status == "error" and c.choice is None
