"""Forgetting on request: which items a ``forget_context`` call selects, and its answer.

The lifecycle prunes by age and usefulness; a user who stored a secret, or a loop that
learned something wrong, needs to delete chosen items now, live or archived, with nothing
left that a tool, resource or search could return. The selectors combine with AND (items
with these ids, of these types, carrying one of these tags, created before that
iteration); at least one is required, so a call cannot forget everything by accident.

The validated selection, ``ForgetSelection``, lives beside the store's other filters
(``storage/filters.py``), since the store runs it; it is named here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ralph_context.errors import InvalidInput
from ralph_context.models import ContextType
from ralph_context.storage.filters import ForgetSelection
from ralph_context.validation import check_context_types, check_int, check_item_id, check_tags

__all__ = ["MAX_FORGET_IDS", "ForgetReport", "ForgetSelection", "check_selection"]

# Ids one call may name (a larger purge selects by type, tag or age instead).
MAX_FORGET_IDS = 1_000


@dataclass(frozen=True)
class ForgetReport:
    """What a forget call deleted (or, with ``dry_run``, would delete)."""

    dry_run: bool
    item_ids: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.item_ids)


def check_selection(
    item_ids: Sequence[str] | None,
    context_types: Sequence[ContextType | str] | None,
    tags: Sequence[str] | None,
    older_than_iteration: int | None,
) -> ForgetSelection:
    """Validate a forget call's selectors.

    Raises:
        InvalidInput: No selector given, or a bad one (named).
    """
    if not item_ids and not context_types and not tags and older_than_iteration is None:
        raise InvalidInput(
            "forget needs at least one selector: item_ids, context_types, tags or "
            "older_than_iteration (they combine with AND)"
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
    )
