"""The console's store pages: search as a client sees it, the items browser and one item.

Each view reads the query string, calls the engine and hands a template its context; the
engine checks every argument again (a bad one is shown as the engine's own sentence).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from ralph_context.errors import InvalidInput, ItemNotFound, RalphContextError
from ralph_context.models import ContextState, ContextType
from ralph_context.server.console.app import Visit

__all__ = ["PER_PAGE", "item", "items", "search"]

PER_PAGE = 50
# The breakdown's factors in the order the formula reads (relevance = match · recency ·
# feedback · type); match is built from semantic, lexical and neighbour.
FACTORS = ("match", "semantic", "lexical", "neighbour", "recency", "usefulness", "feedback")
TYPES = [t.value for t in ContextType]
STATES = [s.value for s in ContextState]


class _Problem(ValueError):
    """A query-string value that is not what the form sends."""


def _number(text: str | None, name: str, kind: type[int] | type[float]) -> Any:
    if text is None or not text.strip():
        return None
    try:
        return kind(text)
    except ValueError:
        raise _Problem(f"{name} must be a number, got {text[:40]!r}") from None


async def search(visit: Visit) -> tuple[str, dict[str, Any]]:
    """``/console/search?q=...``: the ranked items, each factor drawn as a bar."""
    params = visit.request.query_params
    query = params.get("q", "").strip()
    chosen = [t for t in params.getlist("type") if t in TYPES]
    context: dict[str, Any] = {
        "page_name": "search",
        "query": query,
        "types": TYPES,
        "chosen": chosen,
        "max_items": params.get("max_items", ""),
        "min_score": params.get("min_score", ""),
        "result": None,
        "problem": None,
        "factors": FACTORS,
        # feedback is a multiplier up to 1 + usefulness_boost; the rest are 0-1.
        "scales": {"feedback": 1 + visit.engine.settings.scoring.usefulness_boost},
    }
    if not query:
        return "search.html", context
    try:
        result = await visit.engine.search(
            query,
            max_items=_number(params.get("max_items"), "max_items", int),
            context_types=chosen or None,
            min_score=_number(params.get("min_score"), "min_score", float),
            counted=False,  # looking is not retrieving: the card's counts stay the loop's
        )
    except (InvalidInput, _Problem) as exc:
        context["problem"] = str(exc)
    else:
        context["result"] = result
    return "search.html", context


async def items(visit: Visit) -> tuple[str, dict[str, Any]]:
    """``/console/items``: the store by type, state, tag and iteration, newest first, in
    pages. One filter says when an item was stored: the iteration it belongs to (the
    column the table shows, and what the iterations page links with); an "age" range
    beside it said the same thing counted backwards from the clock."""
    params = visit.request.query_params
    engine = visit.engine
    filters = {name: params.get(name, "").strip() for name in ("type", "state", "tag", "iteration")}
    context: dict[str, Any] = {
        "page_name": "items",
        "types": TYPES,
        "states": STATES,
        "filters": filters,
        "now": engine.current_iteration,
        "page": None,
        "problem": None,
        "number": 1,
    }
    try:
        number = max(1, _number(params.get("page"), "page", int) or 1)
        context["number"] = number
        exact = _number(filters["iteration"], "iteration", int)
        context["page"] = await engine.browse(
            context_types=[filters["type"]] if filters["type"] else None,
            state=filters["state"] or None,
            tags=[t.strip() for t in filters["tag"].split(",") if t.strip()] or None,
            min_iteration=exact,
            max_iteration=exact,
            offset=(number - 1) * PER_PAGE,
            limit=PER_PAGE,
        )
    except (InvalidInput, _Problem) as exc:
        context["problem"] = str(exc)
    context["pages"] = _pager(visit, filters, context["number"], context["page"])
    return "items.html", context


def _pager(visit: Visit, filters: dict[str, str], number: int, page: Any) -> dict[str, Any]:
    total = page.total if page is not None else 0
    last = max(1, -(-total // PER_PAGE))
    kept = {k: v for k, v in filters.items() if v}
    return {
        "total": total,
        "first": (number - 1) * PER_PAGE + 1 if total else 0,
        "shown_to": min(number * PER_PAGE, total),
        "last": last,
        "previous": visit.link("/items", page=number - 1, **kept) if number > 1 else None,
        "next": visit.link("/items", page=number + 1, **kept) if number < last else None,
    }


async def item(visit: Visit) -> Response | tuple[str, dict[str, Any]]:
    """``/console/items/<id>``: one item whole, its usefulness since start, and for a
    summarized item the original text the archive keeps."""
    item_id = str(visit.request.path_params["item_id"])
    engine = visit.engine
    try:
        found = await engine.get(item_id)
    except ItemNotFound:
        return _missing(visit, f"no item {item_id[:80]!r} in namespace {visit.namespace}")
    except InvalidInput as exc:
        return _missing(visit, str(exc), 400)
    original = None
    if found.state is ContextState.SUMMARIZED or found.summary is not None:
        try:
            original = await engine.original(found.id)
        except RalphContextError:
            original = None
    return "item.html", {
        "page_name": "items",
        "item": found,
        "original": original,
        "age": max(0, engine.current_iteration - found.created_iteration),
        "feedback": engine.observed.feedback_for(found.id),
    }


def _missing(visit: Visit, text: str, status: int = 404) -> Response:
    return visit.fail(status, text)
