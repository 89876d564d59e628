"""A forget in steps that a crash cannot leave half done.

A forget deletes rows in several tables (hot items, archive, usage, request keys, iteration
records), then scrubs the store (``StoreUpkeep.scrub``: every file holding a deleted row
rewritten, every old version dropped). A server killed between the deletes and the end of
the scrub came back with the items gone but their text still in data files, and a second
forget of the same selectors found nothing to delete, so it purged nothing (issue 62).

So the plan of a forget is written first, as ``forget.pending`` beside the tables: the ids,
the iteration numbers, the tombstones (``tombstones``) and the digests of the request keys
to drop; no text (ids are the store's own, the rest keyed digests). Then the tombstones, the
deletes and the keys, then the scrub, and the plan is removed last. Every step can run
again: a plan found when a writer opens the store (``finish_forget``, from
``LanceStore.configured``) is carried out again from the start, scrub included; so is one
left by a forget whose scrub failed, at the next forget.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from ralph_context._logging import get_logger
from ralph_context.models import ContextItem
from ralph_context.object_location import read_text, remove, write_text
from ralph_context.storage.lifecycle.tombstones import CONTENT, ID, ITERATION, KEY
from ralph_context.storage.store.lifecycle import Forgettable, StoreLifecycle
from ralph_context.storage.store.upkeep import MaintenanceReport, StoreUpkeep

__all__ = ["PENDING", "ForgetBegun", "ForgetPlan", "StoreForget"]

log = get_logger("ralph_context.storage")

PENDING = "forget.pending"
# Ids read per query while a plan is made.
_CHUNK = 500


@dataclass(frozen=True)
class ForgetPlan:
    """What one forget deletes and leaves behind (see the module's docstring)."""

    hot: tuple[str, ...]
    archived: tuple[str, ...]
    records: tuple[int, ...]
    cleared: tuple[int, ...]
    # (kind, digest) tombstones, and the digests of the request keys to drop.
    buried: tuple[tuple[str, str], ...]
    keys: tuple[str, ...]

    def to_json(self) -> str:
        return json.dumps(asdict(self)) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ForgetPlan:
        fields = json.loads(text)
        return cls(
            hot=tuple(fields["hot"]),
            archived=tuple(fields["archived"]),
            records=tuple(int(n) for n in fields["records"]),
            cleared=tuple(int(n) for n in fields["cleared"]),
            buried=tuple((str(kind), str(digest)) for kind, digest in fields["buried"]),
            keys=tuple(fields["keys"]),
        )


@dataclass(frozen=True)
class ForgetBegun:
    """A forget carried out but for its scrub: its plan, and whether an unfinished
    forget's plan was carried out again first (its scrub is this one's)."""

    plan: ForgetPlan
    finished_earlier: bool


class StoreForget(StoreLifecycle, StoreUpkeep):
    """Forgets that finish (see the module's docstring)."""

    def begin_forget(self, found: Forgettable) -> ForgetBegun:
        """Write the plan of forgetting ``found``, then carry it out but its scrub: the
        tombstones, the deletes, the keys, the iteration records. An unfinished forget's
        plan is carried out again first (the scrub to come purges what both deleted). The
        caller scrubs, then calls :meth:`end_forget`."""
        earlier = self.pending_forget()
        if earlier is not None:
            self._carry_out(earlier)
        plan = self._plan(found)
        if self.location is not None and not found.empty:
            write_text(self.location, PENDING, plan.to_json())
        self._carry_out(plan)
        return ForgetBegun(plan, finished_earlier=earlier is not None)

    def end_forget(self) -> None:
        """The forget is done, scrub included: its plan goes."""
        if self.location is not None:
            remove(self.location, PENDING)

    def pending_forget(self) -> ForgetPlan | None:
        """The plan of a forget that did not finish (a crash, a failed scrub), if any."""
        if self.location is None:
            return None
        text = read_text(self.location, PENDING)
        if text is None:
            return None
        try:
            return ForgetPlan.from_json(text)
        except (ValueError, KeyError, TypeError) as exc:
            # Written whole (atomically) or not at all: a plan that does not parse is not
            # one of ours to carry out. Said, and set aside.
            log.warning("forget_plan_unreadable", location=str(self.location), error=str(exc))
            if not self.read_only:
                remove(self.location, PENDING)
            return None

    def finish_forget(self) -> MaintenanceReport | None:
        """Carry out again the forget a crash interrupted, scrub included (``None``: there
        was none)."""
        plan = self.pending_forget()
        if plan is None:
            return None
        self._carry_out(plan)
        report = self.scrub()
        self.end_forget()
        log.info(
            "interrupted_forget_finished",
            items=len(plan.hot) + len(plan.archived),
            iterations=len(plan.records),
            cleared_iterations=len(plan.cleared),
        )
        return report

    def _carry_out(self, plan: ForgetPlan) -> None:
        self.tombstones.bury(plan.buried)
        if plan.hot or plan.archived:
            self.prune(list(plan.hot), list(plan.archived))
        self.requests.drop(list(plan.keys))
        if plan.records or plan.cleared:
            self.forget_iterations(plan.records, plan.cleared)

    def _plan(self, found: Forgettable) -> ForgetPlan:
        """The plan for ``found``: its ids, records, and the tombstones of each item (its
        id and its text, the original of a summarized one too), of the keys that wrote
        them and of the records deleted or cleared."""
        ids = [*found.hot, *found.archived]
        digest = self.tombstones.digest
        buried: list[tuple[str, str]] = []
        for start in range(0, len(ids), _CHUNK):
            part = ids[start : start + _CHUNK]
            items: list[ContextItem] = self.get_items(part)
            items += [entry.item for entry in self.archive.get(part)]
            buried += [(ID, digest(ID, i)) for i in part]
            buried += [(CONTENT, digest(CONTENT, item.content)) for item in items]
        keys = self.requests.targeting(ids)
        buried += [(KEY, key) for key in keys]
        numbers = [*found.records, *found.cleared]
        buried += [(ITERATION, digest(ITERATION, str(n))) for n in numbers]
        return ForgetPlan(
            hot=tuple(found.hot),
            archived=tuple(found.archived),
            records=tuple(found.records),
            cleared=tuple(found.cleared),
            buried=tuple(dict.fromkeys(buried)),
            keys=tuple(keys),
        )
