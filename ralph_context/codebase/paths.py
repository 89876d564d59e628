"""Which words of an item could be paths of the repository: what an edit touched, what a
command named, the files of a traceback, a file a note mentions.

A word is a candidate when it has a folder separator or ends in a file extension
(``src/config.py``, ``/work/app/src/x.py``, ``README.md``; ``src/x.py:12`` gives
``src/x.py``). Most candidates are not files at all (``e.g.``, ``v1.2``, a URL's host):
the repository (``Repository.inside``) keeps only those that are its files now. Reading
is bounded: the start and end of a long text (a traceback's cause is at its end), and so
many distinct candidates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

__all__ = ["MAX_CANDIDATES", "candidates"]

# Distinct candidates looked at per item (each costs a stat).
MAX_CANDIDATES = 32
# Characters read at each end of a long text.
_EDGE_CHARS = 8_000
_WORD = re.compile(r"[\w./@+~-]+")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,10}$")


def candidates(texts: Iterable[str]) -> Iterator[str]:
    """The path-like words of ``texts``, in order, each once, at most
    :data:`MAX_CANDIDATES`."""
    seen: set[str] = set()
    for text in texts:
        for word in _WORD.findall(_edges(text)):
            word = word.rstrip(".")
            if word in seen or not _pathlike(word):
                continue
            seen.add(word)
            yield word
            if len(seen) >= MAX_CANDIDATES:
                return


def _edges(text: str) -> str:
    if len(text) <= 2 * _EDGE_CHARS:
        return text
    return f"{text[:_EDGE_CHARS]}\n{text[-_EDGE_CHARS:]}"


def _pathlike(word: str) -> bool:
    if len(word) < 2 or word.startswith(("-", "//", "~")) or set(word) <= {".", "/"}:
        return False
    return "/" in word or _EXTENSION.search(word) is not None
