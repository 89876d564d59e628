"""structlog set-up: everything to stderr, because stdout belongs to the MCP stdio protocol."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, MutableMapping
from typing import Any

import structlog

__all__ = ["audit_logger", "configure_logging", "ensure_logging", "scrub_with"]

LEVEL_ENV = "RALPH_CONTEXT_LOG_LEVEL"


class _Stderr:
    """Whatever ``sys.stderr`` is when a line is written, not when logging was set up: a
    host that swaps it (a test runner capturing output, an app redirecting it) and later
    closes its stand-in would otherwise make every log call fail on a closed file."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


STDERR = _Stderr()

# What every string of a log line passes before it is written: the engine's redactor, set
# when an engine starts (no secret reaches a log, whatever an error message quotes).
_scrub: Callable[[str], str] | None = None


def scrub_with(scrub: Callable[[str], str] | None) -> None:
    """Pass every string value of every log line through ``scrub`` from now on."""
    global _scrub
    _scrub = scrub


def _scrubbed(
    _logger: object, _method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    scrub = _scrub
    if scrub is not None:
        for key, value in event.items():
            if isinstance(value, str):
                event[key] = scrub(value)
    return event


def configure_logging(level: str | None = None, *, json: bool = False) -> None:
    """Route structlog (and stdlib logging) to stderr at ``level``.

    Args:
        level: A logging level name; defaults to ``$RALPH_CONTEXT_LOG_LEVEL`` or WARNING.
        json: One JSON object per line instead of the console format.
    """
    name = (level or os.environ.get(LEVEL_ENV) or "WARNING").upper()
    numeric = logging.getLevelNamesMapping().get(name, logging.WARNING)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            _scrubbed,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=STDERR),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(stream=STDERR, level=max(numeric, logging.WARNING), force=True)


def ensure_logging(scrub: Callable[[str], str] | None = None) -> None:
    """Configure defaults once if the host application did not configure structlog itself;
    with ``scrub``, redact log lines with it (see :func:`scrub_with`)."""
    if scrub is not None:
        scrub_with(scrub)
    if not structlog.is_configured():
        configure_logging()


def audit_logger() -> structlog.typing.FilteringBoundLogger:
    """The audit trail: one JSON line per event on stderr whatever the log level (a quiet
    server still says who wrote and who forgot what), ``"audit": true`` to pick them out."""
    logger: structlog.typing.FilteringBoundLogger = structlog.wrap_logger(
        structlog.PrintLogger(file=STDERR),  # type: ignore[arg-type]
        processors=[
            _scrubbed,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.NOTSET),
        audit=True,
    )
    return logger
