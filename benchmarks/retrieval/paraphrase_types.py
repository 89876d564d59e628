"""What the paraphrase set is made of, and the rule that makes a query a paraphrase.

A query is a paraphrase of its targets when it shares no content word with any of them:
after lowercasing, splitting identifiers (``snake_case``, ``camelCase``, ``a.b/c``) and
dropping stop words, no word of the query equals a word of the target or shares its crude
stem (:func:`stem`). Full-text search then has nothing to match on; only meaning is left.
The rule is one function (:func:`shared_stems`), used by the set's tests and by nothing
that ranks.

The stores are written as text, one entry per line (indented lines continue it), because
they are read and edited as a loop's log is: ``key type iteration[ tag,tag]: content`` for
an item, ``key[ key]: question`` for a query (``-`` for an absent one).
"""

from __future__ import annotations

from dataclasses import dataclass

from ralph_context.models import ContextType
from ralph_context.retrieval.words import STOP_WORDS, content_words

__all__ = [
    "STOP_WORDS",
    "Item",
    "Query",
    "Store",
    "content_words",
    "parse_items",
    "parse_queries",
    "shared_stems",
    "stem",
]


def stem(word: str) -> str:
    """A crude stem: a plural ``s`` dropped (not ``ss``), then the first five letters."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:5]


def _clash(a: str, b: str) -> bool:
    # Equal stems, or a stem of three letters or more that begins the other ("fix"/"fixed",
    # "pool"/"pooling"): stricter than equal stems alone, which miss short words' forms.
    short, long = sorted((stem(a), stem(b)), key=len)
    return short == long or (len(short) >= 3 and long.startswith(short))


def shared_stems(query: str, text: str) -> set[str]:
    """Words of ``query`` that ``text`` also has, as a word or a crude stem; empty when the
    query is a paraphrase of ``text``."""
    theirs = content_words(text)
    return {w for w in content_words(query) if any(_clash(w, other) for other in theirs)}


def _entries(block: str) -> list[tuple[str, str]]:
    """(head, body) of each entry: a line at column 0 starts one, indented lines continue it."""
    entries: list[list[str]] = []
    for line in block.strip("\n").splitlines():
        if not line.strip():
            continue
        if line[0].isspace():
            entries[-1].append(line.strip())
        else:
            entries.append([line])
    pairs = []
    for lines in entries:
        head, _, first = lines[0].partition(": ")
        pairs.append((head.strip(), " ".join([first.strip(), *lines[1:]])))
    return pairs


def parse_items(block: str) -> tuple[Item, ...]:
    """Items from ``key type iteration[ tag,tag]: content`` entries.

    Raises:
        ValueError: An unknown type or a malformed head.
    """
    items = []
    for head, content in _entries(block):
        key, kind, iteration, *tags = head.split()
        found = tuple(tags[0].split(",")) if tags else ()
        items.append(Item(key, ContextType(kind), int(iteration), content, found))
    return tuple(items)


def parse_queries(block: str) -> tuple[Query, ...]:
    """Queries from ``key[ key]: question`` entries; ``-`` as the key for an absent one."""
    return tuple(
        Query(text, () if head == "-" else tuple(head.split())) for head, text in _entries(block)
    )


@dataclass(frozen=True)
class Item:
    """One item as a loop stores it; ``key`` names it in the set (it is not stored)."""

    key: str
    type: ContextType
    iteration: int
    content: str
    tags: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """Everything of the item a search could match: its content and its tags."""
        return " ".join((self.content, *self.tags))


@dataclass(frozen=True)
class Query:
    """A question asked in other words; ``targets`` are the keys of the items that answer it
    (any one is enough), none when the store holds no answer (an absent query)."""

    text: str
    targets: tuple[str, ...] = ()

    @property
    def absent(self) -> bool:
        return not self.targets


@dataclass(frozen=True)
class Store:
    """One project's store: its items in the order a loop stored them, and its queries."""

    project: str
    description: str
    items: tuple[Item, ...]
    queries: tuple[Query, ...]

    @property
    def last_iteration(self) -> int:
        return max(item.iteration for item in self.items)
