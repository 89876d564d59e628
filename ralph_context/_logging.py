"""structlog set-up: everything to stderr, because stdout belongs to the MCP stdio protocol.

structlog is imported on first use, not with this module: importing it costs a command
~0.2 s (it brings rich's traceback and pretty-printer, and asyncio), which a command that
logs nothing (``stats`` beside a running server, ``--version``) never needs. So every
module takes its logger from :func:`get_logger`, whose first call imports structlog, and
:func:`configure_logging` called before that is applied then (the stdlib half at once).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from structlog.typing import FilteringBoundLogger

__all__ = ["audit_logger", "configure_logging", "ensure_logging", "get_logger", "scrub_with"]

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

# configure_logging's level and format, called before structlog was imported: applied by
# the first use of structlog (_configured).
_pending: tuple[int, bool] | None = None


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

    structlog is configured now if it is imported already, else on its first use (see the
    module's docstring): either way before anything logs through it.

    Args:
        level: A logging level name; defaults to ``$RALPH_CONTEXT_LOG_LEVEL`` or WARNING.
        json: One JSON object per line instead of the console format.
    """
    global _pending
    name = (level or os.environ.get(LEVEL_ENV) or "WARNING").upper()
    numeric = logging.getLevelNamesMapping().get(name, logging.WARNING)
    if "structlog" in sys.modules:
        _pending = None
        _configure(numeric, json)
    else:
        _pending = (numeric, json)
    logging.basicConfig(stream=STDERR, level=max(numeric, logging.WARNING), force=True)


def _configure(numeric: int, json: bool) -> None:
    import structlog

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


def _configured() -> None:
    """Apply the configuration asked for before structlog was imported, if any (the
    caller imports structlog)."""
    global _pending
    pending, _pending = _pending, None
    if pending is not None:
        _configure(*pending)


class _Logger:
    """A module's logger that imports structlog at its first call, not at the module's
    import. Every call goes on to structlog's own (lazy) logger, so a configuration made
    later (a command's ``--log-level``, a test's ``capture_logs``) applies to it."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attribute: str) -> Any:
        logger = self._logger
        if logger is None:
            import structlog

            _configured()
            logger = self._logger = structlog.get_logger(self._name)
        return getattr(logger, attribute)


def get_logger(name: str) -> FilteringBoundLogger:
    """The logger ``name`` (``structlog.get_logger(name)``), structlog imported at its first
    call."""
    return cast("FilteringBoundLogger", _Logger(name))


def ensure_logging(scrub: Callable[[str], str] | None = None) -> None:
    """Configure defaults once if the host application did not configure structlog itself;
    with ``scrub``, redact log lines with it (see :func:`scrub_with`)."""
    if scrub is not None:
        scrub_with(scrub)
    import structlog

    _configured()
    if not structlog.is_configured():
        configure_logging()


def audit_logger() -> FilteringBoundLogger:
    """The audit trail: one JSON line per event on stderr whatever the log level (a quiet
    server still says who wrote and who forgot what), ``"audit": true`` to pick them out."""
    import structlog

    _configured()
    logger: FilteringBoundLogger = structlog.wrap_logger(
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
