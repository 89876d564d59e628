"""``POST /transfer/import`` (and ``/ns/<name>/transfer/import``): ``ralph-context import``
beside the server that holds the store.

The store has one writer, so beside a running server ``import`` used to exit 1 with "open
for writing by process ...". Now the command sends the export's lines here, the header and
a chunk of records per request (``{"lines": [...], "first_line": N}``, ``N`` the file's
line number of the chunk's first record, so an error names the file's line), and the server
stores them with the same code (``transfer.import_store``): the same skips, the same
re-embedding, the same report (``{"items", "archived", "iterations", "skipped",
"embedded"}``). Guarded as the other JSON routes are (``guard``); a read-only server refuses
(403); a malformed line is 400 with the reason, as the command's exit 2.
"""

from __future__ import annotations

import json
from dataclasses import asdict

from mcp.server.transport_security import RequestBodyLimitMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ralph_context import namespaces, origin
from ralph_context.errors import InvalidInput, RalphContextError
from ralph_context.server.guard import GuardedEndpoint, Namespaces, refused
from ralph_context.transfer.export_import import IMPORT_PATH, import_store

__all__ = ["MAX_BODY_BYTES", "import_routes"]

# A chunk's body at most (the command sends less: ``cli.store``'s chunks).
MAX_BODY_BYTES = 32 << 20


class _ImportEndpoint(GuardedEndpoint):
    takes = "an export's lines as {lines, first_line, include_forgotten}"

    async def answer(self, request: Request) -> Response:
        if self.spaces.read_only:
            return refused(403, "this server is read-only: it imports nothing")
        name = request.path_params.get("name", namespaces.DEFAULT)
        try:
            body = json.loads(await request.body())
        except ValueError as exc:
            return refused(400, f"the body is not JSON: {exc}")
        lines = body.get("lines") if isinstance(body, dict) else None
        first = body.get("first_line", 2) if isinstance(body, dict) else None
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            return refused(400, "lines must be a list of an export's lines")
        if type(first) is not int or first < 2:
            return refused(400, "first_line must be the file's line number of the first record")
        forgotten = body.get("include_forgotten", False)
        if not isinstance(forgotten, bool):
            return refused(400, "include_forgotten must be true or false")
        try:
            engine = await self.spaces.engine(name)
            with origin.recorded_by(origin.IMPORT):
                report = await import_store(
                    engine, lines, first_line=first, include_forgotten=forgotten
                )
        except InvalidInput as exc:
            return refused(400, str(exc))
        except (RalphContextError, RuntimeError) as exc:
            return refused(503, f"{type(exc).__name__}: {exc}")
        return JSONResponse(asdict(report))


def import_routes(spaces: Namespaces, tokens_enabled: bool) -> list[BaseRoute]:
    """The import routes for ``spaces`` (``guard.Namespaces``)."""
    endpoint = RequestBodyLimitMiddleware(_ImportEndpoint(spaces, tokens_enabled), MAX_BODY_BYTES)
    return [Route(IMPORT_PATH, endpoint), Route(f"/ns/{{name}}{IMPORT_PATH}", endpoint)]
