"""The Typer app every ``ralph-context`` command group is built from, and the options every
command shares.

Why a subclass: Typer 0.29's help shows each option's Python type (``--json <bool>``,
``--tag <list[str]>``, an argument as ``{query}``), which reads as if flags took values and
hides what to type. Commands made here show a flag bare, a value by its name (``--limit
LIMIT``), choices as ``[a|b|c]`` and an argument as ``QUERY``; a declaration's own
``metavar`` wins.

Help is click's plain text, not Typer's rich panels: those cut any word longer than their
column at 80 columns (where help goes when stdout is not a terminal) with an ellipsis, so a
default such as ``retrieval.min_relevance_score`` read ``retrieval.min_relevance_sc…``, and
read ``[forgotten]`` in a docstring as markup and printed nothing for it.

``--config`` and ``--log-level`` are accepted before the subcommand too (``ralph-context
--log-level debug serve``), as most command lines allow: the root callback keeps them in
:data:`GLOBAL`, and a command's own option of the same name overrides them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from enum import StrEnum
from importlib import import_module
from pathlib import Path
from typing import Annotated, Any, ClassVar, cast

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
    "LazyGroup",
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
        kwargs.setdefault("rich_markup_mode", None)
        super().__init__(**kwargs)

    def command(  # type: ignore[override]
        self, name: str | None = None, **kwargs: Any
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        kwargs.setdefault("cls", _Command)
        return super().command(name, **kwargs)

    def add_typer(self, typer_instance: typer.Typer, **kwargs: Any) -> None:
        kwargs.setdefault("cls", _Group)
        super().add_typer(typer_instance, **kwargs)


def _nothing() -> None:
    """The callback of the app a member is built in: it makes that app a group."""


def _member(name: str, home: tuple[str, str]) -> Any:
    """The command or group ``name``: its module imported, then built by Typer as it builds
    one registered with ``App.command`` or ``App.add_typer`` (the root app sets none of the
    defaults a member inherits: markup mode, exception display, suggestions)."""
    module, attribute = home
    found = getattr(import_module(module), attribute)
    holder = App()
    holder.callback()(_nothing)
    if isinstance(found, typer.Typer):
        holder.add_typer(found, name=name)
    else:
        holder.command(name)(found)
    return typer.main.get_group(holder).commands[name]


class _Members(MutableMapping[str, Any]):
    """A group's commands by name, each built on first lookup; names are listed (help, a
    typo's suggestions) without building any."""

    def __init__(self, homes: Mapping[str, tuple[str, str]], built: Mapping[str, Any]) -> None:
        self._homes = dict(homes)
        self._built = dict(built)
        self._names = [*self._homes, *(name for name in self._built if name not in self._homes)]

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in self._homes:
                raise KeyError(name)
            self._built[name] = _member(name, self._homes[name])
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        if name not in self._names:
            self._names.append(name)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._homes.pop(name, None)
        self._built.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)


class LazyGroup(_Group):
    """A group whose commands are imported and built on first use: ``members`` names, in
    the order help lists them, each command's home (module, attribute: a command function
    or an ``App``).

    Why: building every command (importing its module and what it needs, Typer reading
    every signature) cost every command line ~0.15 s on a 2-core machine; ``stats`` beside
    a running server needs one command, ``--version`` none. Help lists them all, and so
    builds them all.
    """

    members: ClassVar[Mapping[str, tuple[str, str]]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Members(self.members, self.commands)
