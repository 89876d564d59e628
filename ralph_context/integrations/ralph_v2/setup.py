"""``ralph-context init --ralph v2``: what a project's ``ralph.yml`` needs for memory.

Ralph v2 reads ``ralph.yml`` (no ``ralph.yaml`` fallback). Init merges into it, through a
round-trip YAML editor so the user's comments, key order and other keys stay as they were:

- ``memories``: ``enabled: true`` written out (with the key present, Ralph's default for it
  is *false*), ``inject: auto`` and a ``budget``;
- ``hooks``: ``enabled: true`` and our hook (``ralph-context hook``) on
  ``post.iteration.start`` (it always fires; ``pre.iteration.start`` only with pending
  events), ``post.loop.complete`` and ``post.loop.error``, each ``on_error: warn`` with a
  timeout above the hook's own deadline;
- ``cli.args``: ``--mcp-config <file>``, a file naming our server, since Ralph hands its
  agents no MCP settings itself. That flag is Claude Code's and Ralph appends ``cli.args``
  to any backend's command line, so it is added only for the ``claude`` backend (Ralph's
  default); for another backend the file is written and a note says to hand it over.

A value the user set that contradicts ours (memories or hooks switched off, injection not
``auto``, another ``--mcp-config``) is refused with a message naming it; nothing is written.
Our own hook entries are found by name and replaced; a second run changes nothing.
"""

from __future__ import annotations

import difflib
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from ralph_context.atomic import write_text_atomically
from ralph_context.errors import ConfigError

__all__ = ["HOOK_EVENTS", "HOOK_NAME", "RALPH_YML", "Plan", "plan", "v2_project"]

RALPH_YML = "ralph.yml"
MCP_CONFIG = Path(".ralph") / "ralph-context.mcp.json"
HOOK_NAME = "ralph-context"
HOOK_EVENTS = ("post.iteration.start", "post.loop.complete", "post.loop.error")
DEADLINE_SECONDS = 20
TIMEOUT_SECONDS = 30  # Ralph's default; the hook ends itself at DEADLINE_SECONDS
CLAUDE = "claude"  # Ralph v2's default backend, and the one that takes --mcp-config
DEFAULT_BUDGET = 2_000  # tokens: Ralph cuts the memories block at budget x 4 bytes


@dataclass(frozen=True)
class Plan:
    """The change init would make: ``ralph.yml`` before and after, and the MCP file."""

    path: Path
    before: str
    after: str
    mcp_path: Path
    mcp_text: str
    # What init could not do itself and the user should know (another agent backend).
    notes: tuple[str, ...] = ()

    @property
    def changes(self) -> bool:
        return self.before != self.after or _read(self.mcp_path) != self.mcp_text

    def diff(self) -> str:
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            str(self.path),
            str(self.path),
        )
        text = "".join(lines)
        if _read(self.mcp_path) != self.mcp_text:
            text += f"--- {self.mcp_path}\n+++ {self.mcp_path}\n" + "".join(
                f"+{line}\n" for line in self.mcp_text.splitlines()
            )
        return text

    def apply(self) -> None:
        self.mcp_path.parent.mkdir(parents=True, exist_ok=True)
        if _read(self.mcp_path) != self.mcp_text:
            write_text_atomically(self.mcp_path, self.mcp_text)
        if self.before != self.after:
            write_text_atomically(self.path, self.after)


def v2_project(project: Path) -> bool:
    """Whether ``project`` looks like a Ralph v2 one: a ``.ralph/`` folder, or a
    ``ralph.yml`` with v2's nested sections."""
    if (project / ".ralph").is_dir():
        return True
    try:
        document = _yaml().load(_read(project / RALPH_YML) or "{}")
    except Exception:  # a broken file is for Ralph to report
        return False
    v2_keys = ("hooks", "memories", "event_loop", "cli", "hats", "core", "tasks")
    return isinstance(document, dict) and any(key in document for key in v2_keys)


def plan(project: Path, mcp_entry: dict[str, Any], *, budget: int = DEFAULT_BUDGET) -> Plan:
    """What init changes in ``project`` for a server entry ``mcp_entry`` (see
    ``mcp_json.server_entry``).

    Raises:
        ConfigError: ``ralph.yml`` is not a YAML mapping, or holds a value that contradicts
            ours; the message names the key.
    """
    path = project / RALPH_YML
    before = _read(path)
    yaml = _yaml()
    try:
        document = yaml.load(before) if before.strip() else CommentedMap()
    except Exception as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path} must be a YAML mapping, got {type(document).__name__}")
    mcp_path = (project / MCP_CONFIG).resolve()
    _memories(document, path, budget)
    _hooks(document, path)
    notes = _cli(document, path, mcp_path)
    out = io.StringIO()
    yaml.dump(document, out)
    mcp_text = json.dumps({"mcpServers": {HOOK_NAME: mcp_entry}}, indent=2) + "\n"
    return Plan(path, before, out.getvalue(), mcp_path, mcp_text, notes)


def _memories(document: dict[str, Any], path: Path, budget: int) -> None:
    section = _section(document, "memories", path)
    if section.get("enabled", True) is not True:
        raise ConfigError(
            f"{path}: memories.enabled is {section['enabled']!r}; ralph-context writes its "
            "context into memories.md, which Ralph then does not inject. Set it to true."
        )
    if section.get("inject", "auto") != "auto":
        raise ConfigError(
            f"{path}: memories.inject is {section['inject']!r}; ralph-context needs 'auto' "
            "(Ralph injects memories.md into every prompt)"
        )
    section["enabled"] = True
    section.setdefault("inject", "auto")
    section.setdefault("budget", budget)


def _hooks(document: dict[str, Any], path: Path) -> None:
    section = _section(document, "hooks", path)
    if section.get("enabled", True) is not True:
        raise ConfigError(
            f"{path}: hooks.enabled is {section['enabled']!r}; ralph-context runs as a hook. "
            "Set it to true."
        )
    section["enabled"] = True
    events = _section(section, "events", path, "hooks.events")
    for name in HOOK_EVENTS:
        hooks = events.get(name)
        if hooks is None:
            hooks = events[name] = CommentedSeq()
        if not isinstance(hooks, list):
            raise ConfigError(f"{path}: hooks.events.{name} must be a list of hooks")
        ours = _hook_spec()
        for index, hook in enumerate(hooks):
            if isinstance(hook, dict) and hook.get("name") == HOOK_NAME:
                if dict(hook) != ours:
                    hooks[index] = ours
                break
        else:
            hooks.append(ours)


def _hook_spec() -> CommentedMap:
    command = CommentedSeq(
        [sys.executable, "-m", "ralph_context", "hook", "--deadline", str(DEADLINE_SECONDS)]
    )
    command.fa.set_flow_style()
    spec = CommentedMap()
    spec["name"] = HOOK_NAME
    spec["command"] = command
    spec["on_error"] = "warn"
    spec["timeout_seconds"] = TIMEOUT_SECONDS
    return spec


def _cli(document: dict[str, Any], path: Path, mcp_path: Path) -> tuple[str, ...]:
    section = _section(document, "cli", path)
    backend = section.get("backend", CLAUDE)
    if backend != CLAUDE:
        # Another agent would be handed a flag it does not know on every iteration.
        return (
            f"cli.backend is {backend!r}: --mcp-config is Claude Code's flag, so it was not "
            f"added to cli.args; give {backend} the MCP server in {mcp_path} its own way (the "
            "hook and memories.md work with any backend)",
        )
    args = section.get("args")
    if args is None:
        args = section["args"] = CommentedSeq()
        args.fa.set_flow_style()
    if not isinstance(args, list):
        raise ConfigError(f"{path}: cli.args must be a list of arguments")
    wanted = str(mcp_path)
    for index, arg in enumerate(args):
        if arg == "--mcp-config" and index + 1 < len(args):
            if args[index + 1] == wanted:
                return ()
            raise ConfigError(
                f"{path}: cli.args already passes --mcp-config {args[index + 1]}; add "
                f"ralph-context's server (in {wanted} after a dry run) to that file, or remove "
                "it and run init again"
            )
    args.extend(["--mcp-config", wanted])
    return ()


def _section(
    parent: dict[str, Any], key: str, path: Path, label: str | None = None
) -> dict[str, Any]:
    value = parent.get(key)
    if value is None:
        value = parent[key] = CommentedMap()
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {label or key} must be a mapping, got {value!r}")
    return value


def _yaml() -> YAML:
    yaml = YAML()  # round trip: comments, order and quoting kept
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    return yaml


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
