"""Pages as HTML: the Jinja2 templates shipped in this package, autoescaped, and the
headers every console page carries.

Autoescaping is on for every template, so whatever an agent stored (``<script>`` included)
is shown as text. The Content-Security-Policy allows scripts and styles from this server
only (``/console/static``): an injected inline script would not run even if escaping
failed. Pages are never cached (they show a store that changes under them) and say in
``Server-Timing`` how long the server took to make them (``bench console`` reads it).
"""

from __future__ import annotations

import json
import math
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape
from starlette.responses import HTMLResponse

from ralph_context.models import ContextItem
from ralph_context.privacy import MARK
from ralph_context.privacy.visible import visible
from ralph_context.rendering import who

__all__ = ["HEADERS", "UNRATED", "Renderer"]

HERE = Path(__file__).resolve().parent
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


# The usefulness every item starts with, before any feedback: the neutral middle of 0-1. The
# pages say "not rated yet" for it, where a bar half full would read as "half useful".
UNRATED: float = ContextItem.model_fields["usefulness_score"].default


def _ago(when: datetime | None) -> str:
    if when is None:
        return "never"
    seconds = (datetime.now(UTC) - when).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{max(seconds, 0):.0f} s ago"


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def _bar(value: float, scale: float = 1.0) -> float:
    """A bar's width in percent of its track (``value`` over ``scale``, clamped)."""
    if not math.isfinite(value) or scale <= 0:
        return 0.0
    return round(max(0.0, min(value / scale, 1.0)) * 100, 1)


def _short(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _marked(text: str) -> Markup:
    """``text`` escaped, with each ``[REDACTED:<kind>]`` the redactor left highlighted, so
    the item page shows where a secret was taken out."""
    parts: list[str] = []
    last = 0
    for found in MARK.finditer(text):
        parts.append(str(escape(text[last : found.start()])))
        shown = escape(found.group(0))
        parts.append(f'<mark class="redacted" title="a secret was redacted here">{shown}</mark>')
        last = found.end()
    parts.append(str(escape(text[last:])))
    return Markup("".join(parts))


def _redactions(text: str) -> dict[str, int]:
    """How many secrets of each kind were redacted from ``text``."""
    counts: dict[str, int] = {}
    for found in MARK.finditer(text):
        counts[found.group(1)] = counts.get(found.group(1), 0) + 1
    return counts


def _pretty(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def _visible(value: Any) -> Any:
    if isinstance(value, Markup):  # already escaped HTML: only the invisible part goes
        return Markup(visible(str(value)))
    return visible(value) if isinstance(value, str) else value


class Renderer:
    """The console's templates and filters."""

    def __init__(self) -> None:
        self.env = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            # Whatever a page prints passes here: what the store holds is shown without its
            # invisible characters (stored before capture removed them, or in metadata).
            finalize=_visible,
        )
        self.env.filters.update(
            ago=_ago,
            size=_size,
            bar=_bar,
            short=_short,
            pretty=_pretty,
            marked=_marked,
            redactions=_redactions,
            who=who,
        )
        self.env.globals["unrated"] = UNRATED

    def page(
        self,
        template: str,
        context: dict[str, Any],
        *,
        started: float,
        status: int = 200,
    ) -> HTMLResponse:
        """``template`` rendered with ``context``; ``started`` (``perf_counter``) is when
        the request began, for ``Server-Timing``."""
        body = self.env.get_template(template).render(context)
        took = (time.perf_counter() - started) * 1000
        headers = {**HEADERS, "Server-Timing": f"app;dur={took:.2f}"}
        return HTMLResponse(body, status_code=status, headers=headers)
