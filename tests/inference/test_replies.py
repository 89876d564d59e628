"""Reading a model's free-text answer, and holding a model summary to a summary's bounds."""

from __future__ import annotations

import pytest

from ralph_context.inference.replies import answer_text
from ralph_context.lifecycle.abstractive import complete_sentences, read_summary
from ralph_context.lifecycle.summarize import MAX_SUMMARY_CHARS

LONG = "x" * 2000


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("The pool was exhausted.", "The pool was exhausted."),
        ("<think>hmm\nok</think>\nThe pool was exhausted.", "The pool was exhausted."),
        ("reasoning without a tag</think>The pool.", "The pool."),
        ("<think>ran out of tokens while thinking", ""),
        ("Summary:\nThe pool was exhausted.", "The pool was exhausted."),
        ("**Here is the rewritten prompt:**\nList three risks.", "List three risks."),
        ("```text\nList three risks.\n```", "List three risks."),
        ("Here is the summary:\n```\nThe pool.\n```", "The pool."),
        # A label inside the answer is the answer's own text, not a lead-in.
        ("Output format:\n1. risk\n2. fix", "Output format:\n1. risk\n2. fix"),
        # Fences inside a longer answer stay: the prompt may show code.
        ("Run:\n```\nmake test\n```\nthen fix.", "Run:\n```\nmake test\n```\nthen fix."),
        # A first line that says more than a label is content, not a lead-in.
        (
            "Summary of the error in src/foo.py line 3:\nKeyError x",
            "Summary of the error in src/foo.py line 3:\nKeyError x",
        ),
        (
            "Prompting rules for the agent:\n1. Be brief",
            "Prompting rules for the agent:\n1. Be brief",
        ),
        # Two fenced blocks are not one fence around the answer.
        (
            "```python\na=1\n```\nThen run:\n```\nmake\n```",
            "```python\na=1\n```\nThen run:\n```\nmake\n```",
        ),
    ],
)
def test_answer_text_drops_reasoning_labels_and_a_whole_answer_fence(
    reply: str, answer: str
) -> None:
    assert answer_text(reply) == answer


def test_a_summary_is_used_only_when_it_is_shorter_than_the_item() -> None:
    assert read_summary("A short summary.", LONG) == "A short summary."
    assert read_summary("A summary longer than the item it replaces.", "Short item.") is None
    assert read_summary("<think>only thoughts</think>", LONG) is None
    assert read_summary("   ", LONG) is None


def test_a_summary_has_its_whitespace_folded() -> None:
    assert read_summary("Line one.\n\n  Line two.", LONG) == "Line one. Line two."


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("The build failed in `make test`", ""),
        ("Fixed the parser (see foo.py)", ""),
        ("The run used e.g.", ""),
        ("One. Two (see a.py). Three e.g. four", "One. Two (see a.py)."),
        ('He said "done." Then', 'He said "done."'),
        ("Version 1.2 shipped. Next", "Version 1.2 shipped."),
    ],
)
def test_complete_sentences_end_only_at_real_sentence_ends(text: str, kept: str) -> None:
    assert complete_sentences(text, 600) == kept


def test_a_reply_over_the_limit_keeps_the_whole_sentences_that_fit() -> None:
    sentence = "The pool of the payments service was exhausted by a leaked connection. "
    reply = sentence * 12  # about 850 characters
    summary = read_summary(reply, LONG)
    assert summary is not None
    assert len(summary) <= MAX_SUMMARY_CHARS and summary.endswith("connection.")
    assert read_summary("word " * 400, LONG) is None  # no sentence ends within the limit


def test_a_cut_off_summary_keeps_only_complete_sentences() -> None:
    cut = "The build failed on config/db.yaml. The fix was in refund_ha"
    assert read_summary(cut, LONG, cut_off=True) == "The build failed on config/db.yaml."
    assert read_summary("No sentence ends here at al", LONG, cut_off=True) is None
    # The same text, not cut off, is kept whole.
    assert read_summary(cut, LONG) == cut
