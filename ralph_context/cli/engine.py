"""How a command reaches the engine: built on first use (commands without one start fast),
read-only beside another process that writes the store, its errors turned into exit codes
(2: bad input or configuration, 1: anything else)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from ralph_context.cli.output import fail
from ralph_context.errors import ConfigError, InvalidInput, RalphContextError

if TYPE_CHECKING:
    from ralph_context.config import Settings
    from ralph_context.engine import Engine

__all__ = ["checked", "engine_for", "reader_for", "reported", "run"]

T = TypeVar("T")


def engine_for(settings: Settings, *, model: bool = True) -> Engine:
    """The engine, imported on first use so that commands without one start fast. The
    command's files are owner-only from here on (``storage.private``): it writes the
    store. ``model``: ``False`` for a command that embeds nothing (the model is loaded if
    something needs it after all: ``embeddings.lazy``)."""
    from ralph_context.engine import Engine
    from ralph_context.storage.private import keep_private

    keep_private()
    if model:
        return Engine(settings)
    from ralph_context.embeddings.lazy import load_on_use

    return Engine(settings, model_loader=load_on_use)


def reader_for(settings: Settings, *, model: bool = True) -> Engine:
    """The engine for a command that only reads: read-only beside another process that
    writes the store (a running server holds its writer lock), else the usual one.
    ``model``: ``False`` for a command with no query to embed (stats, health, export: the
    model is loaded only if something needs it, ``embeddings.lazy``)."""
    from ralph_context.embeddings.lazy import load_on_use
    from ralph_context.embeddings.local import load_embedder
    from ralph_context.engine import Engine
    from ralph_context.storage import writer_lock

    beside = not settings.is_ephemeral and writer_lock.other_writer(settings.store_root())
    loader = load_embedder if model else load_on_use
    return Engine(settings, read_only=bool(beside), model_loader=loader)


def run(work: Callable[[], Awaitable[T]]) -> T:
    """``work()`` on a new event loop; an error of ours is printed and exits the command.

    Raises:
        typer.Exit: ``work`` raised a ``RalphContextError`` (code 2 for bad input or
            configuration, 1 for the rest).
    """
    import anyio  # here: a command the running server answers needs no event loop

    from ralph_context import origin

    with origin.recorded_by(origin.CLI):  # what a command stores is the CLI's record
        return reported(lambda: anyio.run(work))


def reported(call: Callable[[], T]) -> T:
    """``call()``, an error of ours printed and turned into the command's exit (a call to
    the running server fails as opening the store does).

    Raises:
        typer.Exit: ``call`` raised a ``RalphContextError`` (code 2 for bad input or
            configuration, 1 for the rest).
    """
    try:
        return call()
    except (ConfigError, InvalidInput) as exc:
        raise fail(str(exc), 2) from None
    except RalphContextError as exc:
        raise fail(str(exc), 1) from None


def checked(check: Callable[[], T]) -> T:
    """``check()``, its ``InvalidInput`` printed as a usage error.

    Raises:
        typer.Exit: ``check`` refused the input (code 2).
    """
    try:
        return check()
    except InvalidInput as exc:
        raise fail(str(exc), 2) from None
