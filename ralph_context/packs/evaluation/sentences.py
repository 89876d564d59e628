"""Sentence splitting without spaCy: punctuation rules that cover ordinary English prose.

A sentence ends at ``.``, ``!``, ``?`` or ``…`` (optionally followed by closing quotes or
brackets) when whitespace and then a capital letter, digit, quote or bracket follows, and the
word before the stop is not a known abbreviation (``Mr.``, ``e.g.``, ``U.S.``) or a single
initial. Line breaks between paragraphs always end a sentence. Decimals (``3.14``) never
split because no whitespace follows the dot.
"""

from __future__ import annotations

import re

__all__ = ["split_sentences"]

_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e cf al fig no vol approx inc ltd co corp "
    "jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k a.m p.m".split()
)
_END = re.compile(r"""([.!?\u2026]+["')\]\u201d\u2019]*)\s+(?=["'(\[\u201c\u2018]?[A-Z0-9])""")
_PARAGRAPH = re.compile(r"\n\s*\n")


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, in order; blank pieces dropped."""
    sentences: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        start = 0
        for match in _END.finditer(paragraph):
            before = paragraph[start : match.start(1)].split()
            last = before[-1].lower().rstrip(".") if before else ""
            if match.group(1) == "." and (last in _ABBREVIATIONS or len(last) == 1):
                continue
            sentences.append(paragraph[start : match.end(1)])
            start = match.end()
        sentences.append(paragraph[start:])
    return [" ".join(s.split()) for s in sentences if s.strip()]
