"""Our MCP server in Codex's ``.codex/config.toml``: one marked block of text.

Why a block and no TOML writer: Python reads TOML (``tomllib``) but writes none without a new
dependency, and a round trip through one would re-flow the user's file. The block is
appended after the user's text (with a newline between them) and cut out again on
``--remove``, which gives back their bytes exactly; ``tomllib`` checks both the user's file
and the result, so a block that would clash with their keys (their own
``mcp_servers.ralph-context``, or ``mcp_servers`` as an inline table, which TOML does not
let a later table extend) is refused with the file named instead of written.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from ralph_context.errors import AgentFileInvalid

__all__ = ["BEGIN", "END", "add_block", "remove_block"]

BEGIN = "# >>> ralph-context: written by `ralph-context init --agent codex`; --remove takes it out"
END = "# <<< ralph-context"
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def add_block(path: Path, text: str, name: str, entry: dict[str, Any]) -> str:
    """``text`` with our block for ``mcp_servers.<name>`` (replacing ours if it differs).

    Raises:
        AgentFileInvalid: The user's text is not TOML, already defines the server outside
            our block, or cannot take the block.
    """
    user = remove_block(path, text)
    document = _parse(path, user, "is not valid TOML")
    servers = document.get("mcp_servers", {})
    if isinstance(servers, dict) and name in servers:
        raise AgentFileInvalid(
            path,
            f"already defines mcp_servers.{name} outside the block init writes; remove it "
            "to let init manage it, or keep yours and skip --agent codex",
        )
    block = _block(name, entry)
    edited = user + ("\n" if user else "") + block
    result = _parse(path, edited, "cannot take the mcp_servers table init adds")
    if result.get("mcp_servers", {}).get(name) != entry:
        raise AgentFileInvalid(path, f"mcp_servers.{name} would not read back as written")
    return edited


def remove_block(path: Path, text: str) -> str:
    """``text`` without our block (and the newline added before it)."""
    start = text.find(BEGIN + "\n")
    if start < 0:
        return text
    end = text.find(END + "\n", start)
    if end < 0:
        raise AgentFileInvalid(path, f"has {BEGIN!r} without its closing {END!r} line")
    end += len(END) + 1
    if start > 0 and text[start - 1] == "\n":
        start -= 1
    return text[:start] + text[end:]


def _block(name: str, entry: dict[str, Any]) -> str:
    lines = [BEGIN, f"[mcp_servers.{_key(name)}]"]
    lines += [f"{_key(key)} = {_value(value)}" for key, value in entry.items()]
    return "\n".join([*lines, END]) + "\n"


def _value(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items())
        return "{ " + pairs + " }" if pairs else "{}"
    raise TypeError(f"no TOML form here for {type(value).__name__}")


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _parse(path: Path, text: str, problem: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AgentFileInvalid(path, f"{problem} ({exc})") from None
