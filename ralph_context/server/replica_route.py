"""``POST /ns/<name>/replica/writes``: another replica's write, committed here while this
replica holds the store's lease (``storage.replicas.forwarding``).

Guarded as the hooks are (``guard``: token and namespace, Host/Origin, a cap on the
body). The answers the sender acts on: 200 with the items as stored, whether they were
written now, and the table version holding them; 409 when this replica does not commit
the store's writes now (the sender commits the write itself); 422 for an idempotency key
used for another request; 410 for a write that would bring back what a forget deleted
(``storage.lifecycle.tombstones``); 400 for a body that is not a forwarded write; 502 when the
store failed the write (it may have been committed: the sender says so, or retries a
keyed write itself); 503 when it refused the write before committing (a full disk, or
a namespace it cannot open: the sender commits it itself).
"""

from __future__ import annotations

import json

from mcp.server.transport_security import (
    RequestBodyLimitMiddleware,
)
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ralph_context._logging import get_logger
from ralph_context.errors import (
    IdempotencyConflict,
    InvalidInput,
    ItemForgotten,
    RalphContextError,
    StoreUnwritable,
)
from ralph_context.server.guard import GuardedEndpoint, Namespaces, refused
from ralph_context.storage.replicas.forwarding import FORWARD_PATH, NOT_HOLDER, decode_pairs

__all__ = ["replica_routes"]

log = get_logger("ralph_context.server")

# What a forwarded write may weigh: ``actors.storage.forward.FORWARD_AT_MOST`` items of the
# largest content allowed, and their vectors.
MAX_BODY_BYTES = 32 << 20


class _WritesEndpoint(GuardedEndpoint):
    """The ASGI app of the route, for every namespace of ``spaces``."""

    takes = "a replica's write"

    async def answer(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            pairs = decode_pairs(body.get("items"))
            key, fingerprint = body.get("key"), body.get("fingerprint")
            if not all(v is None or isinstance(v, str) for v in (key, fingerprint)):
                raise ValueError("key and fingerprint must be text or null")
        except (ValueError, ValidationError) as exc:
            return refused(400, f"not a forwarded write: {exc}"[:500])
        name = request.path_params["name"]
        try:
            engine = await self.spaces.engine(name)
        except RuntimeError as exc:  # the namespace could not be opened: nothing was stored
            return refused(503, str(exc))
        try:
            forwarded = await engine.commit_forwarded(pairs, key, fingerprint)
        except IdempotencyConflict as exc:
            return refused(422, str(exc))
        except ItemForgotten as exc:  # forget is final on every replica (tombstones)
            return refused(410, str(exc))
        except InvalidInput as exc:
            return refused(400, str(exc))
        except StoreUnwritable as exc:  # refused before the commit: nothing was stored
            return refused(503, str(exc))
        except (RalphContextError, RuntimeError) as exc:
            log.warning("forwarded_write_failed", error=f"{type(exc).__name__}: {exc}")
            return refused(502, f"{type(exc).__name__}: {exc}")
        if forwarded is None:
            return refused(NOT_HOLDER, "this replica does not commit the store's writes now")
        return JSONResponse(
            {
                "items": [item.model_dump(mode="json") for item in forwarded.items],
                "written": forwarded.written,
                "version": forwarded.version,
            }
        )


def replica_routes(spaces: Namespaces, tokens_enabled: bool) -> list[BaseRoute]:
    """The route taking other replicas' writes for ``spaces`` (``guard.Namespaces``)."""
    endpoint = _WritesEndpoint(spaces, tokens_enabled)
    limited = RequestBodyLimitMiddleware(endpoint, MAX_BODY_BYTES)
    return [Route(FORWARD_PATH.replace("{namespace}", "{name}"), limited)]
