"""Loading: where the config file is found, how its ``learning.mcp_context`` block is read
and merged over a preset, and a bad value told as one ``ConfigError`` line per key."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ralph_context._logging import ensure_logging, get_logger
from ralph_context.config.section import DEFINITION_ERROR
from ralph_context.errors import ConfigError

__all__ = [
    "CONFIG_ENV",
    "DEPRECATED_PROMPT_KEY",
    "WORKSPACE_ENV",
    "config_key",
    "deep_merge",
    "default_file",
    "describe",
    "find_config",
    "read_block",
    "refuse_prompt_data",
]

CONFIG_ENV = "RALPH_CONTEXT_CONFIG"
WORKSPACE_ENV = "RALPH_WORKSPACE_ROOT"
_DEFAULT_FILES = ("ralph.yaml", "ralph.yml")
_BLOCK = ("learning", "mcp_context")

log = get_logger("ralph_context.config")


def find_config(path: str | Path | None) -> Path | None:
    """The config file: ``path``, else ``$RALPH_CONTEXT_CONFIG``, else the workspace's or the
    working directory's ``ralph.yaml``/``ralph.yml``; ``None`` when there is none.

    Raises:
        ConfigError: ``path`` or ``$RALPH_CONTEXT_CONFIG`` names no file.
    """
    if path is not None:
        explicit = Path(path).expanduser()
        if not explicit.is_file():
            raise ConfigError(f"config file {str(explicit)!r} does not exist")
        return explicit
    from_env = os.environ.get(CONFIG_ENV)
    if from_env:
        env_path = Path(from_env).expanduser()
        if not env_path.is_file():
            raise ConfigError(f"{CONFIG_ENV}={from_env!r} names a file that does not exist")
        return env_path
    # Ralph v2 sets this for the agents it runs, and so for the servers they start: the
    # loop's workspace, whose ralph.yml anchors the project's store.
    workspace = os.environ.get(WORKSPACE_ENV)
    if workspace:
        found = default_file(Path(workspace).expanduser())
        if found is not None:
            return found
    return default_file(Path.cwd())


def default_file(folder: Path) -> Path | None:
    """``folder``'s own ``ralph.yaml`` or ``ralph.yml``, if it has one."""
    for name in _DEFAULT_FILES:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def read_block(source: Path) -> dict[str, Any]:
    """The ``learning.mcp_context`` block of ``source`` (``enabled: false`` when a switch
    above it is off; empty when it is missing).

    Raises:
        ConfigError: The file cannot be read, is not YAML, or a level is not a mapping.
    """
    import yaml  # here: without a file (defaults and env only) no command pays its import

    try:
        document = yaml.safe_load(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {str(source)!r}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {str(source)!r} is not valid YAML: {exc}") from None
    node: Any = document if document is not None else {}
    walked: list[str] = []
    switched_off = False
    for name in _BLOCK:
        if not isinstance(node, dict):
            raise ConfigError(
                f"{'.'.join(walked) or 'the document'} in {str(source)!r} must be a mapping, "
                f"got {type(node).__name__}"
            )
        # The seed has a switch at each level: `learning.enabled` turns all learning off.
        switched_off = switched_off or node.get("enabled") is False
        walked.append(name)
        node = node.get(name, {})
        if node is None:
            node = {}
    if not isinstance(node, dict):
        raise ConfigError(
            f"{'.'.join(_BLOCK)} in {str(source)!r} must be a mapping, got {type(node).__name__}"
        )
    return {**node, "enabled": False} if switched_off else node


DEPRECATED_PROMPT_KEY = "prompt_data"


def refuse_prompt_data(source: Path | None) -> NoReturn:
    """Stop on the old ``prompt_data`` key rather than silently serving no prompts."""
    key, replacement = config_key(DEPRECATED_PROMPT_KEY), config_key("prompts")
    ensure_logging()  # stderr: stdout may belong to the MCP stdio protocol
    log.warning(
        "deprecated_config_key",
        key=key,
        replacement=replacement,
        source=str(source) if source is not None else None,
    )
    where = f" in {str(source)!r}" if source is not None else ""
    raise ConfigError(
        f"{key}{where} is deprecated and no longer read: rename it to {replacement} "
        "(each item keeps its shape: name, description, arguments, type, content)"
    )


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` on top, nested mappings merged key by key."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def config_key(*parts: str | int) -> str:
    """A key's full name in the file: ``config_key("storage", "path")`` is
    ``learning.mcp_context.storage.path``."""
    return ".".join([*_BLOCK, *(str(p) for p in parts)])


def _allowed_keys(root: type[BaseModel], loc: tuple[str | int, ...]) -> str:
    model = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue  # an index into a tuple of models, e.g. prompts.0.arguments.1
        field = model.model_fields.get(part)
        inner = _model_of(field.annotation if field is not None else None)
        if inner is None:
            return ""
        model = inner
    return ", ".join(model.model_fields)


def _model_of(annotation: object) -> type[BaseModel] | None:
    """The model a field holds, directly or as the items of ``tuple[Model, ...]``."""
    if get_origin(annotation) is tuple:
        annotation = next(iter(get_args(annotation)), None)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _env_name(loc: tuple[str | int, ...]) -> str:
    # A list item has no variable of its own: the whole list is set at once, as JSON.
    path: list[str] = []
    for part in loc:
        if isinstance(part, int):
            return "RALPH_CONTEXT_" + "__".join(path) + ", as JSON"
        path.append(part.upper())
    return "RALPH_CONTEXT_" + "__".join(path)


def describe(exc: ValidationError, source: Path | None, root: type[BaseModel]) -> str:
    """``exc`` as one line per bad key: where it is, what was given, what is allowed, and
    the environment variable that sets it (``root``: the settings model that failed)."""
    where = f" in {str(source)!r}" if source is not None else ""
    lines = [f"invalid configuration{where}:"]
    for error in exc.errors():
        loc = tuple(error["loc"])
        key = config_key(*loc) if loc else ".".join(_BLOCK)
        env = _env_name(loc)
        if error["type"] == "extra_forbidden":
            lines.append(
                f"  {key}: unknown key (value {error['input']!r}); "
                f"allowed keys here: {_allowed_keys(root, loc)}"
            )
            continue
        if error["type"] == DEFINITION_ERROR:
            lines.append(f"  {key}: {error['msg']}")
            continue
        message = error["msg"].removeprefix("Value error, ")
        lines.append(
            f"  {key} = {error['input']!r} is invalid: {message} (set in the file or via {env})"
        )
    return "\n".join(lines)
