"""The Typer app every ``ralph-context`` command group is built from, and the options every
command shares.

Why a subclass: Typer 0.29's help shows each option's Python type (``--json <bool>``,
``--tag <list[str]>``, an argument as ``{query}``), which reads as if flags took values and
hides what to type. Commands made here show a flag bare, a value by its name (``--limit
LIMIT``), choices as ``[a|b|c]`` and an argument as ``QUERY``; a declaration's own
``metavar`` wins.

``--config`` and ``--log-level`` are accepted before the subcommand too (``ralph-context
--log-level debug serve``), as most command lines allow: the root callback keeps them in
:data:`GLOBAL`, and a command's own option of the same name overrides them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

__all__ = [
    "GLOBAL",
    "AgentName",
    "App",
    "ClientTransport",
    "ConfigOption",
    "GlobalOptions",
    "JsonOption",
    "LogLevel",
    "LogOption",
    "RalphVersion",
    "ServeTransport",
]


class LogLevel(StrEnum):
    """The levels ``--log-level`` takes (logs go to stderr)."""

    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class ServeTransport(StrEnum):
    """What ``serve --transport`` takes."""

    STDIO = "stdio"
    HTTP = "http"
    SSE = "sse"


class ClientTransport(StrEnum):
    """How ``init --transport`` tells a client to reach the server: a command or a URL."""

    STDIO = "stdio"
    HTTP = "http"


class AgentName(StrEnum):
    """The coding agents ``init --agent`` wires and ``hook`` answers for."""

    CLAUDE = "claude"
    CODEX = "codex"


class RalphVersion(StrEnum):
    """The Ralph ``init --ralph`` sets up (1.x attaches in-process: ``ralph-context ralph``)."""

    V2 = "v2"


ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        metavar="PATH",
        help="ralph.yaml to use (default: $RALPH_CONTEXT_CONFIG, ./ralph.yaml).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
LogOption = Annotated[
    LogLevel | None,
    typer.Option(
        "--log-level", case_sensitive=False, help="Log level on stderr (default warning)."
    ),
]


@dataclass
class GlobalOptions:
    """``--config`` and ``--log-level`` as given before the subcommand."""

    config: Path | None = None
    log_level: LogLevel | None = None


GLOBAL = GlobalOptions()


class _Argument(TyperArgument):
    """An argument shown as ``QUERY`` (``[PATH]`` when optional) and no Python type."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")


def _placeholder(param: Any) -> None:
    """Name what a person types for ``param``, unless its declaration did."""
    if isinstance(param, TyperArgument):
        # Typer builds its own argument class; only its help differs here.
        param.__class__ = _Argument
        if param.metavar is None:
            param.metavar = (param.name or "value").upper()
        return
    if param.metavar is not None:
        return
    if not isinstance(param, TyperOption):
        return
    if param.is_flag or param.count:
        param.metavar = ""  # a flag takes no value: show none
        return
    described = param.type_descriptor
    if described.is_choice and described.choices:
        param.metavar = "[" + "|".join(str(getattr(c, "value", c)) for c in described.choices) + "]"
        return
    longest = max((o for o in param.opts if o.startswith("--")), key=len, default=None)
    param.metavar = (longest or param.name or "value").lstrip("-").replace("-", "_").upper()


class _Readable:
    """Placeholders named for every parameter of a command or group, ``--help`` bare."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in cast(Any, self).params:
            _placeholder(param)

    def get_help_option(self, ctx: Any) -> Any:
        option = cast(Any, super()).get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option


class _Command(_Readable, TyperCommand):
    pass


class _Group(_Readable, TyperGroup):
    pass


class App(typer.Typer):
    """A ``typer.Typer`` whose commands and groups show readable placeholders in help."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", _Group)
        kwargs.setdefault("add_completion", False)
        super().__init__(**kwargs)

    def command(  # type: ignore[override]
        self, name: str | None = None, **kwargs: Any
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        kwargs.setdefault("cls", _Command)
        return super().command(name, **kwargs)

    def add_typer(self, typer_instance: typer.Typer, **kwargs: Any) -> None:
        kwargs.setdefault("cls", _Group)
        super().add_typer(typer_instance, **kwargs)
