"""The memory console: see and steer what the agent remembers, in a browser.

Served by the HTTP server at ``/console`` (``ralph-context serve --transport http``;
``ralph-context console`` also opens a browser). Server-rendered pages (Jinja2, autoescaped)
with one small script and one style sheet served from this package, so it works offline:

- ``app``: the routes and who may do what (session or bearer token, namespace, CSRF,
  read-only); ``guard``: Host/Origin, redirects, the cookie; ``login``: in and out;
- ``sessions``: browser sessions (HttpOnly, SameSite=Strict cookie; a CSRF token each);
- ``pages``: search, the items browser, one item; ``runs``: iterations, health and stats;
- ``actions``: usefulness feedback and forget; ``render``: templates and headers.
"""

from __future__ import annotations

from starlette.routing import BaseRoute

from ralph_context.server.console import actions, pages, runs
from ralph_context.server.console.app import PREFIX, Console, EngineSource
from ralph_context.server.tokens import TokenBook

__all__ = ["PREFIX", "Console", "EngineSource", "console_routes"]


def console_routes(source: EngineSource, tokens: TokenBook) -> list[BaseRoute]:
    """Every route of the console, for the server's app."""
    console = Console(source, tokens)
    return console.routes(
        pages={
            "/search": pages.search,
            "/items": pages.items,
            "/items/{item_id}": pages.item,
            "/iterations": runs.iterations,
            "/health": runs.health,
        },
        actions={"/feedback": actions.feedback, "/forget": actions.forget},
    )
