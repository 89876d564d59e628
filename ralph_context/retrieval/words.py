"""The content words of a query: how long it is in words that can match.

BM25's evidence for an item is measured against what the query could have matched
(``scoring.lexical_evidence``): an item sharing one word of a ten-word question has matched
less of it than one sharing one word of a three-word question. Counting the query's words
here, with one stop-word list, keeps the engine and the fit (``benchmarks/retrieval/fit.py``)
counting the same way.
"""

from __future__ import annotations

import re

__all__ = ["STOP_WORDS", "content_words"]

# NLTK's English stop words, plus the pieces a contraction leaves once split on "'".
STOP_WORDS = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very can will just
    don should now d ll m o re s t ve y ain aren couldn didn doesn hadn hasn haven isn ma
    mightn mustn needn shan shouldn wasn weren won wouldn
    """.split()
)

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")


def content_words(text: str) -> set[str]:
    """The content words of ``text``: identifiers split at ``_``, ``.``, ``/`` and camel
    case, lowercased, stop words and one-character tokens dropped."""
    words = _WORD.findall(_CAMEL.sub(" ", text).lower())
    return {w for w in words if len(w) > 1 and w not in STOP_WORDS}
