"""The push gate: what memory may put into a prompt that did not ask it anything.

A pull (``get_relevant_context``, ``ralph-context search``, the Search prompt) is a
question, and its threshold (``retrieval.min_relevance_score`` and a share of the query's
best) keeps the best few of whatever the store holds: the caller wants the closest answer
there is. A push (the agents' ``UserPromptSubmit`` hook, Ralph 1.x's section, Ralph v2's
``memories.md``) goes with every prompt, most of which no note answers ("rename the
variable tmp", "write a haiku"); a threshold relative to the best passes the store's best
few for those too, and the relevance score cannot say "nothing here": its cosine half
counts the query's own first choice fully whatever its cosine. So an item is pushed only
when its own raw evidence says it is about the prompt::

    cosine + lexical_weight · lexical >= min_evidence    (semantic tier)
    lexical >= min_lexical                               (text tier: no cosine)

``cosine`` is the item's raw cosine to the prompt (its breakdown's ``semantic``) and
``lexical`` BM25's evidence (``lexical``: its score over the query's best hit plus a knee
of rare words' worth, so a best hit sharing one common word counts little). A prompt none of
whose items pass gets nothing.

Why these features, per item (``benchmarks/push``, held out by project, conversation and
question; docs/benchmarks.md#the-push-gate): an everyday prompt's best cosine in a loop's
store is 0.17-0.24 (median; 0.43 at most) against 0.73 for a related prompt's note, and a
related prompt shares its note's rarer words, so the two kinds of evidence agree and add
up; the best item's margin over the others, the number served and the relevance score
told the two apart no better. Per item rather than per prompt: the prompt's best item
alone decides silence as well, but letting every served item through once it passed
pushed three items for each relevant one (precision 0.14 against 0.80). BM25's weight is
small and fixed: held out, any weight from 0.25 to 1 scores the same, and BM25's evidence
shrinks for a loop's long queries and in young stores. The constants are the embedding
model's own (``config.retrieval.PUSH_GATES``): a cosine's scale is its model's. A
question asked in other words than its note scores, with MiniLM, like a prompt nothing
answers: a push is silent for it, a pull still finds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from ralph_context.config.retrieval import PushGate

__all__ = ["Evidence", "admits", "pushed"]


class Evidence(Protocol):
    """Anything with a retrieval breakdown: a ``RetrievedItem``, a benchmark's record."""

    @property
    def breakdown(self) -> Mapping[str, float]: ...


T = TypeVar("T", bound=Evidence)


def admits(breakdown: Mapping[str, float], gate: PushGate) -> bool:
    """Whether an item with this breakdown may be pushed."""
    lexical = breakdown.get("lexical", 0.0)  # absent: an archived item (no full-text index)
    cosine = breakdown.get("semantic")
    if cosine is None:  # the text tier: the model is out, BM25's evidence is all there is
        return lexical >= gate.min_lexical
    return cosine + gate.lexical_weight * lexical >= gate.min_evidence


def pushed(items: Sequence[T], gate: PushGate | None) -> list[T]:
    """The ``items`` a push may carry, in their order; all of them when there is no gate
    (``retrieval.push_gate: off``, or a model with no fitted gate)."""
    if gate is None:
        return list(items)
    return [item for item in items if admits(item.breakdown, gate)]
