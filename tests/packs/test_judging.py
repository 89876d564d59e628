"""Reading a verdict out of a judge model's reply, and the JSON extraction variants share."""

from __future__ import annotations

import pytest

from ralph_context.errors import InferenceError, InvalidInput, UnparseableReply
from ralph_context.inference.replies import strip_thinking
from ralph_context.packs.evaluation.judging import (
    Verdict,
    json_objects,
    judge_messages,
    parse_verdict,
)
from ralph_context.packs.evaluation.variants import (
    checked_dimensions,
    parse_variants,
    variant_labels,
    variant_messages,
)

# --- the prompt ---------------------------------------------------------------------------


def test_the_judge_prompt_holds_the_criteria_the_response_and_the_json_form_asked_for() -> None:
    system, user = judge_messages("Hello there.", "Greets the user")
    assert system["role"] == "system" and user["role"] == "user"
    content = str(user["content"])
    assert "Greets the user" in content and "Hello there." in content
    assert '{"pass": true or false, "reason":' in content and '"score": 0-10}' in content


# --- JSON -----------------------------------------------------------------------------------


def test_a_bare_json_reply_is_read_with_reason_and_score() -> None:
    raw = '{"pass": true, "reason": "It greets.", "score": 9}'
    assert parse_verdict(raw) == Verdict(True, "It greets.", 9.0)


def test_a_fenced_json_block_is_read_and_the_prose_around_it_ignored() -> None:
    raw = (
        "Let me check the criteria. The reply should pass, true enough.\n"
        '```json\n{"pass": false, "reason": "No greeting.", "score": 2.5}\n```\nDone.'
    )
    assert parse_verdict(raw) == Verdict(False, "No greeting.", 2.5)


def test_a_json_object_inside_prose_is_found_by_balanced_braces() -> None:
    raw = 'My answer: {"pass": true, "reason": "Uses {braces} in a string", "score": 7} - ok.'
    assert parse_verdict(raw) == Verdict(True, "Uses {braces} in a string", 7.0)


def test_an_object_without_pass_is_skipped_for_a_later_one_that_has_it() -> None:
    raw = 'Input was {"name": "x"}. Verdict object: {"pass": false, "reason": "bad"}'
    assert parse_verdict(raw) == Verdict(False, "bad", None)


def test_pass_written_as_a_word_and_passed_as_the_key_are_accepted() -> None:
    assert parse_verdict('{"pass": "YES", "reason": "r"}').passed is True
    assert parse_verdict('{"passed": false, "reason": "r"}').passed is False


def test_a_score_out_of_range_is_clamped_and_a_non_number_dropped() -> None:
    assert parse_verdict('{"pass": true, "score": 14}').score == 10.0
    assert parse_verdict('{"pass": false, "score": -3}').score == 0.0
    assert parse_verdict('{"pass": true, "score": "8/10"}').score == 8.0
    assert parse_verdict('{"pass": true, "score": "high"}').score is None
    assert parse_verdict('{"pass": true, "score": true}').score is None


# --- reasoning blocks -----------------------------------------------------------------------


def test_think_blocks_are_dropped_before_reading_so_their_json_does_not_count() -> None:
    raw = (
        '<think>Maybe {"pass": true}? No, the greeting is missing.</think>\n'
        '{"pass": false, "reason": "No greeting.", "score": 1}'
    )
    assert parse_verdict(raw) == Verdict(False, "No greeting.", 1.0)


def test_everything_before_a_lone_closing_think_tag_is_reasoning() -> None:
    raw = 'the prompt opened the tag... {"pass": true}</think>{"pass": false, "reason": "x"}'
    assert strip_thinking(raw) == '{"pass": false, "reason": "x"}'
    assert parse_verdict(raw).passed is False


def test_an_unclosed_leading_think_leaves_nothing_and_says_to_raise_max_tokens() -> None:
    raw = '<think>The criteria say {"pass": true} would be right if'
    assert strip_thinking(raw) == ""
    with pytest.raises(UnparseableReply, match=r"only reasoning .*raise max_tokens"):
        parse_verdict(raw)


# --- the keyword fallback -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "passed"),
    [
        ("Verdict: PASS\nReason: it greets", True),
        ("**Verdict:** fail", False),
        ("The response is short.\nResult = passed", True),
        ("pass: no", False),
        ("- Final verdict: YES, it does", True),
        ("PASS", True),
        ("fail.", False),
        ("**NO**", False),
    ],
)
def test_a_line_that_states_the_verdict_is_read(raw: str, passed: bool) -> None:
    assert parse_verdict(raw).passed is passed


def test_the_keyword_fallback_takes_reason_and_score_lines() -> None:
    raw = "Verdict: FAIL\nReason: no greeting at all\nScore: 3/10"
    assert parse_verdict(raw) == Verdict(False, "no greeting at all", 3.0)


def test_without_a_reason_line_the_whole_reply_is_the_reason() -> None:
    raw = "It lacks a greeting.\nVerdict: fail"
    assert parse_verdict(raw) == Verdict(False, raw, None)


@pytest.mark.parametrize(
    "raw",
    [
        "This should pass, and that is true for most greetings.",
        "I think it would pass. true",
        "The verdict is that it passes.",
        "Verdict: passing grade",
        "PASS or FAIL? Hard to say.",
        '{"result": "ok", "reason": "fine"}',
        '{"pass": "maybe", "reason": "unsure"}',
        "Verdict: PASS\nVerdict: FAIL",
    ],
)
def test_pass_and_true_in_prose_or_contradicting_verdicts_are_refused_not_guessed(
    raw: str,
) -> None:
    with pytest.raises(UnparseableReply, match="no verdict") as caught:
        parse_verdict(raw)
    assert repr(raw[:200]) in str(caught.value)


def test_an_unparseable_reply_is_quoted_to_200_characters_and_is_an_inference_error() -> None:
    raw = "blah " * 100
    with pytest.raises(UnparseableReply) as caught:
        parse_verdict(raw)
    assert repr(raw[:200] + "...") in str(caught.value)
    assert isinstance(caught.value, InferenceError)
    assert not isinstance(caught.value, InvalidInput)


def test_an_empty_reply_is_refused_as_empty() -> None:
    with pytest.raises(UnparseableReply, match="reply is empty"):
        parse_verdict("  \n")


# --- json_objects ---------------------------------------------------------------------------


def test_json_objects_yields_fenced_blocks_first_then_objects_left_to_right() -> None:
    text = '{"a": 1} then ```\n{"b": 2}\n``` and {"c": {"d": 3}} and {broken'
    assert list(json_objects(text)) == [{"b": 2}, {"a": 1}, {"b": 2}, {"c": {"d": 3}}]


def test_json_objects_skips_arrays_and_invalid_candidates() -> None:
    assert list(json_objects('[1, 2] {not json} {"ok": "}"}')) == [{"ok": "}"}]


def test_json_objects_gives_up_on_a_flood_of_braces_quickly() -> None:
    assert list(json_objects("{" * 100_000)) == []
    assert list(json_objects("{}" * 100 + '{"late": 1}')) == [{}] * 64


# --- variants (they read replies with the same extraction) ----------------------------------


def test_variants_are_read_from_fenced_json_with_the_baseline_as_imperative() -> None:
    raw = '<think>hmm</think>```json\n{"passive": "The file is deleted.", "imperative": "x"}\n```'
    assert parse_variants(raw, "Delete the file.") == {
        "imperative": "Delete the file.",
        "passive": "The file is deleted.",
    }


def test_variants_grouped_by_dimension_are_flattened_and_empty_ones_dropped() -> None:
    raw = 'Sure! {"mood": {"interrogative": "Delete it?", "declarative": ""}, "past": "Deleted."}'
    assert parse_variants(raw, "Delete it.") == {
        "imperative": "Delete it.",
        "interrogative": "Delete it?",
        "past": "Deleted.",
    }


def test_a_variants_reply_without_a_string_object_is_refused_with_a_quote() -> None:
    with pytest.raises(UnparseableReply, match=r"no JSON object of variants.*'Here you go: \[1\]'"):
        parse_variants("Here you go: [1]", "Delete it.")
    with pytest.raises(UnparseableReply):
        parse_variants('{"passive": 3}', "Delete it.")


def test_dimensions_are_checked_deduplicated_and_name_their_labels() -> None:
    assert checked_dimensions(["voice", "mood", "voice"]) == ("voice", "mood")
    assert variant_labels(["mood", "voice"]) == [
        "interrogative",
        "declarative",
        "active",
        "passive",
    ]
    with pytest.raises(InvalidInput, match=r"unknown dimension\(s\) 'aspect'.*tense \(present/"):
        checked_dimensions(["mood", "aspect"])
    with pytest.raises(InvalidInput, match="at least one"):
        checked_dimensions([])


def test_the_variants_prompt_lists_each_label_and_refuses_an_empty_baseline() -> None:
    (message,) = variant_messages("Delete the file.", ("person",))
    content = str(message["content"])
    assert '"Delete the file."' in content
    assert all(f"- {label}:" in content for label in variant_labels(["person"]))
    with pytest.raises(InvalidInput, match="baseline must not be empty"):
        variant_messages("   ", ("mood",))
