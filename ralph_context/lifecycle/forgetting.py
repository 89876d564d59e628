"""Forgetting on request: which items a ``forget_context`` call selects, and its answer.

The lifecycle prunes by age and usefulness; a user who stored a secret, or a loop that
learned something wrong, needs to delete chosen items now, live or archived, with nothing
left that a tool, resource or search could return, nor on disk (the store is scrubbed
afterwards: ``LanceStore.scrub``), nor again (it leaves tombstones:
``storage.lifecycle.tombstones``). The selectors combine with AND (items with these ids, of
these types, carrying one of these tags, created before that iteration, created in one of
these iterations); at least one is required, so a call cannot forget everything by
accident.

Iteration records (what ``store_iteration_result`` reported: summary, error, tool calls,
artifacts) are items of no type or tag, so:

- a selection by iteration alone (``iterations`` and/or ``older_than_iteration``) deletes
  the records of those iterations too, with the items created in them;
- a record whose iteration's error item goes (that item is how the error is searched), by
  any selection, is *cleared*: it stays, with its number, outcome, duration, tokens and
  cost, so the loop's numbering and the lifecycle clock hold; its summary and error read
  ``[forgotten]``, its tool calls and artifacts are emptied (a summary of a failed
  iteration often repeats its error).

Deleting the newest iteration's record and items lets the iteration clock, read from the
tables when a store opens, start from the newest one left: the loop reports its own
numbers, so the next iteration it records moves the clock on again.

The validated selection, ``ForgetSelection``, lives beside the store's other filters
(``storage/table/filters.py``), since the store runs it; it is named here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ralph_context.errors import InvalidInput
from ralph_context.models import MAX_ITERATION, ContextType
from ralph_context.storage.table.filters import ForgetSelection
from ralph_context.validation import check_context_types, check_int, check_item_id, check_tags

__all__ = [
    "MAX_FORGET_IDS",
    "MAX_FORGET_ITERATIONS",
    "ForgetReport",
    "ForgetSelection",
    "check_selection",
]

# Ids one call may name (a larger purge selects by type, tag or age instead).
MAX_FORGET_IDS = 1_000
# Iterations one call may name (older_than_iteration covers a range).
MAX_FORGET_ITERATIONS = 1_000


@dataclass(frozen=True)
class ForgetReport:
    """What a forget call deleted (or, with ``dry_run``, would delete), and what it purged
    from the store's files."""

    dry_run: bool
    item_ids: tuple[str, ...]
    # Iteration records deleted, and records cleared (see the module's docstring).
    iterations: tuple[int, ...] = ()
    cleared_iterations: tuple[int, ...] = ()
    # The store's files were rewritten without deleted rows and its old versions dropped
    # (always, but for a dry run: a forget that finds nothing now still purges what an
    # earlier delete left on disk), and how many old versions of the items table went.
    purged: bool = False
    versions_removed: int = 0
    # An earlier forget that did not finish (a crash, a failed purge) was finished too.
    finished_earlier: bool = False

    @property
    def count(self) -> int:
        return len(self.item_ids)


def check_selection(
    item_ids: Sequence[str] | None,
    context_types: Sequence[ContextType | str] | None,
    tags: Sequence[str] | None,
    older_than_iteration: int | None,
    iterations: Sequence[int] | None = None,
) -> ForgetSelection:
    """Validate a forget call's selectors.

    Raises:
        InvalidInput: No selector given, or a bad one (named).
    """
    if (
        not item_ids
        and not context_types
        and not tags
        and older_than_iteration is None
        and not iterations
    ):
        raise InvalidInput(
            "forget needs at least one selector: item_ids, context_types, tags, "
            "older_than_iteration or iterations (they combine with AND)"
        )
    if isinstance(item_ids, str):
        raise InvalidInput(f"item_ids must be a list of ids, got the string {item_ids!r}")
    ids = tuple(item_ids or ())
    if len(ids) > MAX_FORGET_IDS:
        raise InvalidInput(f"item_ids lists {len(ids)} ids; at most {MAX_FORGET_IDS} per call")
    return ForgetSelection(
        ids=tuple(check_item_id(i, name="item_ids") for i in ids),
        types=check_context_types(context_types),
        tags=check_tags(tags),
        older_than=None
        if older_than_iteration is None
        else check_int(older_than_iteration, name="older_than_iteration", low=0),
        iterations=_check_iterations(iterations),
    )


def _check_iterations(iterations: Sequence[int] | None) -> tuple[int, ...]:
    """Distinct iteration numbers, ascending.

    Raises:
        InvalidInput: Not a list of non-negative integers, or too many (named).
    """
    if iterations is None:
        return ()
    if isinstance(iterations, str | bytes) or not isinstance(iterations, Sequence):
        raise InvalidInput(
            f"iterations must be a list of iteration numbers, got {iterations!r:.80}"
        )
    if len(iterations) > MAX_FORGET_ITERATIONS:
        raise InvalidInput(
            f"iterations lists {len(iterations)} numbers; at most {MAX_FORGET_ITERATIONS} "
            "per call (older_than_iteration covers a range)"
        )
    numbers = {check_int(n, name="iterations", low=0, high=MAX_ITERATION) for n in iterations}
    return tuple(sorted(numbers))
