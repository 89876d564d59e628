"""Our entries in an agent's JSON settings: hook groups in ``hooks`` (Claude Code's
``.claude/settings.json`` and Codex's ``.codex/hooks.json`` share the shape), and a named
server in ``mcpServers`` (``.mcp.json``).

The hooks shape (Claude Code's settings schema; Codex reads the same)::

    {"hooks": {"<Event>": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "ralph-context hook claude", "timeout": 5}]}]}}

Our handlers are known by their command (``ralph-context hook <client>``, the script named
by any path), so ``--remove`` needs no state file. Adding puts one group of ours at the end
of each event's list, or leaves it when it is already exactly what we would write; removing
takes our handlers out, and with them a group, an event's list or the ``hooks`` object that
only they filled. Each step is one span edit (``jsonedit``), so the user's bytes around it
stay as they were.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralph_context.errors import AgentFileInvalid
from ralph_context.integrations.agents.jsonedit import (
    JsonProblem,
    Node,
    append,
    load,
    remove,
    replace,
)

__all__ = [
    "EMPTY",
    "HookSpec",
    "add_hooks",
    "add_server",
    "is_ours",
    "remove_hooks",
    "remove_server",
]

EMPTY = "{}\n"  # a file init creates starts as this; one that ends as this is deleted
SCRIPT = "ralph-context"


@dataclass(frozen=True)
class HookSpec:
    """One event we hook: its matcher (tool events) and the client's timeout, in seconds."""

    event: str
    timeout: int
    matcher: str | None = None

    def group(self, command: str) -> dict[str, Any]:
        handler = {"type": "command", "command": command, "timeout": self.timeout}
        if self.matcher is None:
            return {"hooks": [handler]}
        return {"matcher": self.matcher, "hooks": [handler]}


def hook_command(script: str, client: str) -> str:
    """The command a client runs: ``<script> hook <client>``, quoted for its shell."""
    return f"{shlex.quote(script)} hook {client}"


def is_ours(handler: object, client: str) -> bool:
    """Whether ``handler`` runs ``ralph-context hook <client>`` (whatever path names it)."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return len(words) >= 3 and Path(words[0]).name == SCRIPT and words[1:3] == ["hook", client]


def add_hooks(path: Path, text: str, specs: tuple[HookSpec, ...], command: str, client: str) -> str:
    """``text`` with our group on each event of ``specs``.

    Raises:
        AgentFileInvalid: The text is not JSON, not an object, or ``hooks`` or one of our
            events' lists has the wrong type.
    """
    for spec in specs:
        text = _add_group(path, text, spec.event, spec.group(command), client)
    return text


def remove_hooks(path: Path, text: str, client: str) -> str:
    """``text`` without our handlers, and without what only they filled.

    Raises:
        AgentFileInvalid: The text is not JSON, not an object, or ``hooks`` is not one.
    """
    while (edited := _remove_one(path, text, client, None)) is not None:
        text = edited
    return text


def add_server(path: Path, text: str, name: str, entry: dict[str, Any]) -> str:
    """``text`` with ``mcpServers.<name>`` set to ``entry`` (replacing ours, if it differs).

    Raises:
        AgentFileInvalid: The text is not a JSON object, or ``mcpServers`` is not one.
    """
    document, root = _root(path, text)
    section = root.member("mcpServers")
    if section is None:
        return append(text, root, {name: entry}, key="mcpServers")
    servers = _object(path, document["mcpServers"], "mcpServers")
    current = section.member(name)
    if current is None:
        return append(text, section, entry, key=name)
    return text if servers[name] == entry else replace(text, current, entry)


def remove_server(path: Path, text: str, name: str) -> str:
    """``text`` without ``mcpServers.<name>`` (and without ``mcpServers`` if it was the
    only server).

    Raises:
        AgentFileInvalid: The text is not a JSON object, or ``mcpServers`` is not one.
    """
    document, root = _root(path, text)
    section = root.member("mcpServers")
    if section is None:
        return text
    _object(path, document["mcpServers"], "mcpServers")
    keys = [child.key for child in section.children]
    if name not in keys:
        return text
    if len(keys) == 1:
        return remove(text, root, _index(root, "mcpServers"))
    return remove(text, section, len(keys) - 1 - keys[::-1].index(name))


def _add_group(path: Path, text: str, event: str, wanted: dict[str, Any], client: str) -> str:
    document, root = _root(path, text)
    hooks_node = root.member("hooks")
    if hooks_node is None:
        return append(text, root, {event: [wanted]}, key="hooks")
    hooks = _object(path, document["hooks"], "hooks")
    event_node = hooks_node.member(event)
    if event_node is None:
        return append(text, hooks_node, [wanted], key=event)
    groups = hooks[event]
    if not isinstance(groups, list):
        raise AgentFileInvalid(
            path, f'"hooks.{event}" must be a list of hook groups, not {_kind(groups)}'
        )
    mine = [group for group in groups if _handlers_of(group, client)]
    if mine == [wanted]:
        return text
    if not mine:
        return append(text, event_node, wanted)
    while (edited := _remove_one(path, text, client, event)) is not None:
        text = edited
    return _add_group(path, text, event, wanted, client)


def _remove_one(path: Path, text: str, client: str, only: str | None) -> str | None:
    """``text`` with one of our handlers (on event ``only``, or any) taken out, or ``None``
    when none is left."""
    document, root = _root(path, text)
    hooks_node = root.member("hooks")
    if hooks_node is None:
        return None
    hooks = _object(path, document["hooks"], "hooks")
    for event_index, event_node in enumerate(hooks_node.children):
        event = event_node.key or ""
        groups = hooks.get(event)
        if hooks_node.member(event) is not event_node:  # a duplicate key JSON.parse drops
            continue
        if (only is not None and event != only) or not isinstance(groups, list):
            continue
        for group_index, group_node in enumerate(event_node.children):
            mine = _handlers_of(groups[group_index], client)
            if not mine:
                continue
            handlers = groups[group_index]["hooks"]
            if len(mine) < len(handlers):  # the user's own handlers share the group
                handlers_node = group_node.member("hooks")
                assert handlers_node is not None
                return remove(text, handlers_node, mine[-1])
            if len(event_node.children) > 1:
                return remove(text, event_node, group_index)
            if len(hooks_node.children) > 1:
                return remove(text, hooks_node, event_index)
            return remove(text, root, _index(root, "hooks"))
    return None


def _handlers_of(group: object, client: str) -> list[int]:
    """The indexes of our handlers in a hook group (none if it is not a group)."""
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return []
    return [i for i, handler in enumerate(group["hooks"]) if is_ours(handler, client)]


def _root(path: Path, text: str) -> tuple[dict[str, Any], Node]:
    try:
        document, root = load(text)
    except JsonProblem as exc:
        raise AgentFileInvalid(path, f"is not valid JSON ({exc})") from None
    if not isinstance(document, dict):
        raise AgentFileInvalid(path, f"must hold a JSON object, not {_kind(document)}")
    return document, root


def _object(path: Path, value: object, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AgentFileInvalid(path, f'"{key}" must be an object, not {_kind(value)}')
    return value


def _index(node: Node, key: str) -> int:
    """The index of ``node``'s last member ``key`` (the one ``JSON.parse`` keeps)."""
    keys = [child.key for child in node.children]
    return len(keys) - 1 - keys[::-1].index(key)


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")
