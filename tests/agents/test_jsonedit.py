"""Span edits on JSON text: for any user file, however it is formatted, adding our entries
keeps the user's data and removing them gives back the exact bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ralph_context.integrations.agents.json_settings import (
    add_hooks,
    add_server,
    remove_hooks,
    remove_server,
)
from ralph_context.integrations.agents.setup import CLAUDE_HOOKS

PATH = Path("settings.json")
COMMAND = "/opt/venv/bin/ralph-context hook claude"

scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
handler = st.fixed_dictionaries(
    {"type": st.just("command"), "command": st.sampled_from(["guard", "say done", "x y"])}
)
group = st.fixed_dictionaries({"hooks": st.lists(handler, min_size=1, max_size=2)})
user_hooks = st.dictionaries(
    st.sampled_from(["Stop", "PreToolUse", "UserPromptSubmit", "Notification"]),
    st.lists(group, min_size=1, max_size=2),
    min_size=1,
    max_size=3,
)
documents = st.dictionaries(
    st.text(max_size=6).filter(lambda k: k not in {"hooks", "mcpServers"}), values, max_size=4
).flatmap(
    lambda base: st.one_of(st.just(base), user_hooks.map(lambda hooks: {**base, "hooks": hooks}))
)
styles = st.sampled_from(
    [
        {"indent": 2},
        {"indent": 4},
        {"indent": "\t"},
        {},
        {"separators": (",", ":")},
        {"indent": 1, "ensure_ascii": False},
    ]
)


@settings(max_examples=150, deadline=None)
@given(document=documents, style=styles, newline=st.sampled_from(["", "\n", "\r\n"]))
def test_hooks_added_then_removed_give_back_the_users_bytes(
    document: dict[str, Any], style: dict[str, Any], newline: str
) -> None:
    text = json.dumps(document, **style) + newline
    added = add_hooks(PATH, text, CLAUDE_HOOKS, COMMAND, "claude")
    loaded = json.loads(added)
    for key, value in document.items():
        if key != "hooks":
            assert loaded[key] == value
    for event, groups in document.get("hooks", {}).items():
        assert loaded["hooks"][event][: len(groups)] == groups
    assert add_hooks(PATH, added, CLAUDE_HOOKS, COMMAND, "claude") == added
    assert remove_hooks(PATH, added, "claude") == text


@settings(max_examples=100, deadline=None)
@given(
    servers=st.dictionaries(st.text(min_size=1, max_size=5), values, max_size=3),
    style=styles,
)
def test_a_server_added_then_removed_gives_back_the_users_bytes(
    servers: dict[str, Any], style: dict[str, Any]
) -> None:
    servers.pop("ralph-context", None)
    document: dict[str, Any] = {"mcpServers": servers} if servers else {"other": 1}
    text = json.dumps(document, **style) + "\n"
    entry = {"command": "ralph-context", "args": ["serve"], "env": {"K": "é"}}
    added = add_server(PATH, text, "ralph-context", entry)
    assert json.loads(added)["mcpServers"]["ralph-context"] == entry
    assert add_server(PATH, added, "ralph-context", entry) == added
    assert remove_server(PATH, added, "ralph-context") == text
