"""Stored text made inert for the frame it is shown in.

Every face wraps stored content in a frame of its own: the Search prompt's
``<search-results>`` and ``<user-query>`` tags, Ralph's ``## Relevant Context`` heading
and ``### [TYPE]`` blocks, Claude Code's ``<system-reminder>`` around a hook's
``additionalContext``, Ralph v2's ``### mem-`` entries and ``<!-- tags -->`` lines. Stored
content is data, so it must not be able to end or open any of them:

- **No line of its own.** Content is folded onto the line its face gives it (a newline
  becomes `` ⏎ ``), so it can never start a heading, a fence, a quote, a list item or a
  role marker (``User:``), whatever it holds.
- **No tag.** Every ``<`` that could start a tag, a closing tag, a comment or a processing
  instruction or a chat template's marker (``<x``, ``</x``, ``<!``, ``<?``, ``<|``, and
  their full-width and small look-alikes)
  becomes ``&lt;``, and a comment's end ``-->`` becomes ``--&gt;``: the frame's tags and
  any host's (``<system-reminder>``, ``<additionalContext>``, ``<function_calls>``) cannot
  be written by content. A model reads ``&lt;div>`` as the text it is; ``a < b`` is kept.
- **Nothing invisible** (``privacy.visible``): what a reviewer sees is what the model reads.

Every function here is idempotent (rendering rendered text changes nothing), so a face
that renders text another face already rendered (the Ralph hook over MCP) is safe.
"""

from __future__ import annotations

import re

from ralph_context.privacy.visible import visible

__all__ = ["FOLD", "inert", "inert_json", "label", "one_line"]

# What a newline of stored content becomes on its one line.
FOLD = " ⏎ "
# A "<" that could open or close a tag, a comment or a declaration (a closing one also
# with spaces before its "/", which lenient readers skip), in ASCII, full-width (U+FF1C) or
# small (U+FE64) form. "a < b" is no tag and stays.
_TAG_OPEN = re.compile(r"[<\uff1c\ufe64](?=[/!?|A-Za-z\uff0f]|\s+[/\uff0f])")
_COMMENT_END = re.compile(r"--[>\uff1e\ufe65]")
_SPACES = re.compile(r"[ \t]+")


def inert(text: str) -> str:
    """``text`` with nothing invisible and no tag a frame could read; lines kept."""
    text = visible(text)
    if "<" not in text and "-->" not in text and not _has_lookalike(text):
        return text
    return _COMMENT_END.sub("--&gt;", _TAG_OPEN.sub("&lt;", text))


def inert_json(value: object) -> object:
    """A JSON value with every string in it (keys too) made :func:`inert`: what a tool
    answers a model is data, whichever field a stored text sits in."""
    if isinstance(value, str):
        return inert(value)
    if isinstance(value, list):
        return [inert_json(member) for member in value]
    if isinstance(value, dict):
        return {inert(str(key)): inert_json(member) for key, member in value.items()}
    return value


def _has_lookalike(text: str) -> bool:
    return not text.isascii() and any(c in text for c in "\uff1c\ufe64\uff1e\ufe65")


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` inert and on one line: each run of line breaks becomes :data:`FOLD`, other
    runs of spaces one space; cut to ``limit`` characters with ``...``."""
    lines = [_SPACES.sub(" ", line).strip() for line in inert(text).split("\n")]
    folded = FOLD.join(line for line in lines if line)
    if limit is not None and len(folded) > limit:
        folded = folded[: max(0, limit - 3)].rstrip() + "..."
    return folded


def label(text: str, limit: int = 80) -> str:
    """A short attribute a face prints inside its own brackets (a provenance, a file
    name): on one line, its square brackets made round and its ``·`` a dash, so it
    cannot close the face's brackets or pose as a second field."""
    kept = one_line(text, limit).replace(FOLD, " ")
    return kept.translate(_LABEL_BREAKERS).strip()


_LABEL_BREAKERS = str.maketrans({"[": "(", "]": ")", "·": "-"})
