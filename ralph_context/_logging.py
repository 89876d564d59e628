"""structlog set-up: everything to stderr, because stdout belongs to the MCP stdio protocol."""

from __future__ import annotations

import logging
import os
import sys

import structlog

__all__ = ["audit_logger", "configure_logging"]

LEVEL_ENV = "RALPH_CONTEXT_LOG_LEVEL"


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
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(stream=sys.stderr, level=max(numeric, logging.WARNING), force=True)


def ensure_logging() -> None:
    """Configure defaults once if the host application did not configure structlog itself."""
    if not structlog.is_configured():
        configure_logging()


def audit_logger() -> structlog.typing.FilteringBoundLogger:
    """The audit trail: one JSON line per event on stderr whatever the log level (a quiet
    server still says who wrote and who forgot what), ``"audit": true`` to pick them out."""
    logger: structlog.typing.FilteringBoundLogger = structlog.wrap_logger(
        structlog.PrintLogger(file=sys.stderr),
        processors=[
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.NOTSET),
        audit=True,
    )
    return logger
