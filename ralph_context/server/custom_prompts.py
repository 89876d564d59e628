"""Custom prompts from ``ralph.yaml``: resolved once at start-up, rendered on each request.

Resolving turns every ``PromptSpec`` into a ``CustomPrompt``. It settles ``type: auto`` and
imports a function prompt's ``module:function``, so a bad definition stops the server at start
with a ``ConfigError`` instead of failing the first ``prompts/get``. Rendering first checks the
caller's arguments (``InvalidInput``), then fills the template or calls the function
(``PromptFunctionError`` when the user's code fails).

Two kinds of content:

* **text** -- a template. ``{name}`` is replaced for declared argument names only; every other
  brace stays as written, so JSON or code examples survive. An optional argument the caller
  did not give renders as an empty string. A value is the caller's data: its invisible
  characters go and its tags are made inert (``rendering.inert``), the template's own stay.
* A function that puts stored items into its text should write them with the renderer
  (``ralph_context.rendering``: ``blocks``, ``one_line``), as every built-in face does.
* **function** -- ``package.module:function``, called with one ``dict`` of the arguments the
  caller gave (optional ones left out are absent, not ``""``, so the function can choose its
  own default). It may be sync or async and must return a ``str``.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, Protocol

import anyio.to_thread

from ralph_context.config import PromptArgumentSpec, PromptSpec
from ralph_context.errors import ConfigError, InvalidInput, PromptFunctionError
from ralph_context.rendering import inert

__all__ = [
    "FUNCTION_REFERENCE",
    "CustomPrompt",
    "DeclaredArgument",
    "PromptFunction",
    "PromptKind",
    "argument_problem",
    "find_prompt",
    "resolve_prompt",
    "resolve_prompts",
]

FUNCTION_REFERENCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
"""A ``module:function`` reference; ``type: auto`` content matching it (stripped) is a function."""

PromptKind = Literal["text", "function"]
PromptFunction = Callable[[dict[str, str]], object]
"""What a function prompt calls; the result must be a ``str`` or an awaitable of one."""


@dataclass(frozen=True)
class CustomPrompt:
    """A custom prompt ready to serve.

    Attributes:
        name: The prompt's name in ``prompts/list``.
        description: Shown to the user by the client.
        arguments: The declared arguments, in order.
        content: The template, or for a function prompt its ``module:function`` reference.
        function: The imported callable of a function prompt; ``None`` for a template.
    """

    name: str
    description: str
    arguments: tuple[PromptArgumentSpec, ...]
    content: str
    function: PromptFunction | None = field(default=None, repr=False, compare=False)

    @property
    def kind(self) -> PromptKind:
        """``"function"`` when a callable renders the prompt, else ``"text"``."""
        return "text" if self.function is None else "function"

    async def render(self, arguments: Mapping[str, str] | None = None) -> str:
        """The prompt's text for these arguments.

        Args:
            arguments: Argument values by name; ``None`` means none were given.

        Raises:
            InvalidInput: A required argument is missing or an undeclared one was given; the
                message names each and lists the arguments the prompt accepts.
            PromptFunctionError: The function raised, or returned something that is not a str.
        """
        supplied = dict(arguments or {})
        self._check(supplied)
        if self.function is not None:
            return await self._call(self.function, supplied)
        if self._placeholders is None:
            return self.content
        # An argument is the caller's text (a model may pass what it read): it fills the
        # user's template as data, so it cannot write the template's own tags.
        return self._placeholders.sub(lambda match: inert(supplied.get(match[1], "")), self.content)

    @cached_property
    def _placeholders(self) -> re.Pattern[str] | None:
        # Declared names only (not str.format): `{"key": 1}` in a template must stay as is.
        if not self.arguments:
            return None
        names = "|".join(re.escape(argument.name) for argument in self.arguments)
        return re.compile(r"\{(" + names + r")\}")

    def _check(self, supplied: Mapping[str, str]) -> None:
        problem = argument_problem(self.name, self.arguments, supplied)
        if problem is not None:
            raise InvalidInput(problem)

    async def _call(self, function: PromptFunction, supplied: dict[str, str]) -> str:
        result: object
        try:
            if inspect.iscoroutinefunction(function):
                result = function(supplied)
            else:
                # User code may block (read files, run git): keep the event loop serving.
                result = await anyio.to_thread.run_sync(function, supplied)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            raise PromptFunctionError(
                f"prompt {self.name!r}: function {self.content} raised {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(result, str):
            raise PromptFunctionError(
                f"prompt {self.name!r}: function {self.content} returned "
                f"{type(result).__name__} instead of a string"
            )
        return result


def resolve_prompt(spec: PromptSpec) -> CustomPrompt:
    """Settle a definition's kind and, for a function prompt, import its function.

    Raises:
        ConfigError: ``type: function`` without a ``module:function`` reference, or the
            reference cannot be imported, names no attribute, or names something not callable.
    """
    reference = spec.content.strip()
    is_reference = FUNCTION_REFERENCE.fullmatch(reference) is not None
    if spec.type == "text" or (spec.type == "auto" and not is_reference):
        return CustomPrompt(spec.name, spec.description, spec.arguments, spec.content)
    if not is_reference:
        raise ConfigError(
            f"custom prompt {spec.name!r}: type is 'function' but content {_preview(reference)} "
            "is not a 'module:function' reference"
        )
    function = _import_function(spec, reference)
    return CustomPrompt(spec.name, spec.description, spec.arguments, reference, function)


def resolve_prompts(specs: Iterable[PromptSpec]) -> list[CustomPrompt]:
    """Resolve every definition, reporting all broken ones at once.

    Raises:
        ConfigError: One or more definitions cannot be resolved; one line each.
    """
    prompts: list[CustomPrompt] = []
    problems: list[str] = []
    for spec in specs:
        try:
            prompts.append(resolve_prompt(spec))
        except ConfigError as exc:
            problems.append(str(exc))
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError("invalid custom prompts:\n" + "\n".join(f"  {p}" for p in problems))
    return prompts


def find_prompt(prompts: Sequence[CustomPrompt], name: str) -> CustomPrompt:
    """The custom prompt called ``name``.

    Raises:
        InvalidInput: No custom prompt has that name; the message lists those that exist.
    """
    for prompt in prompts:
        if prompt.name == name:
            return prompt
    known = _quoted([prompt.name for prompt in prompts]) if prompts else "none are defined"
    raise InvalidInput(f"unknown prompt {name!r}; custom prompts: {known}")


def _import_function(spec: PromptSpec, reference: str) -> PromptFunction:
    module_name, _, attribute = reference.partition(":")
    where = f"custom prompt {spec.name!r}: {reference!r}"
    # `Note:this` looks like a reference too; tell the user how to mean text.
    hint = " (if the content is meant as text, set type: text)" if spec.type == "auto" else ""
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # user code: SyntaxError, a module raising on import, ...
        path_hint = (
            "; is it installed, or its folder on PYTHONPATH?"
            if isinstance(exc, ModuleNotFoundError)
            else ""
        )
        raise ConfigError(
            f"{where}: cannot import module {module_name!r}: "
            f"{type(exc).__name__}: {exc}{path_hint}{hint}"
        ) from exc
    try:
        function: object = getattr(module, attribute)
    except AttributeError:
        raise ConfigError(
            f"{where}: module {module_name!r} has no attribute {attribute!r}{hint}"
        ) from None
    if not callable(function):
        raise ConfigError(f"{where}: is a {type(function).__name__}, not a function{hint}")
    return function


class DeclaredArgument(Protocol):
    """A prompt argument as declared: ours (``PromptArgumentSpec``) or the SDK's."""

    @property
    def name(self) -> str: ...

    @property
    def required(self) -> bool | None: ...


def argument_problem(
    prompt: str, declared: Sequence[DeclaredArgument], supplied: Mapping[str, object]
) -> str | None:
    """What is wrong with the arguments given to a prompt, naming each missing or unknown
    one and listing what it accepts; ``None`` when nothing is."""
    names = {argument.name for argument in declared}
    unknown = [name for name in supplied if name not in names]
    missing = [a.name for a in declared if a.required and a.name not in supplied]
    problems = []
    if missing:
        problems.append(f"missing required {_plural('argument', missing)} {_quoted(missing)}")
    if unknown:
        problems.append(f"unknown {_plural('argument', unknown)} {_quoted(unknown)}")
    if not problems:
        return None
    accepts = (
        ", ".join(f"{a.name!r}{' (required)' if a.required else ''}" for a in declared)
        or "no arguments"
    )
    return f"prompt {prompt!r}: {'; '.join(problems)}; it accepts {accepts}"


def _plural(word: str, items: Sequence[str]) -> str:
    return word if len(items) == 1 else f"{word}s"


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(repr(name) for name in names)


def _preview(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
