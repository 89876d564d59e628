"""Reading what a model wrote: its reasoning dropped, its decoration peeled off.

Models rarely answer with the bare text asked for. Reasoning models think aloud in
``<think>`` blocks; chat models wrap an answer in a Markdown fence or lead with a label
("Summary:", "Here is the rewritten prompt:"). Every caller that wants the answer itself (the
judge, variants, lifecycle summaries, prompt rewrites) reads it through these functions, so
a new quirk is handled once.
"""

from __future__ import annotations

import re

__all__ = ["FENCE", "answer_text", "quote", "strip_thinking"]

FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_WHOLE_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*[ \t]*\n(.*?)\n?```$", re.DOTALL)
# A lead-in line that is only a label: "Summary:", "**Rewritten prompt:**", "Here is the
# summary:". A line that says more ("Summary of the error in src/app.py:") is content.
_LEAD_IN = re.compile(
    r"^[ \t*_#>]*(?:here(?:'s|\s+is)\s+(?:the|a|your)\s+)?"
    r"(?:(?:improved|rewritten|revised|new)\s+)?(?:summary|prompt|version)"
    r"[ \t*_]*:[ \t*_]*\n",
    re.IGNORECASE,
)
_QUOTED = 200


def strip_thinking(text: str) -> str:
    """``text`` without its reasoning blocks; empty if it is all reasoning.

    Handles ``<think>...</think>`` anywhere, a lone ``</think>`` (everything before it is
    reasoning) and an unclosed ``<think>`` (everything after it is: the model ran out of
    tokens while thinking).
    """
    text = _THINK.sub("", text)
    lowered = text.lower()
    closing = lowered.rfind("</think>")
    if closing != -1:
        text = text[closing + len("</think>") :]
        lowered = text.lower()
    opening = lowered.find("<think>")
    if opening != -1:
        text = text[:opening]
    return text.strip()


def answer_text(reply: str) -> str:
    """The answer in a free-text reply: no reasoning, no lead-in label line, and the
    contents of a fence when the whole answer is one fenced block. Empty when nothing is
    left."""
    text = strip_thinking(reply)
    text = _LEAD_IN.sub("", text, count=1).strip()
    whole = _WHOLE_FENCE.match(text)
    if whole is not None and "```" not in whole.group(1):  # one block, not several
        text = whole.group(1).strip()
    return text


def quote(text: str) -> str:
    """The start of a reply, for an error message."""
    head = text[:_QUOTED]
    return repr(head + "..." if len(text) > _QUOTED else head)
